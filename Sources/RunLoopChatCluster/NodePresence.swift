public import Logging
public import RunLoopKit
import RunLoopNet
public import RunLoopRedis

/// One chat node's membership of the cluster in Redis: its lease, its sessions counted per user
/// against a limit that holds across nodes, and the reaping of nodes that died.
///
/// - **Lease**: the node joins under an epoch (`INCR` of a cluster counter) with a lease key that
///   expires unless refreshed (every ``NodeLeasePolicy/refreshInterval``, by a script that extends it
///   only while it still holds the epoch). When Redis says the lease is gone, or it lapses while Redis
///   is out of reach, the node is ``NodeLeaseState/fenced``: it rejoins under a new epoch and
///   re-registers its sessions in the same script, so a node cut off longer than a lease comes back
///   right. After every new connection it re-registers too (Redis may have restarted empty).
/// - **Sessions**: ``sessionOpened(_:limit:completion:)`` and ``sessionClosed(_:)`` keep the node's
///   count per user in Redis and the cluster-wide total, refusing an open past the limit across the
///   cluster. The node's own counts are the truth Redis mirrors: every script writes absolute values,
///   so one that ran although its answer was lost is corrected by the next.
/// - **Reaping**: about once per ``NodeLeasePolicy/reapInterval`` the node looks for registered nodes
///   whose lease is gone and removes each one's counts with one script guarded by the epoch it was
///   registered under (a node that came back under a new epoch is not reaped; two nodes reaping at
///   once reap once).
///
/// Users who came online or went offline across the cluster are reported through ``onEvent`` by the
/// node whose script made the change: the owner announces them.
///
/// **When Redis is out of reach** (down, cut off, slower than ``NodeLeasePolicy/commandTimeout``) a
/// login is decided on the node's own count alone — admitted if this node holds fewer than the limit —
/// and the user's count is written to Redis once it answers again (by the re-register that follows a
/// reconnect, or the next refresh). Availability over a perfectly enforced limit: a login never waits
/// longer than one command timeout, and the limit may be passed only while Redis cannot tell.
///
/// Lifetime: call ``start()``; end with ``leave(completion:)`` (clean: counts removed at once) or
/// ``close()`` (what a crash looks like: the lease lapses and another node reaps it). Release it only
/// after one of them.
///
/// Threads: confined to its loop's thread (created there, called there); callbacks and completions run
/// there.
public final class NodePresence {
    /// The node's name in the cluster: unique among live nodes (a restarted node may reuse it: its
    /// previous counts are replaced when it joins).
    public let nodeID: String
    /// The loop it runs on.
    public let loop: RunLoop
    /// Its lease period and intervals.
    public let policy: NodeLeasePolicy
    /// Where its keys are.
    public let keys: PresenceKeys
    /// Where it logs: lost leases and reaped nodes at `notice`, Redis out of reach at `warning`.
    public var logger: Logger
    /// Runs on the loop's thread for each lease change and each presence change.
    public var onEvent: ((NodePresenceEvent) -> Void)?

    /// Where the lease is.
    public var leaseState: NodeLeaseState { machine.state }
    /// Whether logins are checked against the cluster now: the lease is held, Redis connected, no
    /// register awaited. While false they are decided on this node's counts (for a health check).
    public var isSharingCounts: Bool { remote == .up }
    /// The sessions open on this node per user, as admitted (users with none are absent).
    public var sessionCounts: [String: Int] { table.counts }

    typealias Admission = (SessionAdmission) -> Void

    let link: ReconnectingLink<RedisConnection>
    private(set) var machine: NodeLeaseMachine
    private var table = SessionTable<Admission>()
    private var remote = SessionTable<Admission>.Remote.down
    var scriptSHAs: [PresenceScript: String] = [:]
    private let modes: [RunLoop.Mode]
    /// Completions and events never run inside a call of the owner: they wait for the loop's next pass.
    private lazy var callbacks = CallbackDeferral(loop: loop, modes: modes, label: "node presence")
    private lazy var timer = DeadlineTimer(loop: loop, modes: modes, label: "node lease") { [weak self] in
        self?.timerFired()
    }

