public import Logging
import RunLoopChat
import RunLoopChatPostgres
public import RunLoopIM
import RunLoopIMCore
public import RunLoopKit
import RunLoopNet
public import RunLoopRedis

/// Makes one chat node's ``IMServer`` a node of a cluster: nodes share a PostgreSQL store (the truth)
/// and a Redis, through which they tell each other what they committed (``ClusterBus``) and who is
/// online (``NodePresence``).
///
/// Once attached (``init(server:configuration:modes:logger:)``) and started (``start()``):
/// - **Messages**: each message the server stores is published after its commit (again when its
///   sender resends it: the first answer may have been lost after the commit); each message from
///   the bus, and each of the node's own commits, passes through a ``ConversationSequencer`` and goes
///   to this node's sessions of the conversation's members — a direct message's two users, a room's
///   members with a session here (their rooms are loaded from the store when their first session here
///   logs in, and follow JOIN and LEAVE on every node, which the bus orders with the room's messages, in
///   the room's membership order however late another node's change arrives; a JOIN that order cannot
///   place — for a room the user's load did not show — waits for the store to say they are in it).
///   A room message never reaches a non-member. A gap in a conversation is read from the store; when
///   the bus fell behind or a gap stays open, every session here reads its inbox again.
/// - **Sessions and presence**: every login is admitted by ``NodePresence`` against the server's
///   per-user limit across the cluster (``IMServer/Settings/maximumSessionsPerUser``); users coming
///   online or going offline anywhere in the cluster (also when a dead node is reaped) are announced
///   by every node's server as its own users are.
///
/// Faults cost latency, never messages: with Redis down, SENDs are acknowledged after their commit as
/// ever and other nodes' sessions catch up from the store when the bus is back (it reports that it
/// fell behind); logins are decided on this node's counts. With PostgreSQL down, SENDs are answered
/// `internalError` and resent by the clients. Each fault is logged (`warning` for an outage, `debug`
/// for its repeats; the bus, presence and store log theirs).
///
/// Threads: create, start and end it on the server's loop thread; everything runs there.
public final class ChatCluster {
    /// How a node joins its cluster.
    public struct Configuration: Sendable {
        /// The bus: the node's id, where Redis is, the keyspace every node shares, the streams.
        public var bus: ClusterBusConfiguration
        /// The node's lease, its refreshes and reaping.
        public var lease: NodeLeasePolicy
        /// The limits of the per-conversation ordering of what comes from the bus.
        public var sequencer: ConversationSequencer.Configuration
        /// How long the users of a node that stopped gracefully stay online here without a session
        /// anywhere: they reconnect to another node meanwhile (clients back off up to about 30 s), and
        /// are announced offline only if they do not.
        public var stopGrace: Duration = .seconds(30)
        /// At most this many events that failed to publish wait to be sent again. Past it they are all
        /// dropped and one ``ClusterEvent/catchUp`` is owed instead: memory stays bounded, and the other
        /// nodes re-read from the store what the dropped events stood for.
        public var maximumUnpublished = 10_000
        /// How long a room message from the bus waits here for the room's JOINs and LEAVEs that
        /// committed before it (``RoomMessageGate``). Past it the message goes to the room's members
        /// through their inbox reads, and their standings in the room are read again.
        public var roomOrderWait: Duration = .seconds(2)

        /// - Parameters:
        ///   - nodeID: unique among the live nodes (a restarted node may reuse its id).
        ///   - redis: where the shared Redis is.
        ///   - keyspace: the key prefix every node of the cluster uses.
        public init(
            nodeID: String, redis: RedisConfiguration, keyspace: ClusterKeyspace = ClusterKeyspace(),
            lease: NodeLeasePolicy = NodeLeasePolicy(), sequencer: ConversationSequencer.Configuration = ConversationSequencer.Configuration()
        ) {
            bus = ClusterBusConfiguration(nodeID: nodeID, redis: redis, keyspace: keyspace)
            self.lease = lease
            self.sequencer = sequencer
        }
    }

    public let server: IMServer
    public let configuration: Configuration
    /// The bus to the other nodes (for health checks: ``ClusterBus/isPublishing``, ``ClusterBus/isReading``).
    public let bus: ClusterBus
    /// The node's lease and session counts (for health checks: ``NodePresence/leaseState``).
    public let presence: NodePresence
    public var logger: Logger

