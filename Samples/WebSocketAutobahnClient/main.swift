// ws-autobahn-client: runs Autobahn|Testsuite's fuzzingserver cases against RunLoopWebSocket's client
// (Scripts/autobahn/run.sh). Asks for the case count, runs every case as an echo client, then asks
// the server to write its reports. Connects to 127.0.0.1 only.
//
//   ws-autobahn-client [--port 9001] [--agent runloopkit]
import RunLoopKit
import RunLoopNet
import RunLoopWebSocket

#if canImport(Glibc)
import Glibc
#endif

var port: UInt16 = 9001
var agent = "runloopkit"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--port": port = arguments.popFirst().flatMap { UInt16($0) } ?? port
    case "--agent": agent = arguments.popFirst() ?? agent
    default:
        print("usage: ws-autobahn-client [--port 9001] [--agent runloopkit]")
        exit(2)
    }
}

let loop = RunLoop.current
let configuration = WebSocketConfiguration(maximumFrameSize: 32 << 20, maximumMessageSize: 32 << 20)
let limits = TCPBufferLimits(writeLimit: 64 << 20)

/// Runs one connection to `target` until it closes; `onMessage` sees every message.
@MainActor func session(_ target: String, onMessage: @escaping (WebSocketConnection, WebSocketMessage) -> Void) throws -> WebSocketCloseInfo {
    var info: WebSocketCloseInfo?
    let connection = WebSocketConnection(configuration: configuration, limits: limits)
    connection.onMessage = onMessage
    connection.onClose = { _, closed in info = closed }
    connection.connect(host: "127.0.0.1", port: port, target: target)
    while info == nil { try loop.run(.default, timeout: .seconds(1)) }
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
