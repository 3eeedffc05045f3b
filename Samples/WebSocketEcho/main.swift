// ws-echo-server: a WebSocket echo server on one run loop — the server Autobahn's fuzzingclient
// tests (Scripts/autobahn/run.sh). Every text or binary message comes back as it came.
//
//   ws-echo-server [--host 127.0.0.1] [--port 9001]
//
// Prints "listening on HOST:PORT" once it accepts connections (port 0 picks a free one).
import RunLoopKit
import RunLoopNet
import RunLoopWebSocket

#if canImport(Glibc)
import Glibc
#endif

var host = "127.0.0.1"
var port: UInt16 = 9001
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--host": host = arguments.popFirst() ?? host
    case "--port": port = arguments.popFirst().flatMap { UInt16($0) } ?? port
    default:
        print("usage: ws-echo-server [--host 127.0.0.1] [--port 9001]")
        exit(2)
    }
}

// Autobahn's largest messages are 16 MiB; the write limit must hold a whole echoed message.
let configuration = WebSocketConfiguration(maximumFrameSize: 32 << 20, maximumMessageSize: 32 << 20)
let limits = TCPBufferLimits(writeLimit: 64 << 20)
let server = WebSocketServer(configuration: configuration, connectionLimits: limits)
server.onConnection = { _, connection in
    connection.onMessage = { connection, message in
        do { try connection.send(message) } catch { connection.close(code: .internalError, reason: "\(error)") }
    }
}
do {
    try server.listen(host: host, port: port)
} catch {
    print("cannot listen on \(host):\(port): \(error)")
    exit(1)
}
print("listening on \(host):\(server.port)")
fflush(nil)  // all streams: the runner waits for this line through a pipe
while true {
    try RunLoop.current.run(.default, timeout: .seconds(3600))
}
