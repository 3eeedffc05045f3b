import RunLoopKit
import RunLoopNet
import RunLoopTesting

@testable import RunLoopIM
@testable import RunLoopIMCore

/// An ``IMServer`` in `pair.server` and an ``IMClient`` ("alice") in `pair.client` following a
/// ``NetworkReachability`` whose target is the server's address — all on the calling loop thread,
/// which it leaves in `pair.client`. Optionally a second client ("bob") connected from inside the
/// server namespace, so it stays online whatever happens to the client's link.
///
/// Counts what a link test needs to prove "no attempt while down": every call of alice's connector
/// (one per connection attempt) and every connection the server accepts, with the loop's time.
///
/// Build it inside ``onLoopThread(_:)`` (not ``onLoopThread(inNamespace:_:)``: it enters both
/// namespaces itself) and call ``close()`` before the thread ends.
final class ClientNamespaceFixture {
    let loop: RunLoop
    let pair: NamespacePair
    let store = InMemoryIMStore()
    let server: IMServer
    let reachability: NetworkReachability
    let client: IMClient
    let log = ClientRecorder()
    /// A second client living in the server namespace (its link never goes down), if asked for.
    let peer: IMClient?
    let peerLog = ClientRecorder()

    /// When alice's connector made a transport: one per connection attempt.
    var attempts: [LoopInstant] { counters.attempts }
    /// When the server accepted a connection (any client).
    var accepts: [LoopInstant] { counters.accepts }

    private let counters: Counters

    private final class Counters {
        var attempts: [LoopInstant] = []
        var accepts: [LoopInstant] = []
    }

    /// - Parameters:
    ///   - configuration: alice's configuration (see ``clientConfiguration(_:password:_:)``).
    ///   - withPeer: also connect "bob" from the server namespace and wait until he is online.
    ///   - startClient: start alice (after following the reachability).
    init(pair: NamespacePair, configuration: IMClientConfiguration, withPeer: Bool, startClient: Bool = true) throws {
        let loop = RunLoop.current
        let counters = Counters()
        self.loop = loop
        self.pair = pair
        self.counters = counters

        // The listener's socket, and every connection it accepts, live in the server namespace.
        try enterNetworkNamespace(pair.server)
        server = IMServer(store: store)
        try server.listen(host: pair.serverAddress, port: 0)
        let serverAccept = server.listener.onAccept
        server.listener.onAccept = { listener, connection in
            counters.accepts.append(loop.now)
            serverAccept?(listener, connection)
        }
        let port = server.port
        guard let target = SocketAddress(ip: pair.serverAddress, port: port) else {
            throw CommandError(command: ["SocketAddress", pair.serverAddress], detail: "not an IP literal")
        }

        // bob connects to the server's own address from inside its namespace (through its local
        // route, not the veth): his connection outlives whatever happens to the client's link. His
        // socket is made at once by start() (an IP literal needs no resolution), so here.
        if withPeer {
            let peer = IMClient(
                configuration: clientConfiguration("bob"),
                connector: TCPFrameLink.connector(host: pair.serverAddress, port: port, connectTimeout: .seconds(5)))
            peerLog.attach(to: peer)
            peer.start()
            guard try spin(loop, for: .seconds(20), until: { peer.state == .online }) else {
                throw CommandError(command: ["bob", "login"], detail: "bob did not come online: \(peer.state)")
            }
            self.peer = peer
        } else {
            peer = nil
        }

        // Everything from here on — the reachability's netlink sockets and alice's connections — lives
        // in the client namespace.
        try enterNetworkNamespace(pair.client)
        reachability = try NetworkReachability(target: target)
        let base = TCPFrameLink.connector(host: pair.serverAddress, port: port, connectTimeout: .seconds(2))
        client = IMClient(
            configuration: configuration,
            connector: { loop, modes, maximumFrameBody in
                counters.attempts.append(loop.now)
                return base(loop, modes, maximumFrameBody)
            })
        log.attach(to: client)
        client.follow(reachability)
        if startClient { client.start() }
    }

    /// Closes both clients and the server, stops the reachability, and runs the loop until the
    /// clients say they are closed (bounded).
    func close() throws {
        client.close()
        peer?.close()
        try spin(loop, for: .seconds(10)) {
            [client, peer].compactMap { $0 }.allSatisfy { if case .closed = $0.state { return true } else { return false } }
        }
        server.shutdown()
        reachability.invalidate()
        try loop.run(.default, timeout: .milliseconds(20))
    }
}

extension IMConnectionState {
    var isWaitingForNetwork: Bool { if case .waitingForNetwork = self { return true } else { return false } }
}
