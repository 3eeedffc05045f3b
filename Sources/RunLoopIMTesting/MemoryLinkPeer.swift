import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit

/// A test playing the client by hand over a ``MemoryLinkPair``: it sends frames through the client
/// end and records what the server end sent back. Each call runs the loop until the pair is idle,
/// so a test reads the server's answers right after its own step — for server tests that need exact
/// control of what the client has read, or thousands of sessions.
///
/// ```swift
/// let bob = MemoryLinkPeer(loop: loop)
/// server.adopt(bob.pair.server)
/// #expect(bob.logIn("bob")?.code == .ok)
/// bob.send(IMFrame(command: .listRooms, serial: 9))
/// #expect(bob.received(.roomList).count == 1)
/// ```
///
/// Loop thread only.
public final class MemoryLinkPeer {
    public let pair: MemoryLinkPair
    /// Everything the server sent, in order (empty once ``keepsFrames`` is off).
    public private(set) var received: [IMFrame] = []
    /// Keep the frames the server sends. Setting it off discards them from then on
    /// (``MemoryLinkFault/discard(_:)``): for thousands of sessions.
    public var keepsFrames = true {
        didSet { if !keepsFrames { pair.apply(.discard(.toClient)) } }
    }
    /// How the client end was told the link closed, if it was.
    public private(set) var closeReason: IMLinkCloseReason?
    private var acknowledgedDelivers = 0
    /// What else must be idle before a step counts as settled: a ``DeferredIMStore`` with answers
    /// out means the server has not finished answering yet.
    public var serverIsIdle: () -> Bool = { true }

    /// A pair on `loop` whose client end this peer opens at once.
    public init(loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common], serverFrameLimit: Int = 64 * 1024) {
        pair = MemoryLinkPair(loop: loop, modes: modes, serverFrameLimit: serverFrameLimit)
        pair.client.raiseInboundLimit(to: Int(UInt32.max))
        pair.client.open(
            IMFrameLinkEvents(
                received: { [weak self] frame in self?.received.append(frame) },
                failed: { [weak self] error, _ in self?.closeReason = .failed(.other("\(error)")) },
                closed: { [weak self] reason in self?.closeReason = reason }
            ))
    }

    /// The server's end: hand it to ``IMServer/adopt(_:)``.
    public var serverEnd: MemoryFrameLink { pair.server }

    /// Whether the server still has the link open.
    public var isOpen: Bool { pair.server.isOpen }

    /// The session end reason the server closed the link for, once it did.
    public var closedFor: IMSessionEndReason? { pair.server.closedFor }

    /// Frames of one command the server sent.
    public func received(_ command: IMCommand) -> [IMFrame] { received.filter { $0.command == command } }

    /// Sends `frame` to the server and, with `settling`, runs the loop until it was read and
    /// answered. Without: it arrives on a later pass, together with what other peers sent meanwhile
    /// (thousands of logins in one pass).
    public func send(_ frame: IMFrame, settling: Bool = true) {
        try? pair.client.send(frame)
        if settling { settle() }
    }

    /// Runs the loop until nothing more is on its way either way.
    public func settle() {
        _ = try? pair.settle(alsoIdle: serverIsIdle)
    }

    /// Logs in as `user` (password "pw", keepalive 30 s) and returns the LOGIN_ACK (with `settling`;
    /// see ``send(_:settling:)``). With `readsPresenceBatches`, the LOGIN asks for PRESENCE_BATCH frames.
    @discardableResult
    public func logIn(_ user: String, serial: UInt32 = 1, settling: Bool = true, readsPresenceBatches: Bool = false) -> IMFrame? {
        var login = IMLoginRequest()
        login.user = user
        login.password = "pw"
        login.keepaliveSeconds = 30
        login.presenceBatches = readsPresenceBatches
        send(IMFrame(command: .login, serial: serial, message: login), settling: settling)
        return received(.loginAck).last
    }

    /// Acknowledges every DELIVER received since the last call; returns how many.
    @discardableResult
    public func acknowledgeDeliveries() -> Int {
        let delivers = received(.deliver).dropFirst(acknowledgedDelivers)
        guard !delivers.isEmpty else { return 0 }
        acknowledgedDelivers += delivers.count
        var ack = IMDeliverAck()
        ack.seqs = delivers.compactMap(deliveredSeq)
        send(IMFrame(command: .deliverAck, serial: 0, message: ack))
        return delivers.count
    }
}
