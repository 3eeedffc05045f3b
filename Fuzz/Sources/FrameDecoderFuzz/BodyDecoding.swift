import RunLoopIMCore
import SwiftProtobuf

/// Decodes a frame's body as its command's message, the way the server and client do; a command this
/// module does not know is tried as every message type, so the fuzzer reaches every generated decoder.
func decodeBody(_ frame: IMFrame) {
    switch frame.command {
    case .heartbeat, .heartbeatAck, .logout, .logoutAck, .listRooms: break  // empty bodies; nobody reads them
    case .login: roundTrip(frame, IMLoginRequest.self)
    case .loginAck: roundTrip(frame, IMLoginResponse.self)
    case .send, .deliver: roundTrip(frame, IMChatMessage.self)
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
/// message (unknown fields included). One that does not decode fails with the typed error naming
/// the frame's command.
func roundTrip<M: SwiftProtobuf.Message & Equatable>(_ frame: IMFrame, _ type: M.Type) {
    do {
        let message = try frame.decode(type)
        let again = IMFrame(rawCommand: frame.header.command, serial: frame.serial, body: try message.serializedBytes())
        fuzzCheck(try again.decode(type) == message, "\(M.self) changed across a re-encode")
    } catch let error as IMFrameError {
        guard case .undecodableBody(let command, _) = error else { return fuzzCheck(false, "\(error) from decode") }
        fuzzCheck(command == frame.header.command, "error names command \(command)")
    } catch {
        // Only `serializedBytes()` throws untyped errors, and our messages always serialize.
        fuzzCheck(false, "\(M.self) did not serialize again: \(error)")
    }
}
