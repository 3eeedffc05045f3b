public import RunLoopIM
import RunLoopIMCore
import RunLoopKit

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
    private var refusals = 0
    private let serverFrameLimit: Int
    private let skippableSendLength: Int
    private let accept: (MemoryFrameLink) -> Void

    /// - Parameters:
    ///   - serverFrameLimit: the largest body the server ends accept.
    ///   - skippableSendLength: see ``MemoryLinkPair/init(loop:modes:clientFrameLimit:serverFrameLimit:skippableSendLength:)``.
    ///   - accept: gets each server end when its client end connects.
    public init(serverFrameLimit: Int = 64 * 1024, skippableSendLength: Int = 0, accept: @escaping (MemoryFrameLink) -> Void) {
        self.serverFrameLimit = serverFrameLimit
        self.skippableSendLength = skippableSendLength
        self.accept = accept
    }

    /// Connects to `server` with its frame limits, as its TCP listener would.
    public convenience init(server: IMServer) {
        self.init(serverFrameLimit: server.settings.maximumFrameBody, skippableSendLength: server.settings.maximumSkippedSendBody) {
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
        let pair = MemoryLinkPair(loop: loop, modes: modes, clientFrameLimit: maximumFrameBody,
                                  serverFrameLimit: serverFrameLimit, skippableSendLength: skippableSendLength)
        pair.wire.accept = accept
        if refusals > 0 {
            refusals -= 1
            pair.wire.refusesConnect = true
        }
        for fault in faults { pair.apply(fault) }
        pairs.append(pair)
        return pair
    }
}
