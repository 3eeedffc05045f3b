import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// Marks the frames a person follows in the timeline as they pass one link — a client's heartbeats,
/// and each message's SEND, SEND_ACK, DELIVER and DELIVER_ACK at both ends of the wire — on that
/// end's recorder, with the message's id as their flow: the timeline draws each message's way from
/// its sender's loop through the node's to its recipients' as arrows. A hop is named by the client
/// on the link ("SEND alice"), so the client's end and the node's end of it match.
///
/// One per link (it remembers which message each delivered sequence number was, for the
/// DELIVER_ACK, which names only those). Loop thread only, like the link it watches.
final class MarkingLink {
    /// Which end of the wire the link is.
    enum End {
        case client, node
    }

    private let recorder: ActivityRecorder
    private let client: String
    private let end: End
    /// Delivered sequence number → message id, until its DELIVER_ACK.
    private var delivered: [UInt64: String] = [:]

    private init(recorder: ActivityRecorder, client: String, end: End) {
        self.recorder = recorder
        self.client = client
        self.end = end
    }

    /// A connector whose links are `connector`'s, `client`'s end of each marked on `recorder`.
    static func connector(_ connector: @escaping IMConnector, client: String, marking recorder: ActivityRecorder) -> IMConnector {
        { loop, modes, maximumFrameBody in
            tapped(connector(loop, modes, maximumFrameBody), client: client, end: .client, marking: recorder)
        }
    }

    /// `link`, with the frames passing it marked on `recorder` as `end` of `client`'s link.
    static func tapped(_ link: any IMFrameLink, client: String, end: End, marking recorder: ActivityRecorder) -> any IMFrameLink {
        let marker = MarkingLink(recorder: recorder, client: client, end: end)
        // A departure is stamped before the frame is written: once it is, the peer's loop may read
        // it and stamp the arrival first.
        return TappedFrameLink(link, sending: { marker.mark($0, sent: true) }, sent: { _ in }, received: { marker.mark($0, sent: false) })
    }

    /// The messages a frame is a step of, by id, or nil for a frame the timeline leaves out (logins,
    /// pongs: the state changes and the marks around them say enough).
    private func messages(in frame: IMFrame) -> [String]? {
        switch frame.command {
        case .send?: return (try? frame.decodeMessage()).map { [$0.id] }
        case .sendAck?: return (try? frame.decode(IMSendAck.self)).map { [$0.id] }
        case .deliver?:
            guard let message = try? frame.decodeMessage() else { return nil }
            delivered[message.seq] = message.id
            return [message.id]
        case .deliverAck?: return (try? frame.decode(IMDeliverAck.self))?.seqs.compactMap { delivered.removeValue(forKey: $0) }
        default: return nil
        }
    }

    private func mark(_ frame: IMFrame, sent: Bool) {
        let passing = "\(sent ? "sending" : "received") \(frame) (\(frame.body.count) bytes of body)"
        if frame.command == .heartbeat, sent, end == .client { return recorder.mark("heartbeat", detail: passing) }
        guard let command = frame.command, let ids = messages(in: frame) else { return }
        let hop = "\(command) \(client)"
        let detail = end == .node ? "\(passing), \(sent ? "to" : "from") \(client)" : passing
        for id in ids {
            recorder.mark("\(command)", detail: detail, flow: sent ? .departure(id, hop: hop) : .arrival(id, hop: hop))
        }
    }
}
