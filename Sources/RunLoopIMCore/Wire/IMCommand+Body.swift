package import SwiftProtobuf

extension IMCommand {
    /// The Protocol Buffers message a frame of this command carries (docs/PROTOCOL.md §3), or `nil`
    /// for the commands whose body is always empty. Encodings other than the binary frame — the JSON
    /// envelope browsers speak — need it to translate bodies.
    package var bodyType: (any SwiftProtobuf.Message.Type)? {
        switch self {
        case .heartbeat, .heartbeatAck, .logout, .logoutAck, .listRooms: return nil
        case .login: return IMLoginRequest.self
        case .loginAck: return IMLoginResponse.self
        case .send, .deliver: return IMChatMessage.self
        case .sendAck: return IMSendAck.self
        case .deliverAck: return IMDeliverAck.self
        case .abandon: return IMAbandonRequest.self
        case .abandonAck: return IMAbandonResponse.self
        case .error: return IMErrorNotice.self
        case .join, .leave: return IMRoomRequest.self
        case .joinAck, .leaveAck: return IMRoomInfo.self
        case .roomList: return IMRoomList.self
        case .history: return IMHistoryRequest.self
        case .historyPage: return IMHistoryPage.self
        case .presence: return IMPresenceNotice.self
        case .membership: return IMMembershipNotice.self
        case .presenceBatch: return IMPresenceBatch.self
        }
    }

    /// The command whose protocol name (``description``, e.g. `"SEND"`) is `name`.
    public init?(name: String) {
        guard let command = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = command
    }
}
