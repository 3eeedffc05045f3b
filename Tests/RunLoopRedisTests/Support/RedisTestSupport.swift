import RunLoopKit
import RunLoopRedis
import RunLoopTesting

/// Starts a server and runs `body` on a loop of its own (a new thread), returning its result.
func onLoopWithRedis<T: Sendable>(_ body: @escaping @Sendable (RunLoop, RedisServer) throws -> T) async throws -> T {
    let server = try RedisServer.start()
    return try await onLoopThread { try body(RunLoop.current, server) }
}

enum RedisTestError: Error {
    case notConnected(RedisError?)
    case noAnswer([String])
}

/// A connection to `server`, connected (the loop runs until it is).
func openConnection(to server: RedisServer, commandTimeout: Duration? = nil) throws -> RedisConnection {
    let connection = RedisConnection(configuration: .unixSocket(server.socketPath, commandTimeout: commandTimeout))
    connection.connect()
    try RunLoop.current.runUntil(timeout: .seconds(10)) { connection.state != .connecting }
    guard connection.state == .ready else { throw RedisTestError.notConnected(connection.closeReason) }
    return connection
}

/// Sends one command and runs the loop until it completed.
@discardableResult
func call(_ connection: RedisConnection, _ arguments: [String], timeout: Duration? = nil) throws -> Result<RedisReply, RedisError> {
    var result: Result<RedisReply, RedisError>?
    connection.send(arguments, timeout: timeout) { result = $0 }
    try RunLoop.current.runUntil(timeout: .seconds(10)) { result != nil }
    guard let result else { throw RedisTestError.noAnswer(arguments) }
    return result
}

/// Runs the loop until the server reports `count` clients blocked in a command (`BLPOP`, `XREAD
/// BLOCK`), asking over `observer`.
func waitUntilBlocked(_ count: Int, asking observer: RedisConnection) throws {
    for _ in 0..<2_000 {
        let info = try call(observer, ["INFO", "clients"])
        // Lines end in "\r\n", one Character: compare whole lines.
        let lines = info.reply?.string?.split(whereSeparator: \.isNewline) ?? []
        if lines.contains("blocked_clients:\(count)") { return }
        _ = try RunLoop.current.run(.default, timeout: .milliseconds(1))
    }
    throw RedisTestError.noAnswer(["INFO", "clients"])
}

extension Result where Success == RedisReply, Failure == RedisError {
    var reply: RedisReply? { try? get() }
    var error: RedisError? {
        if case .failure(let error) = self { error } else { nil }
    }
}
