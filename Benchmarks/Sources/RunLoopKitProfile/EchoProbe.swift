import RunLoopKit
import RunLoopNet

/// The `tcp.echo` benchmark's workload (server and clients on this loop): `connections` clients each
/// keep one 64-byte message in flight, `write` + `read(exactly: 64)`, until `messages` echoes arrived.
final class EchoProbe {
    let loop = RunLoop.current
    let mode = RunLoop.Mode("profile.echo")
    let message = [UInt8](repeating: 0x78, count: 64)
    var clients: [TCPConnection] = []
    var accepted: [TCPConnection] = []
    var connected = 0
    var remaining = 0
    var echoed = 0
    var target = 0

    func run(messages: Int, connections: Int = 100) throws -> Int {
        let listener = TCPListener(loop: loop, modes: [mode])
        listener.onAccept = { [unowned self] _, connection in
            connection.onData = { c, bytes in try? c.write(bytes) }
            accepted.append(connection)
            if accepted.count == connections, connected == connections { loop.stop() }
        }
        try listener.listen(host: "127.0.0.1", port: 0)
        for _ in 0..<connections {
            let client = TCPConnection(loop: loop, modes: [mode])
            client.onConnect = { [unowned self] _ in
                connected += 1
                if accepted.count == connections, connected == connections { loop.stop() }
            }
            client.connect(to: .ipv4Loopback(port: listener.port))
            clients.append(client)
        }
        _ = try loop.run(mode)
        target = messages
        remaining = messages - connections
        for client in clients { send(client) }
        _ = try loop.run(mode)
        return echoed
    }

    /// Made once, as in `tcp.echo`: a closure literal per read would allocate per message.
    private lazy var onEcho: (TCPConnection, [UInt8]) -> Void = { [unowned self] c, _ in
        echoed += 1
        if echoed == target { loop.stop(); return }
        if remaining > 0 { remaining -= 1; send(c) }
    }

    private func send(_ connection: TCPConnection) {
        try! connection.write(message)
        connection.read(exactly: message.count, onEcho)
    }
}