    /// Creates a node that has not joined yet; call ``start()`` next. Must be called on the loop's
    /// thread.
    /// - Parameters:
    ///   - nodeID: the node's name; not empty.
    ///   - modes: where its timer and connection go.
    ///   - redis: where Redis is (command timeouts come from `policy`).
    public init(
        nodeID: String,
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        redis: RedisConfiguration,
        keyspace: ClusterKeyspace = ClusterKeyspace(),
        policy: NodeLeasePolicy = NodeLeasePolicy(),
        logger: Logger = Logger(label: "RunLoopChatCluster.presence")
    ) {
        precondition(loop.isCurrentThread, "NodePresence must be created on its run loop's thread")
        precondition(!nodeID.isEmpty, "a node needs a name")
        self.nodeID = nodeID
        self.loop = loop
        self.modes = modes
        self.policy = policy
        self.keys = PresenceKeys(keyspace: keyspace)
        self.logger = logger
        machine = NodeLeaseMachine(policy: policy)
        // A connection that lasted a lease is a stable one: the next loss starts the waits over.
        link = ReconnectingLink(loop: loop, modes: modes, policy: ReconnectingLinkPolicy(backoff: policy.reconnect, stableTime: policy.ttl)) {
            RedisConnection(loop: loop, modes: modes, configuration: redis, logger: logger)
        }
        link.onConnect = { [weak self] connection in self?.connected(connection) }
        link.onAttemptFailed = { [weak self] failure, wait in
            guard let self else { return }
            // The first failure after a stable connection is the operator's line; the retries that
            // follow it are details.
            let level: Logger.Level = link.failedAttempts <= 1 ? .warning : .debug
            logger.log(
                level: level, "redis out of reach: sessions are decided on this node's counts",
                metadata: ["node": "\(nodeID)", "error": "\(failure)", "retry in": "\(wait.map { "\($0)" } ?? "never")"])
            updateRemote()
        }
    }

    /// Connects to Redis and joins the cluster. Calling it again does nothing.
    public func start() {
        checkThread()
        callbacks.ownerCall {
            link.start()
            perform(machine.start(now: loop.now))
        }
    }

    /// A session of `user` asks to open, at most `limit` sessions per user across the cluster.
    ///
    /// `completion` runs once on the loop's thread, never inside this call: on the loop's next pass
    /// when the node decides alone (this node already holds `limit`, or Redis is out of reach), else
    /// when Redis answered or ``NodeLeasePolicy/commandTimeout`` passed. An admitted session counts
    /// until ``sessionClosed(_:)``. Opens of one user are answered in order.
    public func sessionOpened(_ user: String, limit: Int, completion: @escaping (SessionAdmission) -> Void) {
        checkThread()
        callbacks.ownerCall { run(table.open(user, limit: limit, token: completion, remote: remote)) }
    }

    /// An admitted session of `user` closed.
    public func sessionClosed(_ user: String) {
        checkThread()
        callbacks.ownerCall { run(table.close(user, remote: remote)) }
    }

    /// Leaves the cluster: one script removes the lease, the registry entry and every count of the
    /// node (the users who went offline are reported), then the connection closes and `completion`
    /// runs on the loop's thread — also when Redis cannot be reached (the lease then lapses and
    /// another node reaps it). Logins still waiting are decided on this node's counts.
    ///
    /// The script names the epoch last held: a rejoin still under way when the node leaves may land
    /// under a newer one, which then lapses and is reaped like a crashed node's.
    public func leave(completion: @escaping () -> Void) {
        checkThread()
        callbacks.ownerCall {
            let epoch = machine.lastEpoch
            guard machine.state != .left else { return callbacks.run(completion) }
            perform(machine.leave())
            timer.cancel()
            guard epoch > 0, link.connection != nil else {
                link.close()
                return callbacks.run(completion)
            }
            retire(nodeID, epoch: epoch, mode: "leave") { [weak self] _ in
                self?.link.close()
                completion()
            }
        }
    }