    private let store: any ClusterChatStore
    /// The last room message this node committed, with the room's membership number at the commit:
    /// the store tells it just before the server learns of the message (``committedHere(_:)``).
    private var lastRoomCommit: (seq: UInt64, membershipSeq: UInt64)?
    private var sequencer: ConversationSequencer
    private var rooms = LocalRooms()
    private var gate: RoomMessageGate
    private var away: PresenceGrace
    /// Admitted sessions per user on this node.
    private var sessions: [String: Int] = [:]
    private var isPublishFailing = false
    /// Publishes sent and not answered yet: a leave closes the bus only once its own offline
    /// announcements are out (each publish is answered within the bus's publish timeout).
    private var publishesInFlight = 0
    /// What runs once ``publishesInFlight`` is zero, set while leaving.
    private var whenPublished: (() -> Void)?
    private var hasLeft = false
    /// Events whose publish failed, oldest first, sent again once the bus publishes: a conversation's
    /// last message must not wait for the next one to be noticed as a gap elsewhere.
    private var unpublished: [ClusterEvent] = []
    /// More events failed than ``Configuration/maximumUnpublished``: the dropped ones may have been the
    /// last of their conversations, which no later message would show as a gap, so the others are told
    /// to catch up from the store before the events kept are sent again.
    private var isCatchUpOwed = false
    private lazy var republishTimer = DeadlineTimer(loop: server.loop, modes: modes, label: "chat cluster republish") { [weak self] in
        self?.republish()
    }
    private lazy var awayTimer = DeadlineTimer(loop: server.loop, modes: modes, label: "chat cluster stop grace") { [weak self] in
        self?.graceEnded()
    }
    /// Asks again the room checks that failed (``LocalRooms``): until one answers, its user gets none
    /// of the room's messages here but by an inbox read.
    private lazy var checkRetryTimer = DeadlineTimer(loop: server.loop, modes: modes, label: "chat cluster room check retry") { [weak self] in
        guard let self else { return }
        for check in self.rooms.checksToAsk() { self.ask(check) }
    }
    private lazy var gateTimer = DeadlineTimer(loop: server.loop, modes: modes, label: "chat cluster room order") { [weak self] in
        self?.roomOrderWaitEnded()
    }
    private lazy var sequencerTimer = DeadlineTimer(loop: server.loop, modes: modes, label: "chat cluster sequencer") { [weak self] in
        guard let self else { return }
        self.perform(self.sequencer.tick(now: self.server.loop.now))
    }
    private let modes: [RunLoop.Mode]

    /// Attaches to `server`, whose store must be a ``ClusterChatStore`` (PostgreSQL's) and whose hooks
    /// it takes over: ``IMServer/sessionAdmission`` and ``IMServer/onAdmittedSessionEnd`` it sets;
    /// ``IMServer/onMessageStored``, ``IMServer/onStoredMessageResent`` and
    /// ``IMServer/applicationHandler`` (set those first) it wraps,
    /// calling what was there. Nothing reaches Redis before ``start()``. Must be called on the
    /// server's loop thread.
    public init(
        server: IMServer, configuration: Configuration, modes: [RunLoop.Mode] = [.common],
        logger: Logger = Logger(label: "RunLoopChatCluster.node")
    ) {
        guard let store = server.store as? any ClusterChatStore else {
            preconditionFailure("a cluster node's store is shared: a ClusterChatStore (PostgresChatStore), not \(type(of: server.store))")
        }
        self.server = server
        self.store = store
        self.configuration = configuration
        self.modes = modes
        self.logger = logger
        sequencer = ConversationSequencer(configuration: configuration.sequencer)
        away = PresenceGrace(grace: configuration.stopGrace)
        gate = RoomMessageGate(maximumWait: configuration.roomOrderWait)
        bus = ClusterBus(loop: server.loop, modes: modes, configuration: configuration.bus, logger: logger)
        presence = NodePresence(
            nodeID: configuration.bus.nodeID, loop: server.loop, modes: modes, redis: configuration.bus.redis,
            keyspace: configuration.bus.keyspace, policy: configuration.lease, logger: logger)
        attach()
    }

    /// Joins the cluster: connects the bus and the presence (both retry by themselves while Redis is
    /// out of reach).
    public func start() {
        presence.start()
        bus.start()
    }

