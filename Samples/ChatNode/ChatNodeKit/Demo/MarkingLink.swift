import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// A client's links that mark the frames a person follows in the timeline — heartbeat, SEND,
/// SEND_ACK, DELIVER — on the participant's recorder as they pass.
///
/// Loop thread only, like the links it wraps.
enum MarkingLink {
    /// A connector whose links are `connector`'s, marked on `recorder`.
    static func connector(_ connector: @escaping IMConnector, marking recorder: ActivityRecorder) -> IMConnector {
        TappedFrameLink.connector(
            connector, sent: { mark($0, sent: true, on: recorder) }, received: { mark($0, sent: false, on: recorder) })
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

    private static func mark(_ frame: IMFrame, sent: Bool, on recorder: ActivityRecorder) {
        guard let label = label(frame, sent: sent) else { return }
        recorder.mark(label, detail: "\(sent ? "sent" : "received") \(frame) (\(frame.body.count) bytes of body)")
    }
}
