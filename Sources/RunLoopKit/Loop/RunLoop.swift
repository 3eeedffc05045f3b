import CRunLoopSupport
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An event loop modelled on CFRunLoop, one per thread, that sleeps in libevent's epoll backend.
///
/// A loop runs one mode at a time. Items — ``RunLoopTimer``, ``RunLoopSource``, ``RunLoopPortSource``
/// (and ``RunLoopSignalSource``), ``RunLoopObserver`` — are added to modes, or to ``Mode/common`` to be
/// in every common mode. ``run(_:timeout:returnAfterSourceHandled:)`` runs one activation of a mode and
/// returns CFRunLoop's result codes; callouts may start nested runs, in the same or another mode.
///
/// Threads: the loop belongs to the thread that first asked for ``current`` (``main`` belongs to the
/// main thread). Only that thread may run it. ``stop()``, ``wakeUp()``, ``perform(inModes:_:)``,
/// adding, removing and testing items, ``addCommonMode(_:)``, ``currentMode`` and ``isWaiting`` are
/// safe from any thread. Callouts always run on the loop's thread with no internal lock held.
///
/// When its thread ends, the loop is torn down: every source gets its `cancel` callout, timers and
/// observers are detached, and the loop's descriptors are closed once the last reference goes.
public final class RunLoop: @unchecked Sendable {
    static let logger = Logger(label: "RunLoopKit")

    let lock = Lock()
    let thread: pthread_t
    let wakePort: WakeUpPort
    /// True for the main thread's loop.
    public let isMain: Bool

    // Guarded by `lock`. Unchecked exclusivity, as the hot fields of ModeStore and RunLoopTimer: the
    // lock serialises every access, and the runtime check (a `swift_beginAccess` call per access) was
    // the largest single cost of adding and removing a timer. Debug builds assert the lock in the
    // `…Locked` functions; the thread-sanitizer run of the suite watches the rest.
    @exclusivity(unchecked) var clockStorage: LoopClock = .system
    @exclusivity(unchecked) var modes: [Mode: ModeStore] = [:]
    @exclusivity(unchecked) var commonModeList: [Mode] = [.default]
    @exclusivity(unchecked) var commonItems = CommonItems()
    @exclusivity(unchecked) var blocks: [PendingBlock] = []
    /// How many of `blocks` name a mode other than the default one alone. At zero, a blocks pass
    /// takes the whole queue in the default mode and nothing elsewhere, without comparing mode names.
    @exclusivity(unchecked) var otherModeBlockCount = 0
    /// The default mode's store, made with the loop and never removed.
    @exclusivity(unchecked) var defaultStore: ModeStore?
    @exclusivity(unchecked) var activations: [Activation] = []
    @exclusivity(unchecked) var currentStore: ModeStore?
    /// The store used last, unretained: stores are never removed from `modes` while the loop lives, so
    /// `modes` keeps it alive; a counted reference cost a retain and a release per timer added.
    @exclusivity(unchecked) var lastStore: Unmanaged<ModeStore>?
    @exclusivity(unchecked) var tornDownLocked = false
    @exclusivity(unchecked) var pendingBackendChanges: [BackendChange] = []
    @exclusivity(unchecked) var calloutObservers: [RunLoopCalloutObserver] = []
    @exclusivity(unchecked) var nextTimerSequence: UInt64 = 0
    @exclusivity(unchecked) var nextPortSequence: UInt64 = 0

    /// Set once the owning thread has ended. pthread handles are reused, so a dead thread's loop must
    /// stop recognising "its" handle: a new thread may get the same one.
    let tornDown = Atomic<Bool>(false)
    /// `blocks.count`, readable without the lock: an iteration that sees 0 skips the blocks pass.
    /// Written only under the lock (``publishBlockCountLocked()``).
    let pendingBlockCount = Atomic<Int>(0)
    let hasCalloutObservers = Atomic<Bool>(false)
    let hasPendingBackendChanges = Atomic<Bool>(false)
    let sleeping = Atomic<Bool>(false)
    /// How many activations have a stop request not yet taken: an iteration that sees 0 (and a mode
    /// still holding items) ends without the lock. Changed under the lock with `stopRequested`.
    let pendingStops = Atomic<Int>(0)
    /// Whether an item another loop holds was added here and logged: once per loop (see
    /// ``warnOfForeignItem(_:)``).
    let loggedForeignItem = Atomic<Bool>(false)