    /// Leaves the cluster cleanly: this node's sessions stop counting at once (users with none left
    /// anywhere go offline everywhere), the bus closes; `completion` runs on the loop's thread. Shut
    /// the server down first, so no session opens meanwhile.
    public func leave(completion: @escaping () -> Void = {}) {
        awayTimer.cancel()
        sequencerTimer.cancel()
        republishTimer.cancel()
        checkRetryTimer.cancel()
        gateTimer.cancel()
        hasLeft = true
        presence.leave { [weak self] in
            guard let self else { return completion() }
            let closeBus = { [weak self] in
                self?.bus.close()
                completion()
            }
            if self.publishesInFlight == 0 { closeBus() } else { self.whenPublished = closeBus }
        }
    }

    /// Stops without a word to Redis, as a crash would: the lease lapses and another node reaps this
    /// one, taking its users offline. For tests and demos.
    public func close() {
        hasLeft = true
        awayTimer.cancel()
        sequencerTimer.cancel()
        republishTimer.cancel()
        checkRetryTimer.cancel()
        gateTimer.cancel()
        presence.close()
        bus.close()
    }

    // MARK: hooks

    private func attach() {
        store.onRoomMessageCommitted = { [weak self] message, membershipSeq in self?.lastRoomCommit = (message.seq, membershipSeq) }
        let stored = server.onMessageStored
        server.onMessageStored = { [weak self] server, message in
            stored?(server, message)
            self?.committedHere(message)
        }
        let resent = server.onStoredMessageResent
        server.onStoredMessageResent = { [weak self] server, message in
            resent?(server, message)
            // Published again: if the first answer was lost, the other nodes never heard of it, and a
            // conversation's last message shows no gap to them. A repeat is a duplicate they drop.
            self?.publish(.message(message))
        }
        if let handler = server.applicationHandler {
            server.applicationHandler = MembershipReporter(inner: handler) { [weak self] user, room, joined, seq in
                self?.membershipChangedHere(user, room: room, joined: joined, seq: seq)
            }
        }
        server.sessionAdmission = { [weak self] user, limit, answer in
            guard let self else { return answer(true) }
            self.presence.sessionOpened(user, limit: limit ?? .max) { [weak self] admission in
                guard case .admitted = admission else { return answer(false) }
                self?.sessionAdmitted(user)
                answer(true)
            }
        }
        server.onAdmittedSessionEnd = { [weak self] user in self?.sessionEnded(user) }
        bus.onReport = { [weak self] report in self?.busReported(report) }
        presence.onEvent = { [weak self] event in
            switch event {
            case .presence(let change): self?.presenceChanged(change)
            case .lease(.held): self?.readClusterPresence()
            case .lease: break
            }
        }
    }

    // MARK: messages

    private func committedHere(_ message: IMMessage) {
        let membershipSeq = lastRoomCommit.flatMap { $0.seq == message.seq ? $0.membershipSeq : nil }
        lastRoomCommit = nil
        publish(.message(message, membershipSeq: membershipSeq))
        // The server delivered it to its sessions already; the sequencer learns its number, and may
        // pass on others' messages that were waiting for it.
        perform(sequencer.receive(message, now: server.loop.now), skipping: message.seq)
    }

    private func busReported(_ report: ClusterBusReport) {
        switch report {
        case .event(.message(let message, let membershipSeq), _):
            if case .room(let room) = message.recipient, let membershipSeq { gate.heard(room, seq: membershipSeq) }
            perform(sequencer.receive(message, now: server.loop.now))
        case .event(.membership(let user, let room, let joined, let seq), _):
            if let check = rooms.membershipChanged(user, room: room, joined: joined, seq: seq) { ask(check) }
            pass(gate.changed(room, seq: seq))
            // The room's members here and the user now see each other's presence.
            if joined { server.presenceAudienceChanged(for: user) }
            (server.applicationHandler as? MembershipReporter)?.membershipChangedElsewhere(user, room: room, joined: joined, seq: seq, on: server)
        case .event(.presence(let user, let online), _):
            if online { away.back(user) }
            server.setClusterPresence(user, online: online)
        case .event(.awayWithNode(let user), _):
            away.away(user, now: server.loop.now)
            armAwayTimer()
        case .event(.catchUp, let origin):
            logger.notice(
                "a node could not publish everything it committed: catching up from the store", metadata: ["node": "\(origin)"])
            catchUp()
        case .fellBehind(let shards):
            logger.notice("the bus fell behind: every session here reads its inbox again", metadata: ["shards": "\(shards)"])
            server.rereadInboxes()
        }
    }

