public import RunLoopIM
import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// Connects ``IMClient``s to an acceptor — an ``IMServer`` — through a fresh ``MemoryLinkPair`` per
/// connection attempt, the way ``TCPFrameLink/connector(host:port:connectTimeout:options:limits:)``
/// makes a socket per attempt.
///
/// ```swift
/// let links = MemoryLinkConnector(server: server)
/// let client = IMClient(configuration: configuration, connector: links.connector)
/// links.faults = [.delay(.milliseconds(50))]   // every connection from now on
/// links.refuseNextConnect()
/// links.lastPair?.apply(.drop)                 // the connection in use
/// ```
///
/// Loop thread only.
public final class MemoryLinkConnector {
    /// Every pair made so far, in order.
    public private(set) var pairs: [MemoryLinkPair] = []
    /// Faults applied to each new pair as it is made.
    public var faults: [MemoryLinkFault] = []
    /// The peer address the server end of each new connection reports (``MemoryFrameLink/remoteAddress``),
    /// as a socket reports its client's: set it to play another host, since the server's per-address
    /// login limits key on it. nil (the default): no address, one host shared by every such link.
    public var remoteAddress: SocketAddress?
    private var refusals = 0
    private let serverFrameLimit: Int
    private let serverModes: [RunLoop.Mode]
    private let skippableSendLength: Int
    private let accept: (MemoryFrameLink) -> Void

    /// - Parameters:
    ///   - serverModes: the server ends' modes (the acceptor's, as its listener's for a socket); each
    ///     client end runs in the modes its client connects with.
    ///   - serverFrameLimit: the largest body the server ends accept.
    ///   - skippableSendLength: see ``MemoryLinkPair/init(loop:modes:serverModes:clientFrameLimit:serverFrameLimit:skippableSendLength:)``.
    ///   - accept: gets each server end when its client end connects.
    public init(
        serverModes: [RunLoop.Mode] = [.common], serverFrameLimit: Int = 64 * 1024, skippableSendLength: Int = 0,
        accept: @escaping (MemoryFrameLink) -> Void
    ) {
        self.serverModes = serverModes
        self.serverFrameLimit = serverFrameLimit
        self.skippableSendLength = skippableSendLength
        self.accept = accept
    }

    /// Connects to `server` with its frame limits, as its TCP listener would; `serverModes` are the
    /// modes the server was made with.
    public convenience init(server: IMServer, serverModes: [RunLoop.Mode] = [.common]) {
        self.init(
            serverModes: serverModes, serverFrameLimit: server.settings.maximumFrameBody, skippableSendLength: server.settings.maximumSkippedSendBody
        ) {
            [weak server] link in server?.adopt(link)
        }
    }

    /// The connection made last (the one a client that has not reconnected uses).
    public var lastPair: MemoryLinkPair? { pairs.last }

    /// The next connection attempt fails with ``IMLinkFailure/refused`` (on a later pass), as a
    /// server that is not listening refuses it. Counts: two calls refuse two attempts.
    public func refuseNextConnect() { refusals += 1 }

    /// The connector to give ``IMClient``.
    public var connector: IMConnector {
        { [self] loop, modes, maximumFrameBody in makePair(loop: loop, modes: modes, maximumFrameBody: maximumFrameBody).client }
    }

    private func makePair(loop: RunLoop, modes: [RunLoop.Mode], maximumFrameBody: Int) -> MemoryLinkPair {
        let pair = MemoryLinkPair(
            loop: loop, modes: modes, serverModes: serverModes, clientFrameLimit: maximumFrameBody,
            serverFrameLimit: serverFrameLimit, skippableSendLength: skippableSendLength)
        pair.wire.accept = accept
        pair.server.remoteAddress = remoteAddress
        if refusals > 0 {
            refusals -= 1
            pair.wire.refusesConnect = true
        }
        for fault in faults { pair.apply(fault) }
        pairs.append(pair)
        return pair
    }
}
