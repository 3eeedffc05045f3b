import Logging
import RunLoopKit
import RunLoopNet
#if canImport(Glibc)
import Glibc
#endif

/// Watches whether the network — or one target address — is reachable, as a port source on a
/// ``RunLoop``: the Linux counterpart of SCNetworkReachability.
///
/// A `NETLINK_ROUTE` socket subscribed to link, IPv4/IPv6 address and IPv4/IPv6 route changes is
/// watched by the loop in the owner's modes (``RunLoop/Mode/common`` by default, so a modal run does not
/// hide a network change). The messages themselves are only a trigger: after each burst, the path is
/// judged again by asking the kernel (RTM_GETROUTE and RTM_GETLINK on a second netlink socket, which
/// never sends a packet):
/// - with a ``target``, whether the kernel has a route to it whose outgoing link is up and has a
///   carrier. Loopback targets are always reachable.
/// - without one, whether any default route (IPv4 or IPv6) exists whose link is up and has a carrier.
///
/// ``path`` is evaluated in `init` and ``onChange`` runs only when it changes — always on the loop's
/// thread, from a loop callout, never from inside `init` or ``invalidate()``.
///
/// Bursts: bringing a link down produces several messages (link, addresses, routes) within
/// microseconds to milliseconds; ``debounce`` coalesces them into one evaluation so the owner does not
/// see a reachable/unreachable flicker in between.
///
/// Namespaces: both sockets belong to the network namespace of the thread that creates the object.
///
/// Lifetime: the owner keeps the object alive (the loop holds it weakly). ``invalidate()``, or letting
/// it go, takes the source off the loop and closes the sockets.
///
/// Threads: confined to its loop's thread like ``TCPConnection``: create it there, and use its methods
/// and properties only there (checked with a precondition in `init` and ``invalidate()``).
public final class NetworkReachability {
    /// The loop the netlink source is on.
    public let loop: RunLoop
    /// The modes the source and the debounce timer are in.
    public let modes: [RunLoop.Mode]
    /// The address whose reachability is judged; `nil`: "the network" (any default route).
    public let target: SocketAddress?
    /// Where changes are logged: netlink message kinds and path changes at `debug` (what matters is the
    /// owner's call), a failing netlink socket at `warning`.
    public var logger: Logger

    /// The last judgement: evaluated in `init`, re-evaluated after each burst of netlink messages.
    public private(set) var path: NetworkPath

    /// Runs on the loop's thread when ``path`` changes (not when it is judged the same again), with the
    /// new path. Dropped by ``invalidate()``.
    public var onChange: ((NetworkReachability, NetworkPath) -> Void)?

    /// How long to collect netlink messages after the first one of a burst before judging the path
    /// again: one evaluation per burst, at most this late. `.zero` judges after every read of the
    /// socket. 50 ms by default: short next to a reconnect, long enough for one `ip link set` or a
    /// Wi-Fi hand-over to settle. Applies from the next burst.
    public var debounce: Duration = .milliseconds(50)

    /// False once ``invalidate()`` ran (or the loop's thread ended).
    public private(set) var isValid = true

    /// How many times the path was judged (tests: a burst that changes nothing is still judged).
    private(set) var evaluationCount = 0

    /// The monitor's and the query socket's descriptors while valid (tests check they get closed).
    var descriptors: [Int32] { [source?.fileDescriptor, query?.fd].compactMap { $0 } }

    private var source: RunLoopPortSource?
    private var monitor: NetlinkSocket?
    private var query: NetlinkSocket?
    private var debounceTimer: RunLoopTimer?
    /// How long to wait before asking again when the kernel's answer was lost (ENOBUFS on the query).
    private static let retryDelay = Duration.milliseconds(100)
    /// Datagrams read per readiness before letting the loop do other work; the source stays ready.
    private static let datagramsPerPass = 64

