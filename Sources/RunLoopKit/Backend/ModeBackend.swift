import CLibevent
import CRunLoopSupport

#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// One mode's wait set: a libevent `event_base` on epoll watching the loop's wake-up eventfd, the mode's
/// timerfd and the mode's port sources. The only place RunLoopKit calls libevent.
///
/// A base per mode keeps readiness per mode: a nested run in another mode neither sees nor consumes this
/// mode's readiness, which the kernel keeps (level-triggered) until this mode runs again.
///
/// The timerfd is armed at the earliest instant the mode must wake (next timer, or the end of the run),
/// and only when that instant changes, so precise timers cost no syscalls on passes where nothing moved.
/// libevent's own timers are not used: they read a coarse clock, and its precise-timer flag re-arms a
/// timerfd on every pass.
///
/// libevent allocates from RunLoopKit's own pool (`rlk_event_pool_install`, event_pool.c), not from
/// malloc's heap.
///
/// Every member is used on the loop's thread only, except `arm(at:)` (a timerfd is safe from any thread;
/// callers hold the loop lock so the recorded arming stays consistent).
final class ModeBackend {
    let base: OpaquePointer
    let timerPort: Int32
    private let wakePort: WakeUpPort
    private var wakeEvent: OpaquePointer?
    private var timerEvent: OpaquePointer?
    /// The instant the timerfd is armed at; `.max` when disarmed. Written under the loop lock; atomic
    /// so that the loop's thread can see "disarmed" without it (`RunLoop.wait`'s untimed wait).
    private let armedInstant = Atomic<UInt64>(.max)
    var armedAt: UInt64 { armedInstant.load(ordering: .relaxed) }
    /// False while the loop runs on a manual clock, whose instants mean nothing to the kernel.
    var usesKernelTimer = true
    /// Set by callbacks during one dispatch.
    private(set) var sawWakeUp = false
    private(set) var sawTimer = false
    private(set) var sawPort = false
    /// How many times the loop asked the kernel (tests check which waits need no syscall).
    private(set) var dispatchCount = 0
    /// Where port callbacks queue readiness.
    unowned(unsafe) var store: ModeStore!

    init(wakePort: WakeUpPort) throws(RunLoopError) {
        // Before the first base: libevent's slot per descriptor number, kept until the base goes, is
        // made between a server's connection blocks and would pin malloc's pages after they leave.
        rlk_event_pool_install()
        guard let config = event_config_new() else { throw .resourceUnavailable("event_config") }
        defer { event_config_free(config) }
        // The loop needs epoll: edge cases (per-mode readiness, timerfds) are reasoned about for it.
        event_config_avoid_method(config, "select")
        event_config_avoid_method(config, "poll")
        // Only the loop's thread touches the base, so libevent's own locking is pure overhead.
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_NOLOCK.rawValue))
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_IGNORE_ENV.rawValue))
        // libevent's time cache serves only libevent's own timers, and the loop uses none (see above): with
        // the cache, every dispatch read the clock after epoll returned, ≈ 76 instructions per dispatch
        // (a sixth of an fd round trip's libevent share) for a value nothing reads.
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_NO_CACHE_TIME.rawValue))
        guard let base = event_base_new_with_config(config) else {
            throw .resourceUnavailable("libevent epoll base")
        }
        let timerPort = rlk_timerfd_create()
        guard timerPort >= 0 else {
            event_base_free(base)
            throw .resourceUnavailable("timerfd (errno \(errno))")
        }
        self.base = base
        self.timerPort = timerPort
        self.wakePort = wakePort
        let context = Unmanaged.passUnretained(self).toOpaque()
        wakeEvent = event_new(
            base, wakePort.fileDescriptor, Int16(EV_READ | EV_PERSIST),
            { _, _, context in
                // Borrowed, as a port's registration below: the events go before their backend (deinit).
                // Taken unretained, this callback was a retain and release of the backend per wake-up.
                Unmanaged<ModeBackend>.fromOpaque(context!)._withUnsafeGuaranteedRef { backend in
                    backend.wakePort.drain()
                    backend.sawWakeUp = true
                }
            }, context)
        timerEvent = event_new(
            base, timerPort, Int16(EV_READ | EV_PERSIST),
            { fd, _, context in
                _ = rlk_timerfd_drain(fd)
                Unmanaged<ModeBackend>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.sawTimer = true }
            }, context)
        guard let wakeEvent, let timerEvent, event_add(wakeEvent, nil) == 0, event_add(timerEvent, nil) == 0 else {
            throw .resourceUnavailable("libevent events for the wake-up and timer ports")
        }
    }

    deinit {
        if let wakeEvent { event_free(wakeEvent) }
        if let timerEvent { event_free(timerEvent) }
        event_base_free(base)
        close(timerPort)
    }

    /// The backend libevent chose ("epoll" on Linux).
    var methodName: String { String(cString: event_base_get_method(base)) }

    /// Arms the mode's timerfd at `deadline` (`.max` disarms) unless it is armed there already.
    /// Caller holds the loop lock.
    func arm(at deadline: UInt64) {
        guard usesKernelTimer, deadline != armedAt else { return }
        armedInstant.store(deadline, ordering: .relaxed)
        _ = rlk_timerfd_arm(timerPort, deadline == .max ? 0 : max(deadline, 1))
    }

    /// Waits once: with `blocking`, until something is ready; otherwise just collects what is ready.
    /// Returns whether anything (wake-up, timer, port) was seen.
    /// Inlined into the loop's wait: a call of its own was a tenth of the loop's share of an fd round trip.
    @discardableResult
    @inline(__always)
    func dispatch(blocking: Bool) -> Bool {
        sawWakeUp = false
        sawTimer = false
        sawPort = false
        dispatchCount &+= 1
        event_base_loop(base, blocking ? EVLOOP_ONCE : (EVLOOP_ONCE | EVLOOP_NONBLOCK))
        return sawWakeUp || sawTimer || sawPort
    }

    /// Records a port's readiness seen by this dispatch (its libevent callback).
    @inline(__always)
    func noteReadyPort() { sawPort = true }

    /// Starts watching a port source's descriptor in this mode. Returns 0 or an errno value.
    func watch(_ registration: PortRegistration) -> Int32 {
        let context = Unmanaged.passUnretained(registration).toOpaque()
        let flags = Int16(EV_PERSIST) | registration.source.interest.rawValue
        guard
            let event = event_new(
                base, registration.source.fileDescriptor, flags,
                { _, what, context in
                    // Borrowed, not retained: the event exists only while its registration does
                    // (`unwatch` frees it first). Only the queue's own reference is counted: with a
                    // retained registration, store and backend, this callback was three retains and
                    // two releases per readiness.
                    Unmanaged<PortRegistration>.fromOpaque(context!)._withUnsafeGuaranteedRef { registration in
                        registration.noteReady(what & Int16(EV_READ | EV_WRITE))
                    }
                }, context)
        else { return ENOMEM }
        errno = 0
        guard event_add(event, nil) == 0 else {
            let failure = errno == 0 ? EINVAL : errno
            event_free(event)
            return failure
        }
        registration.event = event
        registration.source.liveEvents.add(1, ordering: .acquiringAndReleasing)
        return 0
    }

    /// Stops watching; frees the event. Safe to call for a registration never watched.
    func unwatch(_ registration: PortRegistration) {
        guard let event = registration.event else { return }
        registration.event = nil
        event_del(event)
        event_free(event)
        registration.source.eventReleased()
    }
}
