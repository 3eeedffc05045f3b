public import RunLoopChat
import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit
import RunLoopNet

/// Chat clients spread over the nodes, all on the calling thread's loop, logging in the way a
/// well-behaved crowd behind one address does: a node admits at most 4 logins in progress from one
/// address (docs/PROTOCOL.md, section 5, item 6), so each node gets at most `loginsInFlight` clients
/// not yet online, the next opened when one of them is. A login refused for now is retried by
/// `IMClient` after its `retry_after_ms`, and counted.
public final class Crowd {
    /// One client and where it goes.
    public struct Member {
        public let user: String
        public let node: Int
    }

    public let loop = RunLoop.current
    private let ports: [UInt16]
    private let loginsInFlight: Int
    private let password: String
    private let countsHeartbeats: Bool
    private let configure: (inout IMClientConfiguration) -> Void
    public private(set) var members: [Member] = []
    public private(set) var clients: [ChatClient?] = []
    /// Heartbeats each client sent and had answered (a frame link of its own counts them).
    public private(set) var heartbeats: [HeartbeatCounters] = []
    /// Members not opened yet, per node, in order.
    private var waiting: [[Int]]
    /// Members opened and not yet online once, per node.
    private var loggingIn: [Int]
    public private(set) var online = 0
    /// Members that have been online at least once.
    private var wasOnline: [Bool] = []
    /// Members ``giveUpOnPending()`` closed: their ends are not failures.
    private var givenUp: [Bool] = []
    public private(set) var loginRetries = 0
    /// Disconnects other than a login refused for now (none expected while measuring).
    public private(set) var disconnects = 0
    /// PRESENCE notices received by all clients (login snapshots and changes). Counted once per
    /// notice: its exclusivity is unchecked (one loop thread; no access overlaps another), the runtime
    /// check cost more than the count.
    @exclusivity(unchecked) public private(set) var presenceNotices = 0
    /// Why clients failed (the first few).
    public private(set) var failures: [String] = []
    /// Called once per member, the first time it is online.
    public var onFirstOnline: ((Int, ChatClient) -> Void)?
    /// Called for every message a member receives.
    public var onMessage: ((Int, ChatMessage) -> Void)?
    /// Called for every PRESENCE notice a member receives. Set it before ``start()``; read once per
    /// notice, unchecked as ``presenceNotices``.
    @exclusivity(unchecked) public var onPresence: ((Int, PresenceChange) -> Void)?

    /// Members log in to the nodes at 127.0.0.1:`ports` with `password` (registering at the first login);
    /// `configure` adjusts each one's configuration. With `countsHeartbeats`, each client's link counts
    /// its heartbeats into ``heartbeats``.
    public init(
        ports: [UInt16], loginsInFlight: Int, password: String, countsHeartbeats: Bool,
        configure: @escaping (inout IMClientConfiguration) -> Void = { _ in }
    ) {
        self.ports = ports
        self.loginsInFlight = loginsInFlight
        self.password = password
        self.countsHeartbeats = countsHeartbeats
        self.configure = configure
        waiting = Array(repeating: [], count: ports.count)
        loggingIn = Array(repeating: 0, count: ports.count)
    }

    /// Adds a member on `node` (an index into the ports); it is opened when its node's ramp allows.
    @discardableResult
    public func add(user: String, node: Int) -> Int {
        let index = members.count
        members.append(Member(user: user, node: node))
        clients.append(nil)
        heartbeats.append(HeartbeatCounters())
        wasOnline.append(false)
        givenUp.append(false)
        waiting[node].append(index)
        return index
    }

    /// Incoming duplicates the clients' de-duplication dropped (a redelivery the server made).
    public var duplicatesDropped: Int { clients.reduce(0) { $0 + ($1?.connection.duplicatesDropped ?? 0) } }

    /// Opens as many waiting members as each node's ramp allows; the rest follow as others come online.
    public func start() {
        for node in ports.indices { openWhileLoginsAllow(node) }
    }

    /// Opens no one else and closes the members not online yet: what is measured next holds only the
    /// members that made it. Returns how many were given up.
    @discardableResult
    public func giveUpOnPending() -> Int {
        let pending = waiting.reduce(0) { $0 + $1.count } + loggingIn.reduce(0, +)
        waiting = Array(repeating: [], count: ports.count)
        for (index, client) in clients.enumerated() where !wasOnline[index] {
            givenUp[index] = true
            client?.close()
        }
        return pending
    }

    public func note(_ failure: String) {
        if failures.count < 10 { failures.append(failure) }
    }

    private func openWhileLoginsAllow(_ node: Int) {
        while loggingIn[node] < loginsInFlight, !waiting[node].isEmpty {
            open(waiting[node].removeFirst())
        }
    }

    private func open(_ index: Int) {
        let member = members[index]
        loggingIn[member.node] += 1
        var configuration = IMClientConfiguration(user: member.user, password: password)
        configure(&configuration)
        let tcp = TCPFrameLink.connector(host: "127.0.0.1", port: ports[member.node])
        let counters = heartbeats[index]
        let client = IMClient(
            configuration: configuration, loop: loop,
            connector: countsHeartbeats
                ? CountingLink.connector(tcp, counters: counters) : tcp)
        let chat = ChatClient(connection: client)
        chat.onStateChange = { [unowned self] chat, state in
            switch state {
            case .online where !wasOnline[index]:
                wasOnline[index] = true
                online += 1
                loggingIn[member.node] -= 1
                onFirstOnline?(index, chat)
                openWhileLoginsAllow(member.node)
            case .closed(let reason) where !givenUp[index]:
                note("\(member.user) closed: \(reason)")
            default:
                break
            }
        }
        client.onDisconnect = { [unowned self] _, reason in
            guard !givenUp[index] else { return }
            if reason.isLoginRefusedForNow {
                loginRetries += 1
                return
            }
            disconnects += 1
            note("\(member.user) disconnected: \(reason)")
        }
        chat.onPresence = { [unowned self] _, change in
            presenceNotices += 1
            onPresence?(index, change)
        }
        chat.onMessage = { [unowned self] _, message in onMessage?(index, message) }
        clients[index] = chat
        client.start()
    }
}