    // Loop thread only (unchecked exclusivity: one thread, no lock needed, no check either).
    /// How many activations are running (1 in the outermost run).
    @exclusivity(unchecked) var depth = 0
    /// Reusable buffers so steady-state iterations do not allocate.
    @exclusivity(unchecked) var timerScratch: [TimerHeap.Entry] = []
    @exclusivity(unchecked) var timerBatchScratch: [RunLoopTimer] = []
    @exclusivity(unchecked) var sourceScratch: [(RunLoopSource, UInt64)] = []
    /// The storage a blocks pass runs its blocks from, swapped with the queue's (`runPendingBlocks`).
    @exclusivity(unchecked) var blockScratch: [PendingBlock] = []
    /// True while the loop's thread runs a batch of blocks: a block queued from the loop's thread now
    /// would wait for the next wake-up (§9.13), which ``performFromLoopThread(inModes:label:_:)`` avoids.
    /// Loop thread only.
    @exclusivity(unchecked) var isRunningBlocks = false
    /// The jobs Swift concurrency hands the loop as an executor (Concurrency/RunLoop+Executor.swift).
    let jobs = ExecutorJobQueue()

    private init(thread: pthread_t, isMain: Bool) {
        self.thread = thread
        self.isMain = isMain
        do {
            wakePort = try WakeUpPort()
            let store = try ModeStore(mode: .default, wakePort: wakePort, loopID: ObjectIdentifier(self))
            modes[.default] = store
            defaultStore = store
        } catch {
            // Only descriptor exhaustion gets here; a loop that cannot wait cannot exist.
            fatalError("RunLoopKit: cannot create a run loop: \(error)")
        }
    }

    /// The calling thread's loop, created on first use.
    ///
    /// Every call on the same thread returns the same object; on the main thread it is ``main``.
    public static var current: RunLoop {
        if let pointer = pthread_getspecific(currentLoopKey) {
            return Unmanaged<RunLoop>.fromOpaque(pointer).takeUnretainedValue()
        }
        let loop = rlk_is_main_thread() ? main : RunLoop(thread: pthread_self(), isMain: false)
        pthread_setspecific(currentLoopKey, Unmanaged.passRetained(loop).toOpaque())
        return loop
    }

    /// The main thread's loop, from any thread.
    public static var main: RunLoop {
        mainLoop.withLock { stored in
            if let stored { return stored }
            let loop = RunLoop(thread: rlk_main_pthread(), isMain: true)
            stored = loop
            return loop
        }
    }

    /// Whether the calling thread owns this loop (and so may run it). False for every thread once the
    /// owning thread has ended.
    public var isCurrentThread: Bool {
        // glibc's pthread_t is the thread's address and its pthread_equal a `==` behind a call: compared
        // here directly, one call fewer on every add and remove of a timer.
        !tornDown.load(ordering: .acquiring) && thread == pthread_self()
    }

    /// True once the loop's thread has ended and the loop was torn down.
    public var isTornDown: Bool { tornDown.load(ordering: .acquiring) }

    /// The name of the libevent backend the loop sleeps in: "epoll" on Linux.
    public var backendMethod: String {
        lock.withLock { modes[.default]!.backend.methodName }
    }

    /// The clock deadlines are measured on.
    public var clock: LoopClock { lock.withLock { clockStorage } }

    /// The current instant on the loop's clock.
    public var now: LoopInstant { clock.now }

    /// Replaces the loop's clock, typically with a ``ManualClock`` in a test.
    ///
    /// Call it on the loop's thread while the loop is not running and holds no timers.
    /// - Throws: ``RunLoopError/notOwningThread``, ``RunLoopError/clockInUse``.
    public func setClock(_ clock: LoopClock) throws(RunLoopError) {
        try checkOwnership()
        let previous: LoopClock = try lock.withLock { () throws(RunLoopError) -> LoopClock in
            guard activations.isEmpty, modes.values.allSatisfy({ $0.timers.isEmpty }) else { throw .clockInUse }
            let previous = clockStorage
            clockStorage = clock
            let kernelTimers = clock.isSystem
            for store in modes.values {
                store.backend.arm(at: .max)
                store.backend.usesKernelTimer = kernelTimers
            }
            return previous
        }
        if case .manual(let old) = previous { old.detach(self) }
        if case .manual(let new) = clock { new.attach(self) }
    }

    /// Every mode the loop has created (by adding an item, performing a block, or ``addCommonMode(_:)``).
    public var allModes: [Mode] { lock.withLock { Array(modes.keys) } }

