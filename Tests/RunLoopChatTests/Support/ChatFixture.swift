import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// A chat server (``IMServer`` with ``ChatService`` over the memory store) on a manual-clock loop and
/// chat clients logged in to it through in-memory links (a ``MemoryIMBench``). The one place that
/// knows how a client reaches the server.
final class ChatFixture {
    let bench: MemoryIMBench
    var loop: RunLoop { bench.loop }
    var server: IMServer { bench.server }
    private var clients: [ChatClient] = []

    /// - Parameter application: what answers rooms and history requests; a test's own stands in for
    ///   a server that misbehaves.
    /// - Parameter store: the server's store (default: the memory store, answering at once).
    init(
        loop: RunLoop, clock: ManualClock, settings: IMServer.Settings = IMServer.Settings(),
        application: any IMApplicationHandler = ChatService(), store: any ChatStore = InMemoryIMStore()
    ) {
        bench = MemoryIMBench(loop: loop, clock: clock, settings: settings, store: store)
        bench.server.applicationHandler = application
    }

    /// A started client of `user`, with its reports recorded; not waited for. Without
    /// `readsPresenceBatches` its logins do not ask for PRESENCE_BATCH, as a client older than it.
    func client(_ user: String, readsPresenceBatches: Bool = true) -> (ChatClient, ChatRecorder) {
        var configuration = IMClientConfiguration(user: user, password: "pw")
        configuration.heartbeat = .fixed(.seconds(5))
        configuration.answerTimeout = .seconds(5)
        configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(400))
        let connection = bench.client(configuration, start: false)
        let chat = ChatClient(connection: connection)
        connection.readsPresenceBatches = readsPresenceBatches
        let recorder = ChatRecorder(chat)
        clients.append(chat)
        chat.start()
        return (chat, recorder)
    }

    /// A client of `user`, logged in.
    func online(_ user: String, readsPresenceBatches: Bool = true) throws -> (ChatClient, ChatRecorder) {
        let (chat, recorder) = client(user, readsPresenceBatches: readsPresenceBatches)
        try #require(try spin(loop) { chat.state == .online })
        return (chat, recorder)
    }

    /// Runs the loop until `request` completes, and returns what it completed with.
    func answer<Value>(_ request: (@escaping (Result<Value, ChatRequestError>) -> Void) -> Void) throws -> Result<Value, ChatRequestError> {
        var results: [Result<Value, ChatRequestError>] = []
        request { results.append($0) }
        try #require(try spin(loop) { !results.isEmpty })
        return results[0]
    }

    /// Closes every client and the server.
    func tearDown() throws {
        for client in clients { client.close() }
        try spin(loop) { server.onlineUsers.isEmpty }
        server.shutdown()
    }
}

/// Everything a ``ChatClient`` reports.
final class ChatRecorder {
    var messages: [ChatMessage] = []
    var presence: [PresenceChange] = []
    var membership: [MembershipChange] = []
    var deliveries: [String: [IMDeliveryState]] = [:]
    var states: [IMConnectionState] = []

    init(_ chat: ChatClient) {
        chat.onMessage = { [weak self] _, message in self?.messages.append(message) }
        chat.onPresence = { [weak self] _, change in self?.presence.append(change) }
        chat.onMembership = { [weak self] _, change in self?.membership.append(change) }
        chat.onDelivery = { [weak self] _, id, state in self?.deliveries[id, default: []].append(state) }
        chat.onStateChange = { [weak self] _, state in self?.states.append(state) }
    }

    func isStored(_ id: String) -> Bool {
        if case .stored? = deliveries[id]?.last { return true }
        return false
    }
}
