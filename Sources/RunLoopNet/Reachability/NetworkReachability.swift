public import Logging
public import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

/// Watches whether the network — or one target address, or one host name — is reachable, as a port
/// source on a ``RunLoop``: the Linux counterpart of SCNetworkReachability.
///
/// A `NETLINK_ROUTE` socket subscribed to link, IPv4/IPv6 address and IPv4/IPv6 route changes is
/// watched by the loop in the owner's modes (``RunLoop/Mode/common`` by default, so a modal run does not
/// hide a network change). The messages themselves are only a trigger: after each burst, the path is
/// judged again by asking the kernel (RTM_GETROUTE and RTM_GETLINK on a second netlink socket, which
/// never sends a packet):
/// - with a ``target``, whether the kernel has a route to it whose outgoing link is up and has a
///   carrier. Loopback targets are always reachable.
/// - with a ``host`` name, the same for each address the name resolved to: reachable when any of
///   them is. The name is looked up off the loop (see ``init(loop:modes:host:resolver:logger:)``).
/// - with neither, whether any default route (IPv4 or IPv6) exists whose link is up and has a carrier.
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
    /// The address whose reachability is judged; `nil` for a ``host`` name or "the network" (any
    /// default route).
    public let target: SocketAddress?
    /// The host name whose addresses are judged, from ``init(loop:modes:host:resolver:logger:)``;
    /// `nil` when following an address (an IP literal given as the host included) or the network.
    public let host: String?
    /// The addresses ``host`` resolved to at the last successful lookup (port 0), in the resolver's
    /// order; ``path`` judges these. Empty until a lookup has succeeded, and always for an address or
    /// the network. A failed lookup keeps the previous ones.
    public internal(set) var resolvedAddresses: [SocketAddress] = []
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

    /// After a failed lookup of ``host``, how long until the next one; the delay doubles with each
    /// further failure up to ``maximumLookupRetryDelay``, and a success resets it. Also the least time
    /// between two lookups, however often the network changes. 1 s by default.
    public var lookupRetryDelay: Duration {
        get { lookupSchedule.retryDelay }
        set { lookupSchedule.retryDelay = max(.zero, newValue) }
    }

    /// The bound on the delay between lookups of ``host`` while they keep failing. 30 s by default.
    public var maximumLookupRetryDelay: Duration {
        get { lookupSchedule.maximumRetryDelay }
        set { lookupSchedule.maximumRetryDelay = max(.zero, newValue) }
    }

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
    /// Host mode only: answers the lookups; their timing; the timer for the next one.
    let resolver: (any HostResolver)?
    var lookupSchedule = HostLookupSchedule(retryDelay: .seconds(1), maximumRetryDelay: .seconds(30))
    var lookupTimer: (timer: RunLoopTimer, due: LoopInstant)?
    /// Tells a lookup's answer from one that an ``invalidate()`` made moot.
    var lookupGeneration = 0
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
        logger: Logger = Logger(label: "RunLoopNet.Reachability")
    ) throws(NetError) {
        try self.init(
            loop: loop, modes: modes, target: target, host: nil, resolver: nil, logger: logger,
            netlinkProtocol: Netlink.routeProtocol)
    }

    /// Follows the route to `host`: an IP literal is judged like ``init(loop:modes:target:logger:)``;
    /// a name is looked up with `resolver`, off the loop's thread (``SystemResolver`` runs
    /// `getaddrinfo` on a worker thread, in this thread's network namespace), and ``path`` judges the
    /// routes to the addresses it resolved to: reachable when any of them has a working route.
    ///
    /// Lookups (see ``resolvedAddresses``):
    /// - Until the first one succeeds, ``path`` is ``NetworkPath/reachable``: nothing is known against
    ///   trying, and a connection attempt looks the name up anyway (its failure says more than
    ///   "network down" would).
    /// - The name is looked up again after every settled change of links or routes, the previous
    ///   addresses being judged meanwhile; after a failed lookup, again after ``lookupRetryDelay``,
    ///   doubling up to ``maximumLookupRetryDelay``. A failed lookup keeps the previous addresses.
    /// - An answer changes ``path`` (and so calls ``onChange``) from a loop callout, never from `init`.
    ///
    /// Must be called on the loop's thread; never calls ``onChange``.
    /// - Parameters:
    ///   - host: an IP literal or a host name (the port plays no part: routes do not depend on it).
    ///   - resolver: answers the lookups; it must not block the calling thread.
    ///   - logger: where to log (lookups and their failures at `debug`).
    /// - Throws: as ``init(loop:modes:target:logger:)``.
    public convenience init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        host: String,
        resolver: any HostResolver = SystemResolver(),
        logger: Logger = Logger(label: "RunLoopNet.Reachability")
    ) throws(NetError) {
        if let address = SocketAddress(ip: host, port: 0) {
            try self.init(
                loop: loop, modes: modes, target: address, host: nil, resolver: nil, logger: logger,
                netlinkProtocol: Netlink.routeProtocol)
        } else {
            try self.init(
                loop: loop, modes: modes, target: nil, host: host, resolver: resolver, logger: logger,
                netlinkProtocol: Netlink.routeProtocol)
        }
    }

    /// `netlinkProtocol` lets a test make socket() fail.
    init(
        loop: RunLoop, modes: [RunLoop.Mode], target: SocketAddress?, host: String? = nil,
        resolver: (any HostResolver)? = nil, logger: Logger, netlinkProtocol: Int32
    ) throws(NetError) {
        precondition(loop.isCurrentThread, "NetworkReachability must be created on its run loop's thread")
        precondition(!modes.isEmpty, "NetworkReachability needs at least one mode")
        precondition((host == nil) == (resolver == nil), "a host name needs a resolver")
        self.loop = loop
        self.modes = modes
        self.target = target
        self.host = host
        self.resolver = resolver
        self.logger = logger
        if let target { self.logger[metadataKey: "target"] = "\(target.ip)" }
        if let host { self.logger[metadataKey: "target"] = "\(host)" }
        // Subscribe before the first judgement, so that a change in between is not lost: it is queued
        // on the socket and triggers a second judgement on the loop's first pass.
        let monitor = try NetlinkSocket(groups: Netlink.reachabilityGroups, netlinkProtocol: netlinkProtocol)
        let query = try NetlinkSocket(groups: 0, netlinkProtocol: netlinkProtocol)
        self.monitor = monitor
        self.query = query
        path = .unreachable("not evaluated yet")
        switch judge(query) {
        case .success(let judged):
            path = judged
        case .failure(let error):
            path = .unreachable("cannot read the routing table (\(error.description))")
            scheduleEvaluation(after: Self.retryDelay)
        }
        self.logger.debug("reachability starts: \(path)")
        try watch(monitor)
        if host != nil { networkSettled() }
    }

    deinit {
        // No callback from a deinit; the source closes the monitor descriptor once unwatched.
        source?.invalidate()
        debounceTimer?.invalidate()
        lookupTimer?.timer.invalidate()
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
        lookupTimer?.timer.invalidate()
        lookupTimer = nil
        lookupGeneration += 1
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
            networkSettled()
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
            self.networkSettled()
        }
        debounceTimer = timer
        for mode in modes { loop.add(timer, forMode: mode) }
    }

    /// Judges the path and tells the owner if it changed.
    func evaluate() {
        guard isValid, let query else { return }
        evaluationCount += 1
        switch judge(query) {
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

    private func judge(_ table: some RouteTable) -> Result<NetworkPath, NetlinkSocket.QueryError> {
        if let host { return Self.judge(host: host, addresses: resolvedAddresses, table: table) }
        return Self.judge(target: target, table: table)
    }
}

extension NetworkReachability: CustomStringConvertible {
    public var description: String {
        "NetworkReachability(\(host ?? target.map { $0.ip } ?? "default route"), \(path))"
    }
}
