import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket

/// A WebSocket peer written by hand on a raw TCP connection, to send what a real client never would
/// and to read exactly what the server put on the wire.
final class RawPeer {
    let tcp = TCPConnection()
    var received: [UInt8] = []
    var closed: CloseReason?
    /// Frames the server sent after its handshake answer (parsed as server frames: unmasked).
    var frames: [WebSocketFrame] = []
    var parseError: WebSocketError?
    private var headDone = false
    private var parser = WebSocketFrameParser(sender: .server, maximumFrameSize: 1 << 20)

    init(port: UInt16, request: [UInt8]) {
        tcp.onConnect = { tcp in try? tcp.write(request) }
        tcp.onData = { [weak self] _, bytes in self?.take(bytes) }
        tcp.onClose = { [weak self] _, reason in self?.closed = reason }
        tcp.connect(to: "127.0.0.1", port: port)
    }

    /// Connects and sends a valid upgrade request.
    convenience init(port: UInt16) {
        self.init(port: port, request: WebSocketHandshake.request(host: "127.0.0.1", port: port, target: "/", key: WebSocketHandshake.randomKey()))
    }

    var head: String? {
        guard let end = received.firstRange(of: [13, 10, 13, 10]) else { return nil }
        return String(decoding: received[..<end.upperBound], as: UTF8.self)
    }

    private func take(_ bytes: [UInt8]) {
        received += bytes
        var rest = bytes
        if !headDone {
            guard let end = received.firstRange(of: [13, 10, 13, 10]) else { return }
            headDone = true
            rest = Array(received[end.upperBound...])
        }
        parser.append(rest)
        do {
            while let frame = try parser.nextFrame() { frames.append(frame) }
        } catch {
            parseError = error
        }
    }

    /// Sends a frame, masked as a client must unless told otherwise.
    func send(_ frame: WebSocketFrame, masked: Bool = true) {
        try? tcp.write(frame.encoded(maskingKey: masked ? WebSocketMask.randomKey() : nil))
    }

    /// The code of the first close frame received.
    var closeCode: WebSocketCloseCode? {
        guard let close = frames.first(where: { $0.opcode == .close }), close.payload.count >= 2 else { return nil }
        return WebSocketCloseCode(UInt16(close.payload[0]) << 8 | UInt16(close.payload[1]))
    }
}

/// An echo server on 127.0.0.1, port 0; `closes` collects how its connections ended.
func echoServer(configuration: WebSocketConfiguration = WebSocketConfiguration(), closes: @escaping (WebSocketCloseInfo) -> Void = { _ in }) throws
    -> WebSocketServer
{
    let server = WebSocketServer(configuration: configuration)
    server.onConnection = { _, connection in
        connection.onMessage = { connection, message in try? connection.send(message) }
        connection.onClose = { _, info in closes(info) }
    }
    try server.listen()
    return server
}
