// Conversions between the public domain types and the generated Protocol Buffers messages of
// docs/PROTOCOL.md: the only place that knows both. `package`, so the wire format never becomes API.

import SwiftProtobuf

extension IMRecipient {
    /// `nil` for a message without one, which a server refuses and never stores.
    package init?(_ wire: IMChatMessage.OneOf_To?) {
        switch wire {
        case .user(let name)?: self = .user(name)
        case .room(let name)?: self = .room(name)
        case nil: return nil
        }
    }

    package var wire: IMChatMessage.OneOf_To {
        switch self {
        case .user(let name): return .user(name)
        case .room(let name): return .room(name)
        }
    }
}

extension IMMessage {
    /// A stored message always has a recipient (a SEND without one is refused); one that has none
    /// anyway is taken as a direct message to an unnamed user rather than dropped.
    package init(_ wire: IMChatMessage) {
        self.init(
            id: wire.id, from: wire.from, recipient: IMRecipient(wire.to) ?? .user(""), text: wire.text,
            seq: wire.seq, sentAtMilliseconds: wire.sentAtMs, conversationSeq: wire.conversationSeq)
    }

    package var wire: IMChatMessage {
        var message = IMChatMessage()
        message.id = id
        message.from = from
        message.to = recipient.wire
        message.text = text
        message.seq = seq
        message.sentAtMs = sentAtMilliseconds
        message.conversationSeq = conversationSeq
        return message
    }

    /// The ChatMessage encoding of it, for carriers other than a frame (the cluster bus's stream
    /// entries). Encoding our own generated message cannot fail (no required or `Any` fields).
    package var encodedBytes: [UInt8] { try! wire.serializedBytes() }

    /// The message ``encodedBytes`` made; `nil` for bytes that are not a ChatMessage's encoding.
    package init?(encodedBytes bytes: [UInt8]) {
        guard let wire = try? IMChatMessage(serializedBytes: bytes) else { return nil }
        self.init(wire)
    }
}

extension IMLoginAttempt {
    package init(_ wire: IMLoginRequest) {
        self.init(
            user: wire.user, password: wire.password, keepaliveSeconds: wire.keepaliveSeconds,
            clientName: wire.clientName, clientInstance: wire.clientInstance, existingAccountOnly: wire.existingAccountOnly,
            readsPresenceBatches: wire.presenceBatches)
    }

    package var wire: IMLoginRequest {
        var request = IMLoginRequest()
        request.user = user
        request.password = password
        request.keepaliveSeconds = keepaliveSeconds
        request.clientName = clientName
        request.clientInstance = clientInstance
        request.existingAccountOnly = existingAccountOnly
        request.presenceBatches = readsPresenceBatches
        return request
    }
}

extension IMAbandonOutcome {
    package init(_ wire: IMAbandonResult) {
        self.init(id: wire.id, storedSeq: wire.accepted ? wire.seq : nil)
    }

    package var wire: IMAbandonResult {
        var result = IMAbandonResult()
        result.id = id
        result.accepted = storedSeq != nil
        result.seq = storedSeq ?? 0
        return result
    }
}
