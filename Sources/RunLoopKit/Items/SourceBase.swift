import Synchronization

/// What custom sources (``RunLoopSource``) and port sources (``RunLoopPortSource``) share: an order,
/// validity, schedule/cancel callouts, and the list of loops they are scheduled on (a source may be
/// scheduled in several modes of several loops).
public class RunLoopSourceBase: @unchecked Sendable {
    /// Lower orders are performed first when several sources are ready in one iteration.
    public let order: Int
    /// A name shown in traces and stall reports.
    public let label: String?
    let scheduleCallout: ((RunLoop, RunLoop.Mode) -> Void)?
    let cancelCallout: ((RunLoop, RunLoop.Mode) -> Void)?
    private let valid = Atomic<Bool>(true)
    private let attachmentLock = Lock()
    private var loops: [WeakLoop] = []

    init(
        order: Int,
        label: String?,
        schedule: ((RunLoop, RunLoop.Mode) -> Void)?,
        cancel: ((RunLoop, RunLoop.Mode) -> Void)?
    ) {
        self.order = order
        self.label = label
        self.scheduleCallout = schedule
        self.cancelCallout = cancel
    }

    /// False once the source was invalidated.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Removes the source from every mode of every loop for good; its `cancel` callout runs once per
    /// mode, on the calling thread, before this returns. Safe from any thread and from callouts.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        willInvalidate()
        let attached = attachmentLock.withLock { () -> [RunLoop] in
            defer { loops.removeAll() }
            return loops.compactMap(\.loop)
        }
        for loop in attached {
            for mode in loop.removeEverywhere(self) {
                cancelCallout?(loop, mode)
            }
        }
        didInvalidate()
    }

    /// Hooks for subclasses: clear a pending signal, release a signal slot, close a descriptor.
    func willInvalidate() {}
    func didInvalidate() {}

    func noteAttached(to loop: RunLoop) {
        attachmentLock.withLock {
            loops.removeAll { $0.loop == nil }
            if !loops.contains(where: { $0.loop === loop }) { loops.append(WeakLoop(loop)) }
        }
    }

    func noteDetached(from loop: RunLoop) {
        attachmentLock.withLock { loops.removeAll { $0.loop == nil || $0.loop === loop } }
    }

    /// The loops the source is scheduled on.
    var attachedLoops: [RunLoop] { attachmentLock.withLock { loops.compactMap(\.loop) } }
}