    /// The modes in the common set (the default mode, plus every ``addCommonMode(_:)``).
    public var commonModes: [Mode] { lock.withLock { commonModeList } }

    /// The mode of the innermost running activation, or `nil` when the loop is not running.
    /// Readable from any thread.
    public var currentMode: Mode? { lock.withLock { currentStore?.mode } }

    /// True while the loop waits for something to happen (also during a zero-timeout poll).
    /// Readable from any thread.
    public var isWaiting: Bool { sleeping.load(ordering: .acquiring) }

    /// Throws unless the calling thread owns this live loop.
    func checkOwnership() throws(RunLoopError) {
        if tornDown.load(ordering: .acquiring) { throw .loopTornDown }
        if pthread_equal(thread, pthread_self()) == 0 { throw .notOwningThread }
    }

    /// The store used last, if it is `mode`'s: matching the same string is a pointer compare, where
    /// finding any other store hashes the name and telling ``Mode/common`` apart compares it in full.
    /// Unretained, as `lastStore`. Caller holds the lock.
    @inline(__always)
    func lastStoreLocked(for mode: Mode) -> Unmanaged<ModeStore>? {
        guard let last = lastStore, last._withUnsafeGuaranteedRef({ $0.mode == mode }) else { return nil }
        return last
    }

    /// The store for `mode`, created if needed. Caller holds the lock.
    func storeLocked(_ mode: Mode) -> ModeStore? {
        withStoreLocked(mode) { $0 }
    }

    /// Runs `body` with the store for `mode`, created if needed; nil if it cannot be created. The store
    /// used last is lent without reference counting. Caller holds the lock.
    @inline(__always)
    func withStoreLocked<Result>(_ mode: Mode, _ body: (ModeStore) -> Result) -> Result? {
        lock.assertHeld()
        // Items mostly go to the mode used last; comparing a short name beats hashing it.
        if let last = lastStoreLocked(for: mode) { return last._withUnsafeGuaranteedRef(body) }
        guard let store = findOrCreateStoreLocked(mode) else { return nil }
        return body(store)
    }

    private func findOrCreateStoreLocked(_ mode: Mode) -> ModeStore? {
        if let store = modes[mode] {
            lastStore = .passUnretained(store)
            return store
        }
        do {
            let store = try ModeStore(mode: mode, wakePort: wakePort, loopID: ObjectIdentifier(self))
            store.backend.usesKernelTimer = clockStorage.isSystem
            modes[mode] = store
            return store
        } catch {
            Self.logger.error("cannot create run-loop mode \(mode): \(error)")
            return nil
        }
    }

    /// Publishes `blocks.count` after a change to `blocks`. A plain store, not a locked add or subtract:
    /// every writer holds the lock, so the stores come in the order of the changes, and each hand-off
    /// spares two locked instructions (one on each side). Caller holds the lock.
    @inline(__always)
    func publishBlockCountLocked() {
        lock.assertHeld()
        pendingBlockCount.store(blocks.count, ordering: .releasing)
    }

    /// Runs at thread exit (thread-specific-data destructor).
    func tearDown() {
        var cancelled: [(RunLoopSourceBase, Mode)] = []
        var timers: [RunLoopTimer] = []
        var observers: [RunLoopObserver] = []
        // Blocks never run are let go after the lock, like the items: a block's closure may own the last
        // reference to something that uses this loop in its deinit.
        var unrunBlocks: [PendingBlock] = []
        let clock: LoopClock = lock.withLock {
            tornDownLocked = true
            for (mode, store) in modes {
                // Off each source's list here, under the lock: once the lock is let go with
                // `tornDownLocked` set, no list names this loop (see SourceLoops), so it may be freed.
                for source in store.sources {
                    source.noteDetached(from: self)
                    cancelled.append((source, mode))
                }
                for registration in store.ports {
                    registration.isActive = false
                    store.backend.unwatch(registration)
                    registration.source.noteDetached(from: self)
                    cancelled.append((registration.source, mode))
                }
                for timer in store.removeAllTimers() {
                    timer.clearMemberships()
                    timers.append(timer)
                }
                observers.append(contentsOf: store.observers)
                store.removeAllSources()
                store.removeAllPorts()
                store.removeAllObservers()
                store.readyPorts.removeAll()
            }
            for change in pendingBackendChanges {
                if case .unwatch(let registration) = change { registration.store.backend.unwatch(registration) }
            }
            pendingBackendChanges.removeAll()
            swap(&unrunBlocks, &blocks)
            otherModeBlockCount = 0
            publishBlockCountLocked()
            for observer in calloutObservers { observer.attachment.release() }
            calloutObservers.removeAll()
            hasCalloutObservers.store(false, ordering: .releasing)
            commonItems = CommonItems()
            return clockStorage
        }
        unrunBlocks.removeAll()
        for timer in timers { timer.attachment.release() }
        for observer in observers { observer.modes.removeAll(); observer.attachment.release() }
        for (source, mode) in cancelled { source.cancelCallout?(self, mode) }
        if case .manual(let manual) = clock { manual.detach(self) }
        // Only now: the callouts above still ran as the owning thread's.
        tornDown.store(true, ordering: .releasing)
    }