    /// Everything the bus may have left out, read again from where it is kept: inboxes and rooms from
    /// the store, presence from Redis's totals.
    private func catchUp() {
        server.rereadInboxes()
        for user in rooms.reloadAll() {
            store.rooms(of: user) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let joined): self.loaded(user, rooms: joined)
                case .failure: self.rooms.loadFailed(user)  // logged by the store; the rooms known stay
                }
            }
        }
        readClusterPresence()
    }

    private func perform(_ actions: [ConversationSequencer.Action], skipping own: UInt64? = nil) {
        for action in actions {
            switch action {
            case .deliver(let message) where message.seq != own:
                deliverHere(message)
            case .deliver:
                break
            case .fetch(let conversation, let after, let before):
                store.messages(in: conversation, after: after, before: before) { [weak self] result in
                    guard let self else { return }
                    // A failure is the store's to log; the gap's deadline asks again.
                    guard case .success(let messages) = result else { return }
                    self.perform(self.sequencer.fetched(messages, in: conversation, now: self.server.loop.now))
                }
            case .reread(let conversation):
                logger.notice("a gap stayed open: every session here reads its inbox again", metadata: ["conversation": "\(conversation)"])
                server.rereadInboxes()
            }
        }
        if let deadline = sequencer.nextDeadline { sequencerTimer.arm(at: deadline) } else { sequencerTimer.disarm() }
    }

    /// Passes a message on to this node's sessions of its conversation's members.
    private func deliverHere(_ message: IMMessage) {
        server.conversationMayHaveStarted(message)
        switch message.recipient {
        case .user(let name): server.deliverStored(message, to: [name])
        case .room(let room):
            guard !rooms.members(of: room).isEmpty else { return gate.forget(room) }
            if gate.admit(message, room: room, now: server.loop.now) {
                server.deliverStored(message, to: rooms.settledMembers(of: room))
            } else {
                armGateTimer()
            }
        }
    }

    /// Room messages the gate let through now that the changes before them are known: to the room's
    /// members as those changes left them.
    private func pass(_ messages: [IMMessage]) {
        for message in messages {
            guard case .room(let room) = message.recipient else { continue }
            server.deliverStored(message, to: rooms.settledMembers(of: room))
        }
        armGateTimer()
    }

    /// Room messages waited too long for a change before them: their members read them from the store,
    /// and every standing in the room is read again (the change that never came may be a LEAVE).
    private func roomOrderWaitEnded() {
        for expiry in gate.expire(now: server.loop.now) {
            logger.notice(
                "a room's membership change did not come in time: its members here read their inboxes",
                metadata: ["room": "\(expiry.room)", "messages": "\(expiry.messages.count)"])
            server.rereadInboxes(of: rooms.members(of: expiry.room).sorted())
            for check in rooms.recheck(expiry.room) { ask(check) }
        }
        armGateTimer()
    }

    private func armGateTimer() {
        if let deadline = gate.nextDeadline { gateTimer.arm(at: deadline) } else { gateTimer.disarm() }
    }

    /// A user's rooms answered: each read also holds every change of its room up to the room's number.
    private func loaded(_ user: String, rooms joined: [String: RoomJoin]) {
        for check in rooms.loaded(user, rooms: joined.mapValues(\.joinedSeq)) { ask(check) }
        for (room, join) in joined.sorted(by: { $0.key < $1.key }) { pass(gate.read(room, at: join.roomSeq)) }
    }

    // MARK: rooms

    private func membershipChangedHere(_ user: String, room: String, joined: Bool, seq: UInt64) {
        if let check = rooms.membershipChanged(user, room: room, joined: joined, seq: seq) { ask(check) }
        pass(gate.changed(room, seq: seq))
        publish(.membership(user: user, room: room, joined: joined, seq: seq))
    }

    private func sessionAdmitted(_ user: String) {
        sessions[user, default: 0] += 1
        guard rooms.userArrived(user) else { return }
        store.rooms(of: user) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let joined):
                self.loaded(user, rooms: joined)
                // Room messages committed between the login and now came to nobody here.
                self.server.rereadInboxes(of: [user])
            case .failure:
                // Logged by the store. Untracked, the user gets room messages from the inbox reads.
                self.rooms.loadFailed(user)
            }
        }
    }

    /// Reads whether a user is in a room before a JOIN of theirs applies here (``LocalRooms``): one
    /// that came late may be older than their LEAVE.
    private func ask(_ check: RoomCheck) {
        gate.awaitRead(check.room)
        store.standing(of: check.user, inRoom: check.room) { [weak self] result in
            guard let self, !self.hasLeft else { return }
            switch result {
            case .success(let standing):
                // The room's messages that came while the check was out went to its other members only.
                if self.rooms.checked(check, isMember: standing.isMember, seq: standing.seq) { self.server.rereadInboxes(of: [check.user]) }
                self.pass(self.gate.read(check.room, at: standing.seq))
            case .failure:
                // Logged by the store. Until the store answers, the user is not given the room here.
                self.rooms.checkFailed(check)
                self.checkRetryTimer.arm(at: self.server.loop.now + self.configuration.lease.retryInterval)
            }
        }
    }

    private func sessionEnded(_ user: String) {
        presence.sessionClosed(user)
        sessions[user, default: 1] -= 1
        guard sessions[user] == 0 else { return }
        sessions[user] = nil
        rooms.userLeft(user)
    }

    // MARK: presence

    /// Announces a change this node's script made, here and to the others. Users whose last session
    /// ended because this node is stopping (its server shutting down, or leaving) are not gone, only
    /// moving: the others hear they are away and give them the grace to log in elsewhere.
    private func presenceChanged(_ change: PresenceChange) {
        for user in change.online {
            away.back(user)
            server.setClusterPresence(user, online: true)
            publish(.presence(user: user, online: true))
        }
        let isStopping = change.cause == .left || server.isShuttingDown
        for user in change.offline {
            server.setClusterPresence(user, online: false)
            publish(isStopping ? .awayWithNode(user: user) : .presence(user: user, online: false))
        }
    }

    /// Users away with a stopped node who did not come back in time: offline now.
    private func graceEnded() {
        for user in away.expired(now: server.loop.now) { server.setClusterPresence(user, online: false) }
        armAwayTimer()
    }

    private func armAwayTimer() {
        if let deadline = away.nextDeadline { awayTimer.arm(at: deadline) } else { awayTimer.disarm() }
    }

    /// Who is online anywhere, from the cluster's totals: what a node that joined (or came back after
    /// Redis did) announces, since the bus brings only changes from now on.
    private func readClusterPresence() {
        guard let connection = presence.link.connection else { return }
        connection.send(["HGETALL", presence.keys.totals], timeout: configuration.lease.commandTimeout) { [weak self] result in
            guard let self else { return }
            guard case .success(let reply) = result, let flat = reply.array?.compactMap(\.string) else {
                return self.logger.notice(
                    "the cluster's presence could not be read; changes still come from the bus", metadata: ["reply": "\(result)"])
            }
            var online: Set<String> = []
            for index in stride(from: 0, to: flat.count - 1, by: 2) where (Int(flat[index + 1]) ?? 0) > 0 { online.insert(flat[index]) }
            for user in online.sorted() { self.server.setClusterPresence(user, online: true) }
            for user in self.server.clusterOnlineUsers.subtracting(online).sorted() { self.server.setClusterPresence(user, online: false) }
        }
    }

    // MARK: bus

    private func publish(_ event: ClusterEvent) {
        publishesInFlight += 1
        bus.publish(event) { [weak self] result in
            guard let self else { return }
            self.publishesInFlight -= 1
            defer {
                if self.publishesInFlight == 0, let waiting = self.whenPublished {
                    self.whenPublished = nil
                    waiting()
                }
            }
            guard !self.hasLeft else { return }
            switch result {
            case .success:
                if self.isPublishFailing { self.logger.notice("publishing to the bus again") }
                self.isPublishFailing = false
            case .failure(let error):
                // Committed already: the other nodes catch up from the store when their bus reader
                // reports the gap. The first failure of an outage is the operator's line.
                self.logger.log(
                    level: self.isPublishFailing ? .debug : .warning, "bus publish failed; sent again once Redis is back",
                    metadata: ["error": "\(error)"])
                self.isPublishFailing = true
                if self.unpublished.count >= self.configuration.maximumUnpublished {
                    self.unpublished.removeAll()
                    self.isCatchUpOwed = true
                }
                self.unpublished.append(event)
                self.republishTimer.arm(at: self.server.loop.now + self.configuration.lease.retryInterval)
            }
        }
    }

    /// Sends the events that failed again, in order, once the bus publishes; until then waits on.
    private func republish() {
        guard !unpublished.isEmpty || isCatchUpOwed else { return }
        guard bus.isPublishing else { return republishTimer.arm(at: server.loop.now + configuration.lease.retryInterval) }
        let events = (isCatchUpOwed ? [ClusterEvent.catchUp] : []) + unpublished
        unpublished.removeAll()
        isCatchUpOwed = false
        for event in events { publish(event) }
    }
}
