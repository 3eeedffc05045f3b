import Logging
import RunLoopKit
import RunLoopNet

extension WebSocketConnection {
    /// Client: connects to `host`:`port` and asks to upgrade `target`. ``onOpen`` runs once the
    /// server accepted; a refusal, a bad answer or a TCP failure ends in ``onClose`` with code 1006
    /// and the ``WebSocketCloseInfo/error`` saying why.
    /// - Parameters:
    ///   - target: the request target, e.g. `/ws` or `/runCase?case=1&agent=x`.
    ///   - extraFields: more request header fields, e.g. `"Origin: http://localhost"`.
    ///   - timeout: the TCP connect timeout; the handshake then has
    ///     ``WebSocketConfiguration/handshakeTimeout``.
    public func connect(
        host: String, port: UInt16, target: String = "/", extraFields: [String] = [],
        timeout: Duration = .seconds(30)
    ) {
        precondition(startConnecting != nil && state == .connecting, "connect once, on a client connection")
        let key = WebSocketHandshake.randomKey()
        handshakeKey = key
        transport.onConnect = { [self] in
            do throws(WebSocketError) {
                try transport.write(
                    WebSocketHandshake.request(host: host, port: port, target: target, key: key, extraFields: extraFields))
            } catch {
                return failTransport(error)
            }
            transport.readHead(
                maximumLength: configuration.maximumHandshakeSize, timeout: configuration.handshakeTimeout,
                onOverflow: { [self] in
                    failTransport(.transport(.delimiterNotFound(limit: configuration.maximumHandshakeSize)))
                },
                onTimeout: { [self] in failTransport(.transport(.timedOut(.read))) }
            ) { [self] head in
                handshakeAnswered(head, key: key)
            }
        }
        startConnecting?(host, port, timeout)
        startConnecting = nil
    }

    private func handshakeAnswered(_ head: [UInt8], key: String) {
        guard state == .connecting else { return }
        do {
            try WebSocketHandshake.validateResponse(head, key: key)
        } catch {
            logger.debug("\(self): \(error)")
            failure = error
            state = .closing
            return transport.close(immediately: true)
        }
        state = .open
        // Frames the server sent right behind its answer wait in the transport and arrive through
        // onData on the loop's next pass, after onOpen.
        startReceiving()
        onOpen?(self)
    }
}
