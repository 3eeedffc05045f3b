// The generated messages are `package` in RunLoopKit, so this target compiles its own copy of them:
// runloopim.pb.swift here is a link to Sources/RunLoopIMCore/Generated/runloopim.pb.swift. The
// library's public reading of a body, `IMFrame.decodeMessage()`, is checked against that copy.
import RunLoopIMCore
// Explicitly internal: the linked runloopim.pb.swift imports it `package`, and an import without a
// level beside that one is ambiguous.
internal import SwiftProtobuf

/// Decodes a frame's body as its command's message, the way the server and client do; a command this
/// module does not know is tried as every message type, so the fuzzer reaches every generated decoder.
func decodeBody(_ frame: IMFrame) {
    switch frame.command {
    case .heartbeat, .heartbeatAck, .logout, .logoutAck, .listRooms: break  // empty bodies; nobody reads them
    case .login: roundTrip(frame, IMLoginRequest.self)
    case .loginAck: roundTrip(frame, IMLoginResponse.self)
    case .send, .deliver:
        roundTrip(frame, IMChatMessage.self)
        checkDecodeMessage(frame)
    case .sendAck: roundTrip(frame, IMSendAck.self)
    case .deliverAck: roundTrip(frame, IMDeliverAck.self)
    case .abandon: roundTrip(frame, IMAbandonRequest.self)
    case .abandonAck: roundTrip(frame, IMAbandonResponse.self)
    case .error: roundTrip(frame, IMErrorNotice.self)
    case .join, .leave: roundTrip(frame, IMRoomRequest.self)
    case .joinAck, .leaveAck: roundTrip(frame, IMRoomInfo.self)
    case .roomList: roundTrip(frame, IMRoomList.self)
    case .history: roundTrip(frame, IMHistoryRequest.self)
    case .historyPage: roundTrip(frame, IMHistoryPage.self)
    case .presence: roundTrip(frame, IMPresenceNotice.self)
    case nil:
        roundTrip(frame, IMLoginRequest.self)
        roundTrip(frame, IMLoginResponse.self)
        roundTrip(frame, IMChatMessage.self)
        roundTrip(frame, IMSendAck.self)
        roundTrip(frame, IMDeliverAck.self)
        roundTrip(frame, IMAbandonRequest.self)
        roundTrip(frame, IMAbandonResponse.self)
        roundTrip(frame, IMErrorNotice.self)
        roundTrip(frame, IMRoomRequest.self)
        roundTrip(frame, IMRoomInfo.self)
        roundTrip(frame, IMRoomList.self)
        roundTrip(frame, IMHistoryRequest.self)
        roundTrip(frame, IMHistoryPage.self)
        roundTrip(frame, IMPresenceNotice.self)
    }
}

/// A body that decodes must survive re-encoding: serialized again and decoded, it is the same
/// message (unknown fields included).
func roundTrip<M: SwiftProtobuf.Message & Equatable>(_ frame: IMFrame, _ type: M.Type) {
    guard let message = try? M(serializedBytes: frame.body) else { return }
    do {
        let again = try M(serializedBytes: try message.serializedBytes() as [UInt8])
        fuzzCheck(again == message, "\(M.self) changed across a re-encode")
    } catch {
        fuzzCheck(false, "\(M.self) did not serialize and decode again: \(error)")
    }
}

/// `IMFrame.decodeMessage()` reads a body exactly when the generated decoder does, gives its id and
/// text, and fails with the typed error naming the frame's command otherwise.
func checkDecodeMessage(_ frame: IMFrame) {
    let generated = try? IMChatMessage(serializedBytes: frame.body)
    do {
        let message = try frame.decodeMessage()
        fuzzCheck(generated?.id == message.id && generated?.text == message.text, "decodeMessage() differs from the generated decoder")
    } catch {
        guard case .undecodableBody(let command, _) = error else { return fuzzCheck(false, "\(error) from decodeMessage()") }
        fuzzCheck(generated == nil, "decodeMessage() refused a body the generated decoder reads")
        fuzzCheck(command == frame.header.command, "error names command \(command)")
    }
}
