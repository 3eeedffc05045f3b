extension IMFrame {
    /// A SEND or DELIVER frame carrying `message` — for tools and relays that speak frames
    /// themselves (an ``IMClient`` and an `IMServer` make their own). In a SEND the server ignores
    /// `from`, `seq` and `sentAtMilliseconds`.
    public init(command: IMCommand, serial: UInt32, message: IMMessage) {
        precondition(command == .send || command == .deliver, "\(command) does not carry a chat message")
        self.init(command: command, serial: serial, message: message.wire)
    }

    /// The message a SEND or DELIVER frame carries (its body read as one, whatever the command).
    /// - Throws: ``IMFrameError/undecodableBody(command:reason:)`` for a body that is not a valid
    ///   encoding of a chat message.
    public func decodeMessage() throws(IMFrameError) -> IMMessage {
        IMMessage(try decode(IMChatMessage.self))
    }
}
