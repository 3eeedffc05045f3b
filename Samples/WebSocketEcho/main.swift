// ws-echo-server: a WebSocket echo server on one run loop — the server Autobahn's fuzzingclient
// tests (Scripts/autobahn/run.sh). Every text or binary message comes back as it came.
//
//   ws-echo-server [--host 127.0.0.1] [--port 9001] [--tls-cert PEM --tls-key PEM]
//
// With a certificate and key it speaks TLS only (wss://: Autobahn over TLS, and the TLS echo figures).
// Prints "listening on HOST:PORT" once it accepts connections (port 0 picks a free one).
import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopWebSocket

#if canImport(Glibc)
import Glibc
#endif

var host = "127.0.0.1"
var port: UInt16 = 9001
var certificate: String?
var key: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--host": host = arguments.popFirst() ?? host
    case "--port": port = arguments.popFirst().flatMap { UInt16($0) } ?? port
    case "--tls-cert": certificate = arguments.popFirst()
    case "--tls-key": key = arguments.popFirst()
    default:
        print("usage: ws-echo-server [--host 127.0.0.1] [--port 9001] [--tls-cert PEM --tls-key PEM]")
        exit(2)
    }
}

// Autobahn's largest messages are 16 MiB; the write limit must hold a whole echoed message.
let configuration = WebSocketConfiguration(maximumFrameSize: 32 << 20, maximumMessageSize: 32 << 20)
let limits = TCPBufferLimits(writeLimit: 64 << 20)
let server = WebSocketServer(configuration: configuration, connectionLimits: limits)
if certificate != nil || key != nil {
    guard let certificate, let key else {
        print("--tls-cert and --tls-key go together")
        exit(2)
    }
    do {
        server.tlsContext = try TLSContext(.server(certificateChainFile: certificate, privateKeyFile: key))
    } catch {
        print("cannot use \(certificate) and \(key): \(error)")
        exit(1)
    }
}
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