    /// Stops at once without a word to Redis: the lease lapses and another node reaps this one, as
    /// after a crash. Logins still waiting are decided on this node's counts.
    public func close() {
        checkThread()
        callbacks.ownerCall {
            perform(machine.leave())
            timer.cancel()
            link.close()
        }
    }

    // MARK: lease

    func perform(_ actions: [NodeLeaseMachine.Action]) {
        for action in actions {
            switch action {
            case .register(let id, let keeping): register(id: id, keeping: keeping)
            case .refresh(let id, let epoch): refresh(id: id, epoch: epoch)
            case .reap: reap()
            case .report(let state):
                logger.notice("node lease \(state)", metadata: ["node": "\(nodeID)"])
                tell(.lease(state))
            }
        }
        updateRemote()
        if let deadline = machine.nextDeadline { timer.arm(at: deadline) } else { timer.disarm() }
    }

    private func connected(_ connection: RedisConnection) {
        for script in PresenceScript.allCases where scriptSHAs[script] == nil {
            connection.send(["SCRIPT", "LOAD", script.source], timeout: policy.commandTimeout) { [weak self] result in
                if let sha = (try? result.get())?.string { self?.scriptSHAs[script] = sha }
            }
        }
        perform(machine.connectionUp(now: loop.now))
    }

    private func timerFired() { perform(machine.due(now: loop.now)) }

    private func register(id: UInt64, keeping: UInt64) {
        let counts = table.registerSnapshot().sorted { $0.key < $1.key }.flatMap { [$0.key, "\($0.value)"] }
        runScript(
            .register, keys: [keys.epochCounter, keys.registry, keys.totals, keys.lease(nodeID), keys.sessions(nodeID)],
            arguments: [nodeID, "\(keeping)", "\(policy.ttlMilliseconds)"] + counts
        ) { [weak self] result in
            guard let self else { return }
            guard let answer = self.decode(result, RegisterAnswer.init, "register") else {
                if Self.mayHaveRun(result) { self.table.registerAnswerLost() }
                return self.perform(self.machine.registerFailed(id: id, now: self.loop.now))
            }
            self.perform(self.machine.registered(id: id, epoch: answer.epoch, now: self.loop.now))
            self.report(online: answer.online, offline: answer.offline, cause: .registered(epoch: answer.epoch))
        }
    }

    private func refresh(id: UInt64, epoch: UInt64) {
        runScript(.refresh, keys: [keys.lease(nodeID)], arguments: ["\(epoch)", "\(policy.ttlMilliseconds)"]) { [weak self] result in
            guard let self else { return }
            switch self.decode(result, \.integer, "refresh") {
            case 1?:
                self.perform(self.machine.refreshed(id: id, now: self.loop.now))
                // Counts that a failed script left unsure are written now, at the lease's pace.
                self.run(self.table.flush(remote: self.remote))
            case 0?: self.perform(self.machine.refreshRefused(id: id, now: self.loop.now))
            default: self.perform(self.machine.refreshFailed(id: id, now: self.loop.now))
            }
        }
    }

    // MARK: sessions

    private func updateRemote() {
        let now: SessionTable<Admission>.Remote
        if machine.isRegistering {
            now = .registering
        } else if case .held = machine.state, link.connection != nil {
            now = .up
        } else {
            now = .down
        }
        guard now != remote else { return }
        remote = now
        run(table.flush(remote: now))
    }

    private func run(_ actions: [SessionTable<Admission>.Action]) {
        for action in actions {
            switch action {
            case .send(let sync): send(sync)
            case .answer(let completion, let admission): callbacks.run { completion(admission) }
            }
        }
    }

