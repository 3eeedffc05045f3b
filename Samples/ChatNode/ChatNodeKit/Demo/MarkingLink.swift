import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// A client's link that marks the frames a person follows in the timeline — heartbeat, SEND,
/// SEND_ACK, DELIVER — on the participant's recorder as they pass, and otherwise just forwards.
///
/// Loop thread only, like the link it wraps.
final class MarkingLink: IMFrameLink {
    private let inner: any IMFrameLink
    private let recorder: ActivityRecorder

    /// A connector whose links are `connector`'s, marked on `recorder`.
    static func connector(_ connector: @escaping IMConnector, marking recorder: ActivityRecorder) -> IMConnector {
        { loop, modes, maximumFrameBody in MarkingLink(connector(loop, modes, maximumFrameBody), recorder: recorder) }
    }

    private init(_ inner: any IMFrameLink, recorder: ActivityRecorder) {
        self.inner = inner
        self.recorder = recorder
    }

    /// What the timeline calls a frame, or nil for one it leaves out (logins, acks of deliveries,
    /// pongs: the state changes and the marks around them say enough).
    static func label(_ frame: IMFrame, sent: Bool) -> String? {
        switch (frame.command, sent) {
        case (.heartbeat?, true): return "heartbeat"
        case (.send?, true): return "SEND"
        case (.sendAck?, false): return "SEND_ACK"
        case (.deliver?, false): return "DELIVER"
        default: return nil
        }
    }

    private func mark(_ frame: IMFrame, sent: Bool) {
        guard let label = Self.label(frame, sent: sent) else { return }
        recorder.mark(label, detail: "\(sent ? "sent" : "received") \(frame) (\(frame.body.count) bytes of body)")
    }

    var loop: RunLoop { inner.loop }
    var modes: [RunLoop.Mode] { inner.modes }
    var remoteAddress: SocketAddress? { inner.remoteAddress }
    var hasUnreadInput: Bool { inner.hasUnreadInput }
    var bufferedOutputBytes: Int { inner.bufferedOutputBytes }

    func open(_ events: IMFrameLinkEvents) {
        var marked = events
        marked.received = { [weak self] frame in
            self?.mark(frame, sent: false)
            events.received(frame)
        }
        inner.open(marked)
    }

    func send(_ frame: IMFrame) throws(IMLinkFailure) {
        try inner.send(frame)
        mark(frame, sent: true)
    }

    func send(_ frames: [IMFrame]) throws(IMLinkFailure) {
        try inner.send(frames)
        for frame in frames { mark(frame, sent: true) }
    }

    func close(for reason: IMSessionEndReason?) { inner.close(for: reason) }
    func abort() { inner.abort() }
    func raiseInboundLimit(to bodyLength: Int) { inner.raiseInboundLimit(to: bodyLength) }
}