    /// Opens the netlink sockets, judges the path once and puts the source on `loop` in `modes`.
    /// Must be called on the loop's thread; never calls ``onChange``.
    /// - Parameters:
    ///   - target: the address to judge (its port is ignored); `nil` for "any default route".
    ///   - logger: where to log.
    /// - Throws: ``NetError/system(errno:operation:)`` when a netlink socket cannot be opened or bound
    ///   (no netlink in this kernel, seccomp, out of descriptors), or the loop refuses the source.
    public convenience init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        target: SocketAddress? = nil,
        logger: Logger = Logger(label: "RunLoopIM.Reachability")
    ) throws(NetError) {
        try self.init(loop: loop, modes: modes, target: target, logger: logger, netlinkProtocol: Netlink.routeProtocol)
    }

    /// `netlinkProtocol` lets a test make socket() fail.
    init(
        loop: RunLoop, modes: [RunLoop.Mode], target: SocketAddress?, logger: Logger, netlinkProtocol: Int32
    ) throws(NetError) {
        precondition(loop.isCurrentThread, "NetworkReachability must be created on its run loop's thread")
        precondition(!modes.isEmpty, "NetworkReachability needs at least one mode")
        self.loop = loop
        self.modes = modes
        self.target = target
        self.logger = logger
        if let target { self.logger[metadataKey: "target"] = "\(target.ip)" }
        // Subscribe before the first judgement, so that a change in between is not lost: it is queued
        // on the socket and triggers a second judgement on the loop's first pass.
        let monitor = try NetlinkSocket(groups: Netlink.reachabilityGroups, netlinkProtocol: netlinkProtocol)
        let query = try NetlinkSocket(groups: 0, netlinkProtocol: netlinkProtocol)
        self.monitor = monitor
        self.query = query
        path = .unreachable("not evaluated yet")
        switch Self.judge(target: target, query: query) {
        case .success(let judged):
            path = judged
        case .failure(let error):
            path = .unreachable("cannot read the routing table (\(error.description))")
            scheduleEvaluation(after: Self.retryDelay)
        }
        self.logger.debug("reachability starts: \(path)")
        try watch(monitor)
    }

    deinit {
        // No callback from a deinit; the source closes the monitor descriptor once unwatched.
        source?.invalidate()
        debounceTimer?.invalidate()
    }

    /// Takes the source off the loop, cancels a pending evaluation, closes both sockets and drops
    /// ``onChange``. ``path`` keeps its last value. Idempotent; loop thread only.
    public func invalidate() {
        precondition(loop.isCurrentThread, "NetworkReachability used off its run loop's thread")
        shutDown()
    }

    private func shutDown() {
        guard isValid else { return }
        isValid = false
        onChange = nil
        debounceTimer?.invalidate()
        debounceTimer = nil
        // The source's cancel callouts come back here and find isValid false.
        source?.invalidate()
        source = nil
        monitor?.close()
        monitor = nil
        query?.close()
        query = nil
    }

    // MARK: the source

    private func watch(_ monitor: NetlinkSocket) throws(NetError) {
        let source: RunLoopPortSource
        do {
            source = try RunLoopPortSource(
                fileDescriptor: monitor.fd, interest: .readable, label: "reachability netlink \(monitor.fd)",
                // The loop must stop watching before the number may be reused; the source knows when.
                closesDescriptorOnInvalidate: true,
                cancel: { [weak self] _, _ in self?.sourceCancelled() },
                perform: { [weak self] _, _ in self?.readable() })
        } catch {
            shutDown()
            throw .system(errno: EBADF, operation: "watch netlink socket (\(error))")
        }
        monitor.disown()
        self.source = source
        do {
            for mode in modes { try loop.add(source, forMode: mode) }
        } catch {
            shutDown()
            throw .system(errno: EBADF, operation: "watch netlink socket (\(error))")
        }
    }

    /// A mode dropped the source without our asking: the loop's thread is ending.
    private func sourceCancelled() {
        guard isValid else { return }
        logger.debug("reachability stops: the loop's thread ended")
        shutDown()
    }

    /// Reads and discards what is queued; the messages only say "something changed".
    private func readable() {
        guard isValid, let monitor else { return }
        var kinds: [String: Int] = [:]
        var changed = false
        for _ in 0..<Self.datagramsPerPass {
            switch monitor.receive() {
            case .messages(let messages):
                changed = true
                for message in messages { kinds[Netlink.kind(of: message.type), default: 0] += 1 }
                continue
            case .empty:
                break
            case .overrun:
                // The kernel dropped notifications: we cannot know which, but judging the path from
                // scratch is all we ever do anyway.
                logger.debug("netlink receive queue overrun; judging the path again")
                changed = true
                continue
            case .failed(let code):
                logger.warning("netlink recv failed: \(String(cString: strerror(code)))")
            }
            break
        }
        guard changed else { return }
        if !kinds.isEmpty {
            let summary = kinds.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
            logger.debug("netlink: \(summary)")
        }
        if debounce <= .zero {
            evaluate()
        } else {
            scheduleEvaluation(after: debounce)
        }
    }

    /// Arms the one-shot debounce timer unless one is pending: the first message of a burst dates the
    /// evaluation, later ones ride along (so a steady stream cannot postpone it forever).
    private func scheduleEvaluation(after delay: Duration) {
        guard isValid, debounceTimer == nil else { return }
        let timer = RunLoopTimer(after: delay, label: "reachability debounce") { [weak self] _ in
            guard let self else { return }
            self.debounceTimer = nil
            self.evaluate()
        }
        debounceTimer = timer
        for mode in modes { loop.add(timer, forMode: mode) }
    }

    /// Judges the path and tells the owner if it changed.
    private func evaluate() {
        guard isValid, let query else { return }
        evaluationCount += 1
        switch Self.judge(target: target, query: query) {
        case .success(let judged):
            guard judged != path else { return }
            logger.debug("network \(judged)")
            path = judged
            onChange?(self, judged)
        case .failure(let error):
            // The answer was lost (ENOBUFS, EAGAIN): keep the last judgement and ask again shortly.
            logger.warning("cannot read the routing table (\(error.description)); asking again")
            scheduleEvaluation(after: Self.retryDelay)
        }
    }
}

extension NetworkReachability: CustomStringConvertible {
    public var description: String {
        "NetworkReachability(\(target.map { $0.ip } ?? "default route"), \(path))"
    }
}
