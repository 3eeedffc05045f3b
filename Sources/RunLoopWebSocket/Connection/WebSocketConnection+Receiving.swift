import RunLoopNet

extension WebSocketConnection {
    /// Feeds TCP input through the parser and assembler and acts on what completes.
    func receive(_ bytes: [UInt8]) {
        // Once the peer's close frame is in, or this side failed the connection, nothing more counts.
        guard closeReceived == nil, failure == nil, state == .open || state == .closing else { return }
        parser.append(bytes)
        while closeReceived == nil, failure == nil, state != .closed {
            let event: WebSocketEvent?
            do {
                guard let frame = try parser.nextFrame() else { return }
                event = try assembler.receive(frame)
            } catch {
                return fail(error)
            }
            if let event { handle(event) }
        }
    }

    private func handle(_ event: WebSocketEvent) {
        switch event {
        case .message(let message):
            onMessage?(self, message)
        case .ping(let payload):
            // Answered at once, before the owner hears of it; not after our close frame (RFC 6455 §5.5.1).
            if closeSent == nil {
                do { try write(WebSocketFrame(opcode: .pong, payload: payload)) } catch { return failTransport(error) }
            }
            onPing?(self, payload)
        case .pong(let payload):
            onPong?(self, payload)
        case .close(let code, let reason):
            peerClosed(code: code, reason: reason)
        }
    }
}
