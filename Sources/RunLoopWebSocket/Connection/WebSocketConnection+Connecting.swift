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
        precondition(role == .client && state == .connecting && handshakeKey == nil, "connect once, on a client connection")
        let key = WebSocketHandshake.randomKey()
        handshakeKey = key
        tcp.onConnect = { [self] tcp in
            do throws(NetError) {
                try tcp.write(WebSocketHandshake.request(host: host, port: port, target: target, key: key, extraFields: extraFields))
            } catch {
                return failTransport(error)
            }
            tcp.read(
                upTo: [13, 10, 13, 10], maximumLength: configuration.maximumHandshakeSize,
                timeout: configuration.handshakeTimeout
            ) { [self] tcp, head in
                handshakeAnswered(head, key: key)
            }
        }
        tcp.connect(to: host, port: port, timeout: timeout)
    }

    private func handshakeAnswered(_ head: [UInt8], key: String) {
        guard state == .connecting else { return }
        do {
            try WebSocketHandshake.validateResponse(head, key: key)
        } catch {
            logger.debug("\(self): \(error)")
            failure = error
            state = .closing
            return tcp.close(immediately: true)
        }
        state = .open
        // Frames the server sent right behind its answer stay buffered in the TCP connection and
        // arrive through onData after onOpen.
        startReceiving()
        onOpen?(self)
    }
}
