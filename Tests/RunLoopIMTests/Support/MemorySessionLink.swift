import RunLoopKit
import RunLoopNet
@testable import RunLoopIM

/// An ``IMSessionLink`` with no socket: the test plays the client, frame by frame, and reads what the
/// server sent. For server tests that need thousands of sessions or exact control of what the client
/// has read; one small loopback suite per transport proves the sockets.
final class MemorySessionLink: IMSessionLink {
    let loop: RunLoop
    let modes: [RunLoop.Mode] = [.common]
    let remoteAddress: SocketAddress?
    private var events: IMSessionLinkEvents?
    /// Everything the server sent, in order.
    private(set) var sent: [IMFrame] = []
    /// Set when the server closed the link (gracefully or not), with the session's reason.
    private(set) var closedFor: IMSessionEndReason?
    private(set) var wasAborted = false
    /// What the link reports as unread by the peer (``IMSessionLink/bufferedOutputBytes``).
    var bufferedOutputBytes = 0
    /// Makes ``send(_:)`` fail, the way a transport at its limit does.
    var failsWrites = false
    /// Keep only a count of what was sent (for thousands of sessions).
    var keepsFrames = true
    private(set) var sentCount = 0

    init(loop: RunLoop = .current, address: SocketAddress? = nil) {
        self.loop = loop
        remoteAddress = address
    }

    func start(_ events: IMSessionLinkEvents) { self.events = events }

    func send(_ frame: IMFrame) throws(NetError) {
        guard closedFor == nil, !wasAborted else { throw .outputClosed }
        if failsWrites { throw .outputClosed }
        sentCount += 1
        if keepsFrames { sent.append(frame) }
    }

    func send(_ frames: [IMFrame]) throws(NetError) {
        guard keepsFrames else {
            guard closedFor == nil, !wasAborted, !failsWrites else { throw .outputClosed }
            sentCount += frames.count
            return
        }
        for frame in frames { try send(frame) }
    }

    func close(for reason: IMSessionEndReason) { closedFor = reason }

    func abort() { wasAborted = true }

    var isOpen: Bool { closedFor == nil && !wasAborted }

    // MARK: The client's side

    func receive(_ frame: IMFrame) { events?.received(frame) }

    /// The peer went away underneath (a reset, a close frame).
    func dropFromPeer(_ why: String = "peer gone") { events?.closed(why) }

    func sent(_ command: IMCommand) -> [IMFrame] { sent.filter { $0.command == command } }

    /// Logs in as `user` and returns the LOGIN_ACK.
    @discardableResult
    func logIn(_ user: String, serial: UInt32 = 1) -> IMFrame? {
        var login = IMLoginRequest()
        login.user = user
        login.password = "pw"
        login.keepaliveSeconds = 30
        receive(IMFrame(command: .login, serial: serial, message: login))
        return sent(.loginAck).last
    }

    /// Acknowledges every DELIVER sent since the last call; returns how many.
    @discardableResult
    func acknowledgeDeliveries() -> Int {
        let delivers = sent(.deliver).dropFirst(acknowledgedDelivers)
        guard !delivers.isEmpty else { return 0 }
        acknowledgedDelivers += delivers.count
        var ack = IMDeliverAck()
        ack.seqs = delivers.compactMap(deliveredSeq)
        receive(IMFrame(command: .deliverAck, serial: 0, message: ack))
        return delivers.count
    }
    private var acknowledgedDelivers = 0
}

/// The `seq` of a DELIVER read straight off its body's wire format. Decoding a whole 60 KB message
/// with SwiftProtobuf takes ~55 ms in a debug build (its UTF-8 checks are unoptimized there), so tests
/// that move 100 MB of messages read only the field they need.
func deliveredSeq(_ frame: IMFrame) -> UInt64? {
    var reader = ProtobufPrefixReader(bytes: frame.body)
    while let key = reader.readVarint() {
        switch key & 7 {
        case 0:
            guard let value = reader.readVarint() else { return nil }
            if key >> 3 == 6 { return value }
        case 2:
            guard let length = reader.readVarint(), reader.take(length) != nil else { return nil }
        default:
            return nil
        }
    }
    return nil
}

extension IMServer.Settings {
    /// Settings for a test that logs in thousands of sessions from one address (or none) without
    /// retrying: the per-address login limits, which have their own tests (LoginFloodTests,
    /// LoginThrottleTests), would turn most of them away.
    static var withoutLoginLimits: IMServer.Settings {
        var settings = IMServer.Settings()
        settings.logins.unauthenticatedPerAddress = nil
        settings.logins.pendingChecksPerAddress = 100_000
        settings.logins.maximumQueuedChecks = 100_000
        settings.logins.maximumQueueWait = .seconds(3600)
        return settings
    }
}
