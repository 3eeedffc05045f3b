import Logging
import RunLoopKit
import RunLoopNet

extension WebSocketConnection {
    /// Starts the close handshake: sends a close frame with `code` and `reason` (cut to fit 125
    /// bytes), then waits up to ``WebSocketConfiguration/closeTimeout`` for the peer's close frame and
    /// the end of the TCP connection. ``onClose`` runs when it is over, never inside this call.
    /// Idempotent; a client still connecting is abandoned.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") {
        precondition(tcp.loop.isCurrentThread, "WebSocketConnection used off its run loop's thread")
        switch state {
        case .connecting:
            state = .closing
            transport.close(immediately: true)
        case .open:
            sendClose(code: code, reason: reason)
            armCloseTimer()
        case .closing, .closed:
            return
        }
    }

    /// Drops the connection at once without a close handshake (TCP reset); ``onClose`` reports 1006.
    public func abort() {
        precondition(tcp.loop.isCurrentThread, "WebSocketConnection used off its run loop's thread")
        guard state != .closed else { return }
        state = .closing
        transport.close(immediately: true)
    }

    /// The peer's close frame: answer it (echoing its code) unless ours went first, then end TCP. The
    /// server ends first, as RFC 6455 §7.1.1 asks (the TIME_WAIT stays on its side); a client ends its
    /// output too, so a server that waits for that is not kept waiting.
    func peerClosed(code: WebSocketCloseCode?, reason: String) {
        let wasOpen = state == .open
        closeReceived = (code, reason)
        if closeSent == nil {
            peerStartedClose = true
            sendClose(code: code, reason: reason)
        }
        if state != .closed {
            transport.close()
            armCloseTimer()
        }
        if wasOpen { onClosing?(self, .peerClosed(code: code, reason: reason)) }
    }

    /// Fails the connection for a peer's violation: close frame with the violation's code, then end
    /// TCP without waiting for the peer's answer (RFC 6455 §7.1.7).
    func fail(_ error: WebSocketError) {
        logger.debug("failing \(self): \(error)")
        let wasOpen = state == .open
        failure = error
        if closeSent == nil, let code = error.closeCode { sendClose(code: code, reason: "") }
        if state != .closed {
            state = .closing
            transport.close()
            armCloseTimer()
        }
        if wasOpen { onClosing?(self, .failed(error)) }
    }

    /// The stream refused our bytes: nothing sensible can be sent any more.
    func failTransport(_ error: WebSocketError) {
        failure = failure ?? error
        state = .closing
        transport.close(immediately: true)
    }

    private func sendClose(code: WebSocketCloseCode?, reason: String) {
        closeSent = (code, reason)
        state = .closing
        let payload = WebSocketMessageAssembler.closePayload(code: code, reason: reason)
        do { try write(WebSocketFrame(opcode: .close, payload: payload)) } catch { failTransport(error) }
    }

    /// Bounds the close handshake: at expiry the TCP connection is dropped.
    func armCloseTimer() {
        guard closeTimer == nil, state != .closed else { return }
        let timer = RunLoopTimer(after: configuration.closeTimeout, label: "websocket close") { [weak self] _ in
            guard let self, self.state != .closed else { return }
            self.failure = self.failure ?? .closeTimedOut
            self.transport.close(immediately: true)
        }
        closeTimer = timer
        for mode in tcp.modes { tcp.loop.add(timer, forMode: mode) }
    }

    /// The stream ended: report how the WebSocket connection ended, once.
    func transportClosed(_ reason: CloseReason, error: WebSocketError?) {
        guard state != .closed else { return }
        state = .closed
        closeTimer?.invalidate()
        closeTimer = nil
        if failure == nil, let error { failure = error }
        let first = peerStartedClose
        let handshake = first ? closeReceived : closeSent
        let code: WebSocketCloseCode
        if let handshake { code = handshake.code ?? .noStatusReceived } else { code = .abnormalClosure }
        let tcpEndedInOrder = reason == .closed || reason == .peerClosed
        let info = WebSocketCloseInfo(
            code: code, reason: handshake?.reason ?? "", initiatedByPeer: first,
            wasClean: closeSent != nil && closeReceived != nil && tcpEndedInOrder && failure == nil,
            error: failure, transport: reason)
        closeInfo = info
        let callback = onClose
        onOpen = nil
        onMessage = nil
        onPing = nil
        onPong = nil
        onWritabilityChanged = nil
        onClosing = nil
        onClose = nil
        callback?(self, info)
        let server = onClosedForServer
        onClosedForServer = nil
        server?()
    }

}