    deinit {
        for store in modes.values {
            for registration in store.ports { store.backend.unwatch(registration) }
        }
        // Changes requested during teardown callouts, which no iteration will apply any more.
        for change in pendingBackendChanges {
            if case .unwatch(let registration) = change { registration.store.backend.unwatch(registration) }
        }
    }
}

/// One activation's private state.
struct Activation {
    unowned let store: ModeStore
    var stopRequested = false
}

/// Items added to ``RunLoop/Mode/common``: they join every mode that becomes common later.
struct CommonItems {
    // Keyed by identity: a daemon may have thousands (a timeout per connection), and each
    // invalidation must not scan them.
    var timers: [ObjectIdentifier: RunLoopTimer] = [:]
    var sources: [RunLoopSource] = []
    /// A set of references rather than a dictionary from identity to source: 8 bytes a slot instead of
    /// 16, some 14–16 bytes per connection of a server's crowd (each connection's read source is here).
    var ports: Set<PortByIdentity> = []
    var observers: [RunLoopObserver] = []

    // Each returns whether the item was a common item. Removing an item from `.common` undoes only
    // that (as CFRunLoop): one never added there stays in every mode it was added to, the default
    // mode included, so callers leave the modes alone when these return false.
    // Tables of a crowd's items (a port source per connection of 19,000) give their room back once
    // the crowd has gone, not at the loop's end.
    mutating func remove(_ timer: RunLoopTimer) -> Bool {
        guard timers.removeValue(forKey: ObjectIdentifier(timer)) != nil else { return false }
        timers.shrinkIfSparse()
        return true
    }

    mutating func remove(_ source: RunLoopSource) -> Bool { Self.remove(source, from: &sources) }

    mutating func remove(_ port: RunLoopPortSource) -> Bool {
        guard ports.remove(PortByIdentity(port)) != nil else { return false }
        ports.shrinkIfSparse()
        return true
    }

    mutating func remove(_ observer: RunLoopObserver) -> Bool { Self.remove(observer, from: &observers) }

    private static func remove<Item: AnyObject>(_ item: Item, from items: inout [Item]) -> Bool {
        guard let index = items.firstIndex(where: { $0 === item }) else { return false }
        items.remove(at: index)
        return true
    }
}

/// A port source as a set element: equal only to itself, hashed by its identity.
struct PortByIdentity: Hashable {
    let source: RunLoopPortSource

    init(_ source: RunLoopPortSource) { self.source = source }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.source === rhs.source }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(source)) }
}

/// A block waiting for one of its modes to run.
struct PendingBlock {
    /// nil for the default mode alone (the usual hand-off): no array to retain and release per block.
    let modes: [RunLoop.Mode]?
    let label: String?
    let body: @Sendable () -> Void

    func matches(_ mode: RunLoop.Mode, isCommon: Bool) -> Bool {
        guard let modes else { return mode == .default }
        return modes.contains { $0 == mode || ($0 == .common && isCommon) }
    }
}

/// A libevent change requested off the loop thread, applied by the loop thread before it waits.
enum BackendChange {
    case watch(PortRegistration)
    case unwatch(PortRegistration)
}

extension LoopClock {
    var isSystem: Bool {
        if case .system = self { return true }
        return false
    }
}

private let mainLoop = Mutex<RunLoop?>(nil)

private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { pointer in
        guard let pointer else { return }
        let loop = Unmanaged<RunLoop>.fromOpaque(pointer).takeRetainedValue()
        if !loop.isMain { loop.tearDown() }
    }
    precondition(status == 0, "RunLoopKit: pthread_key_create failed")
    return key
}()