    private func send(_ sync: SessionSync) {
        guard case .held(let epoch) = machine.state else { return run(table.failed(sync.user, remote: remote)) }
        runScript(
            .session, keys: [keys.lease(nodeID), keys.totals, keys.sessions(nodeID)],
            arguments: ["\(epoch)", sync.user, "\(sync.base)", "\(sync.want)", "\(sync.limit ?? -1)", sync.announce ? "1" : "0"]
        ) { [weak self] result in
            guard let self else { return }
            switch self.decode(result, SessionAnswer.init, "session") {
            case .synced(let outcome, let online, let offline)?:
                self.report(online: online, offline: offline, cause: .sessions)
                self.run(self.table.synced(sync.user, outcome, remote: self.remote))
            case .fenced?:
                // The lease first: the user's waiting logins must wait for the rejoin, not go again
                // under the lost epoch.
                self.perform(self.machine.leaseLost(epoch: epoch, now: self.loop.now))
                self.run(self.table.failed(sync.user, remote: self.remote))
            case nil:
                self.logger.notice("a session count went unconfirmed: decided on this node's counts", metadata: ["user": "\(sync.user)"])
                self.run(self.table.failed(sync.user, remote: self.remote))
            }
        }
    }

    // MARK: Redis

    func report(online: [String], offline: [String], cause: PresenceChange.Cause) {
        guard !online.isEmpty || !offline.isEmpty else { return }
        tell(.presence(PresenceChange(online: online, offline: offline, cause: cause)))
    }

    /// Hands `event` to ``onEvent``, never inside a call of the owner.
    func tell(_ event: NodePresenceEvent) {
        callbacks.run { [weak self] in self?.onEvent?(event) }
    }

    /// The answer `read` finds in `result`; `nil` (logged) for a failure or a reply of another shape.
    func decode<Answer>(_ result: Result<RedisReply, RedisError>, _ read: (RedisReply) -> Answer?, _ what: String) -> Answer? {
        switch result {
        case .success(let reply):
            if let answer = read(reply) { return answer }
            logger.error("redis answered \(what) with an unexpected reply", metadata: ["reply": "\(reply)"])
        case .failure(let error):
            logger.debug("redis \(what) failed", metadata: ["node": "\(nodeID)", "error": "\(error)"])
        }
        return nil
    }

    /// Runs `script` (`EVALSHA` once its digest is known, `EVAL` otherwise or when Redis lost it);
    /// without a connection it fails at once.
    func runScript(
        _ script: PresenceScript, keys: [String], arguments: [String], completion: @escaping (Result<RedisReply, RedisError>) -> Void
    ) {
        guard let connection = link.connection else { return completion(.failure(.closed)) }
        let tail = ["\(keys.count)"] + keys + arguments
        guard let sha = scriptSHAs[script] else {
            return connection.send(["EVAL", script.source] + tail, timeout: policy.commandTimeout, completion: completion)
        }
        connection.send(["EVALSHA", sha] + tail, timeout: policy.commandTimeout) { [weak self] result in
            guard case .failure(.server(let message)) = result, message.hasPrefix("NOSCRIPT"), let self, let again = self.link.connection else {
                return completion(result)
            }
            // Redis restarted without its script cache: EVAL runs the script and caches it again.
            again.send(["EVAL", script.source] + tail, timeout: self.policy.commandTimeout, completion: completion)
        }
    }

    /// Whether a failed command may have run in Redis all the same: its answer timed out or the
    /// connection broke after it went out.
    static func mayHaveRun(_ result: Result<RedisReply, RedisError>) -> Bool {
        switch result {
        case .failure(.timedOut), .failure(.connectionLost): return true
        default: return false
        }
    }

    private func checkThread() {
        precondition(loop.isCurrentThread, "NodePresence used off its run loop's thread")
    }
}
