import CRunLoopSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A port-based source (CFRunLoop's version-1 source): a file descriptor — socket, pipe, eventfd,
/// timerfd, tty — that the loop watches for readiness while it runs one of the source's modes.
///
/// Readiness is level-triggered: the source is performed in every iteration in which the descriptor
/// is ready, until the callout consumes what made it ready (reads the data, accepts the connection,
/// drains the eventfd). Readiness that arrives while the loop runs another mode is kept by the kernel
/// and handled when one of the source's modes runs again.
///
/// Unlike CFRunLoop, which services one ready port per iteration, the loop performs every ready port
/// source of an iteration, in ascending `order` (ties in the order they were added); with
/// `returnAfterSourceHandled` it returns after the first and the rest stay ready for the next run.
///
/// Descriptor lifetime: invalidate (or remove) the source before closing its descriptor, or pass
/// `closesDescriptorOnInvalidate: true` and let the source close it once the loop has stopped watching
/// it. Closing a watched descriptor first is the classic epoll mistake: a new descriptor that reuses the
/// number could go unwatched.
///
/// Thread safety: `invalidate()` and `isValid` may be used from any thread; `perform` runs on the loop's
/// thread; adding from another thread takes effect at the loop's next iteration (the loop is woken).
public class RunLoopPortSource: RunLoopSourceBase, @unchecked Sendable {
    /// The watched descriptor.
    public let fileDescriptor: Int32
    /// The readiness the source waits for.
    public let interest: PortEvents
    // Declaration order is layout order: the two flags fill the word the descriptor starts.
    let closesDescriptor: Bool
    private let closed = Atomic<Bool>(false)
    let performCallout: (RunLoopPortSource, PortEvents) -> Void
    /// Kept here rather than in the base's callout box: a connection's sources have this callout (to
    /// learn that their loop's thread ended), and the box cost each of them a 64-byte heap block.
    private let cancel: ((RunLoop, RunLoop.Mode) -> Void)?
    /// Registrations whose libevent event exists; the descriptor may be closed only at zero.
    let liveEvents = Atomic<Int>(0)
    /// What the descriptor referred to when the source was made (device, inode), to recognise a source
    /// whose descriptor was closed behind its back and whose number now names another file. Not an
    /// optional: its tag byte took the object past a 144-byte heap chunk.
    let identity: DescriptorIdentity

    /// - Parameters:
    ///   - fileDescriptor: an open descriptor epoll can watch (not a regular file or directory).
    ///   - interest: `.readable`, `.writable` or both.
    ///   - order: lower orders are performed first among ports ready in the same iteration.
    ///   - closesDescriptorOnInvalidate: close the descriptor once the source is invalidated and the
    ///     loop no longer watches it.
    ///   - perform: runs on the loop's thread with the readiness observed.
    /// - Throws: ``RunLoopError/invalidDescriptor(_:)`` or ``RunLoopError/unsupportedDescriptor(_:)``.
    public init(
        fileDescriptor: Int32,
        interest: PortEvents = .readable,
        order: Int = 0,
        label: String? = nil,
        closesDescriptorOnInvalidate: Bool = false,
        schedule: ((RunLoop, RunLoop.Mode) -> Void)? = nil,
        cancel: ((RunLoop, RunLoop.Mode) -> Void)? = nil,
        perform: @escaping (RunLoopPortSource, PortEvents) -> Void
    ) throws(RunLoopError) {
        try Self.checkPollable(fileDescriptor)
        self.fileDescriptor = fileDescriptor
        self.identity = DescriptorIdentity(of: fileDescriptor)
        self.interest = interest.isEmpty ? .readable : interest
        self.closesDescriptor = closesDescriptorOnInvalidate
        self.performCallout = perform
        self.cancel = cancel
        super.init(order: order, label: label, schedule: schedule, cancel: nil)
    }

    override var cancelCallout: ((RunLoop, RunLoop.Mode) -> Void)? { cancel }

    static func checkPollable(_ fd: Int32) throws(RunLoopError) {
        switch rlk_check_pollable_fd(fd) {
        case 0: return
        case EPERM: throw .unsupportedDescriptor(fd)
        default: throw .invalidDescriptor(fd)
        }
    }

    override func didInvalidate() {
        if liveEvents.load(ordering: .acquiring) == 0 { closeDescriptorIfOwned() }
    }

    /// Called by the loop thread after freeing one libevent event for this source.
    func eventReleased() {
        if liveEvents.subtract(1, ordering: .acquiringAndReleasing).newValue == 0, !isValid {
            closeDescriptorIfOwned()
        }
    }

    private func closeDescriptorIfOwned() {
        guard closesDescriptor, !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        close(fileDescriptor)
    }

    /// Subclasses (signal sources) turn readiness into their own callout.
    func perform(_ events: PortEvents) {
        performCallout(self, events)
    }
}

/// The open file a descriptor number refers to, or ``unknown`` for a number that names none (`fstat`
/// failed): two unknowns are equal, as two failed look-ups were when this was an optional.
struct DescriptorIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    /// No file has this device and inode: both are all ones.
    static let unknown = DescriptorIdentity(device: .max, inode: .max)

    init(of fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            self = .unknown
            return
        }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    private init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// One port source in one mode: the libevent event and the readiness collected for it.
final class PortRegistration {
    let source: RunLoopPortSource
    /// Unretained: a registration is held only by its store's table and the loop's queues (ready
    /// ports, pending backend changes), and a store lives as long as its loop, so the store is always
    /// there when one is used; a checked reference cost a strong retain and release on every readiness
    /// callback.
    var store: ModeStore { storeReference.takeUnretainedValue() }
    /// An `Unmanaged` rather than `unowned(unsafe)`: borrowing from it (`noteReady`) takes no retain,
    /// where a mutation through an `unowned(unsafe)` reference still retained and released the store.
    private let storeReference: Unmanaged<ModeStore>
    /// Position in the mode, for a stable dispatch order among equal `order`s.
    let sequence: UInt64
    /// False once removed from the mode. Written under the loop lock; read by the loop thread before
    /// each callout without it (an atomic load instead of a lock pair per port perform).
    private let active = Atomic<Bool>(true)
    var isActive: Bool {
        get { active.load(ordering: .acquiring) }
        set { active.store(newValue, ordering: .releasing) }
    }
    // Loop thread only:
    var isQueued = false
    var pendingEvents: Int16 = 0
    var event: OpaquePointer?
    /// The registration behind this one in its mode's `ReadyPortQueue` (loop thread only).
    var nextReady: Unmanaged<PortRegistration>?
    /// The next registration in the mode's `PortTable` bucket (guarded by the loop lock).
    var nextInBucket: PortRegistration?

    init(source: RunLoopPortSource, store: ModeStore, sequence: UInt64) {
        self.source = source
        self.storeReference = Unmanaged.passUnretained(store)
        self.sequence = sequence
    }

    /// Adds readiness seen by the mode's dispatch and queues the registration once for performing.
    /// Loop thread only.
    @inline(__always)
    func noteReady(_ events: Int16) {
        pendingEvents |= events
        storeReference._withUnsafeGuaranteedRef { store in
            store.backend.noteReadyPort()
            if !isQueued {
                isQueued = true
                store.readyPorts.append(self)
            }
        }
    }
}
