// ws-autobahn-client: runs Autobahn|Testsuite's fuzzingserver cases against RunLoopWebSocket's client
// (Scripts/autobahn/run.sh). Asks for the case count, runs every case as an echo client, then asks
// the server to write its reports. Connects to 127.0.0.1 only; with --ca-file over TLS (wss://),
// verifying the server's certificate for 127.0.0.1 against that CA.
//
//   ws-autobahn-client [--port 9001] [--agent runloopkit] [--ca-file PEM]
import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopWebSocket

#if canImport(Glibc)
import Glibc
#endif

var port: UInt16 = 9001
var agent = "runloopkit"
var caFile: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--port": port = arguments.popFirst().flatMap { UInt16($0) } ?? port
    case "--agent": agent = arguments.popFirst() ?? agent
    case "--ca-file": caFile = arguments.popFirst()
    default:
        print("usage: ws-autobahn-client [--port 9001] [--agent runloopkit] [--ca-file PEM]")
        exit(2)
    }
}

let loop = RunLoop.current
// The fuzzing server writes a case's whole traffic before its 101 answer leaves (Twisted flushes when
// the case's code returns): over TLS, the 65,536 records of 9.3.1 and 9.4.1 kept that answer back 20 s
// on a loaded machine, past the default 10 s. Autobahn's own limit on a case is 100 s.
let configuration = WebSocketConfiguration(
    maximumFrameSize: 32 << 20, maximumMessageSize: 32 << 20, handshakeTimeout: .seconds(100))
let limits = TCPBufferLimits(writeLimit: 64 << 20)
let tls: TLSContext?
do {
    tls = try caFile.map { try TLSContext(.client(trust: .caFile($0))) }
} catch {
    print("autobahn client: cannot use \(caFile ?? ""): \(error)")
    exit(1)
}

/// Runs one connection to `target` until it closes; `onMessage` sees every message.
@MainActor func session(_ target: String, onMessage: @escaping (WebSocketConnection, WebSocketMessage) -> Void) throws -> WebSocketCloseInfo {
    var info: WebSocketCloseInfo?
    let connection = WebSocketConnection(configuration: configuration, limits: limits, tls: tls)
    connection.onMessage = onMessage
    connection.onClose = { _, closed in info = closed }
    connection.connect(host: "127.0.0.1", port: port, target: target)
    // Back after each source handled: the main loop's default mode never runs empty (it watches the
    // main dispatch queue, as CFRunLoop's does), so waiting for `finished` would wait out the timeout.
    while info == nil { try loop.run(.default, timeout: .seconds(1), returnAfterSourceHandled: true) }
    return info!
}

do {
    var count = 0
    _ = try session("/getCaseCount") { _, message in
        if case .text(let text) = message { count = Int(text) ?? 0 }
    }
    print("autobahn client: \(count) cases")
    for number in 1...max(count, 1) where count > 0 {
        _ = try session("/runCase?case=\(number)&agent=\(agent)") { connection, message in
            do { try connection.send(message) } catch { connection.close(code: .internalError) }
        }
    }
    _ = try session("/updateReports?agent=\(agent)") { _, _ in }
    print("autobahn client: done")
} catch {
    print("autobahn client: \(error)")
    exit(1)
}
