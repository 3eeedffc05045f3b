import ChatNodeKit
import RunLoopChat
import RunLoopIM
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// The node a terminal client talks to, in memory: an ``IMServer`` running ``ChatService`` on a loop
/// with a ``ManualClock``, reached through ``MemoryLinkConnector`` links — the terminal client's
/// behaviour with no socket, no port and no real time. The chat-node process, its database and its
/// listeners are proven by the tests that run them for real.
///
/// The store outlives ``stop(_:)`` and ``restart()``, as the node's database does. While stopped,
/// every connection attempt is refused, as by a port nobody listens on.
///
/// Loop thread only.
final class MemoryChatNode {
    /// Everyone the tests log in as, with the password ``terminalConfiguration(_:drain:)`` uses: known
    /// accounts, so a message to anyone else is refused as to an unknown recipient.
    static let accounts = ["alice": "pw", "bob": "pw", "carol": "pw", "ann": "pw", "mallory": "pw"]

    let loop: RunLoop
    let clock: ManualClock
    let store: InMemoryIMStore
    let settings: IMServer.Settings
    /// The chat service's settings, for each (re)start: a small large-room size, say.
    let chatSettings: ChatService.Settings
    /// The server while the node runs.
    private(set) var server: IMServer?
    /// Makes each connection's pair; its pairs carry the fault script.
    private(set) lazy var links = MemoryLinkConnector(
        serverFrameLimit: settings.maximumFrameBody,
        skippableSendLength: settings.maximumSkippedSendBody
    ) { [weak self] link in
        self?.server?.adopt(link)
    }

    init(
        loop: RunLoop, clock: ManualClock, accounts: [String: String] = MemoryChatNode.accounts,
        settings: IMServer.Settings = IMServer.Settings(), chatSettings: ChatService.Settings = ChatService.Settings()
    ) {
        self.loop = loop
        self.clock = clock
        store = InMemoryIMStore(accounts: accounts)
        self.settings = settings
        self.chatSettings = chatSettings
        restart()
    }

    /// The connector to give a client: a new memory link per attempt, refused while the node is stopped.
    var connector: IMConnector {
        { [self] loop, modes, maximumFrameBody in
            if server == nil { links.refuseNextConnect() }
            return links.connector(loop, modes, maximumFrameBody)
        }
    }

    /// Starts a new server on the same store (the first one starts with the node).
    func restart() {
        let server = IMServer(store: store, settings: settings, loop: loop)
        server.applicationHandler = ChatService(settings: chatSettings)
        self.server = server
    }

    /// Shuts the server down as the node's stop does (clients are told it is shutting down); `done`
    /// runs once the last session ended.
    func stop(_ done: @escaping () -> Void = {}) {
        guard let server else { return done() }
        self.server = nil
        server.shutdown(completion: done)
    }

    /// A protocol client of this node, not started.
    func client(_ user: String) -> IMClient {
        IMClient(configuration: clientConfiguration(user), loop: loop, connector: connector)
    }

    /// A terminal client of this node, not started. It follows no routing table: there is no route to
    /// memory. `adjust` changes the rest of its configuration.
    func terminal(
        _ user: String, drain: Duration = .seconds(5), into transcript: Transcript,
        adjust: (inout TerminalClient.Configuration) -> Void = { _ in }
    ) -> TerminalClient {
        var configuration = terminalConfiguration(user, drain: drain)
        configuration.followsReachability = false
        adjust(&configuration)
        return TerminalClient(configuration: configuration, connector: connector, loop: loop) { transcript.lines.append($0) }
    }

    /// Runs `lines` as a script session of `user` to its end: the client, finished, and what it printed.
    func script(_ user: String, _ lines: String...) throws -> (TerminalClient, Transcript) {
        let seen = Transcript()
        let client = terminal(user, into: seen)
        for line in lines { client.receive(line: line) }
        client.start()
        client.endOfInput()
        // Weak: the loop releases a finished wait's observer under its lock, and a client whose last
        // reference that is would invalidate its timers there (a deadlock in RunLoopKit as it stands).
        weak let watched = client
        let finished = try runUntil { watched?.exitStatus != nil }
        try #require(finished, "\(seen.dump)")
        return (client, seen)
    }

    /// Runs the loop until `condition` holds or `timeout` of the manual clock passed; whether it held.
    func runUntil(timeout: Duration = .seconds(60), _ condition: @escaping () -> Bool) throws -> Bool {
        try loop.runUntil(timeout: timeout, condition)
    }
}
