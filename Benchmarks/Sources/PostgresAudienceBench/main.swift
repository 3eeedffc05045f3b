// pg-audience-bench: the PostgreSQL store answering the audiences of presence changes (issue 22) —
// each user's contacts read on its own (`contacts(of:)`, one statement per user, the batch's
// statements pipelined in one round trip) against one read for the batch (`contacts(ofEach:)`, one
// statement). A throw-away PostgreSQL (RunLoopTesting's, unix socket) with ROOMS rooms of MEMBERS
// users each; every user's audience asked, BATCH users at a time (as the IM server settles a crowd
// leaving: about ten users of a room of 1,000 a pass), one batch after the other.
//
//   pg-audience-bench [--rooms 4] [--members 1000] [--batch 10] [--limit 1000] [--runs 3]
//
// Prints one line per mode and run: wall time, this process's CPU, the server backend's CPU, the
// statements and round trips (pipeline syncs) sent, and the contacts found (equal in both modes, or
// it fails).
import ChatBenchKit
import Glibc
import RunLoopChatPostgres
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting

struct Options {
    var rooms = 4
    var members = 1_000
    var batch = 10
    var limit = 1_000
    var runs = 3

    init(_ arguments: [String]) {
        var index = 0
        while index + 1 < arguments.count {
            let value = Int(arguments[index + 1]) ?? 0
            switch arguments[index] {
            case "--rooms": rooms = value
            case "--members": members = value
            case "--batch": batch = value
            case "--limit": limit = value
            case "--runs": runs = value
            default: usage("unknown option \(arguments[index])")
            }
            index += 2
        }
        guard rooms > 0, members > 1, batch > 0, runs > 0 else { usage("every value must be positive (members over 1)") }
    }
}

func usage(_ message: String) -> Never {
    print("pg-audience-bench: \(message)\nusage: pg-audience-bench [--rooms 4] [--members 1000] [--batch 10] [--limit 1000] [--runs 3]")
    exit(2)
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `operation` and the loop until its completion came; its value.
func wait<Value>(_ loop: RunLoop, _ operation: (@escaping (Value) -> Void) -> Void) throws -> Value {
    var value: Value?
    operation { value = $0 }
    guard try spin(loop, for: .seconds(600), until: { value != nil }), let value else { throw BenchFailure("no answer in 600 s") }
    return value
}

@discardableResult
func execute(_ connection: PostgresConnection, _ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
    try wait(connection.loop) { connection.query(sql, parameters, completion: $0) }.mapError { BenchFailure("\(sql): \($0)") }.get()
}

/// A store over a new connection to `server`, whose database holds `options`' rooms; the users in
/// room order, so each batch is users of one room, as a crowd leaves.
func populatedStore(_ server: PostgresServer, _ options: Options) throws -> (PostgresConnection, PostgresChatStore, [String]) {
    let loop = RunLoop.current
    let connection = PostgresConnection(
        configuration: PostgresConfiguration(host: server.socketDirectory, port: server.port, user: server.user, database: server.database))
    connection.connect()
    _ = try spin(loop, for: .seconds(60)) { connection.state != .connecting }
    guard connection.state == .ready else { throw BenchFailure("no connection: \(String(describing: connection.closeReason))") }
    if case .failure(let error) = try wait(loop, { ChatSchema.migrate(on: connection, completion: $0) }) {
        throw BenchFailure("migration: \(error)")
    }
    var users: [String] = []
    for room in 0..<options.rooms {
        let key = IMConversation.room("room\(room)").storageKey
        let id = try execute(connection, "INSERT INTO conversations(key, room) VALUES ($1, $2) RETURNING id", [key, "room\(room)"])[0, 0]
        let first = room * options.members
        try execute(
            connection,
            "INSERT INTO members(\"user\", conversation_id, acked_through) SELECT 'u' || g, $1::bigint, 0 FROM generate_series($2::int, $3::int) g",
            [id, String(first), String(first + options.members - 1)])
        users += (first..<first + options.members).map { "u\($0)" }
    }
    try execute(connection, "ANALYZE")
    return (connection, PostgresChatStore(connection: connection, authentication: .open), users)
}

/// Every batch's audiences, read per user or per batch: the contacts found, summed.
func askAll(_ store: PostgresChatStore, _ batches: [[String]], limit: Int, batchRead: Bool) throws -> Int {
    var found = 0
    for batch in batches {
        if batchRead {
            let lists = try wait(store.loop) { store.contacts(ofEach: batch, roomsOfAtMost: limit, completion: $0) }
                .mapError { BenchFailure("batch read: \($0)") }.get()
            found += lists.reduce(0) { $0 + $1.count }
        } else {
            var answers = 0
            var failure: IMStatusCode?
            for user in batch {
                store.contacts(of: user, roomsOfAtMost: limit) { result in
                    switch result {
                    case .success(let contacts): found += contacts.count
                    case .failure(let code): failure = code
                    }
                    answers += 1
                }
            }
            guard try spin(store.loop, for: .seconds(600), until: { answers == batch.count }) else { throw BenchFailure("no answers in 600 s") }
            if let failure { throw BenchFailure("per-user read: \(failure)") }
        }
    }
    return found
}

func milliseconds(_ nanoseconds: UInt64) -> Int { Int(nanoseconds / 1_000_000) }

func run(_ server: PostgresServer, _ options: Options) throws {
    let (connection, store, users) = try populatedStore(server, options)
    guard let backend = try execute(connection, "SELECT pg_backend_pid()").int(0, 0).map(Int32.init) else { throw BenchFailure("no backend pid") }
    let batches = stride(from: 0, to: users.count, by: options.batch).map { Array(users[$0..<min(users.count, $0 + options.batch)]) }
    print("users \(users.count) in \(options.rooms) rooms of \(options.members), batches of \(options.batch), large over \(options.limit)")
    var expected: Int?
    for round in 1...options.runs {
        for batchRead in [false, true] {
            let (statements, syncs) = (connection.statementCount, connection.pipelineSyncCount)
            let (client, backendBefore) = (ProcessStats.ownCPUNanoseconds(), ProcessStats.cpuNanoseconds(of: backend))
            let start = ContinuousClock.now
            let found = try askAll(store, batches, limit: options.limit, batchRead: batchRead)
            let wall = (ContinuousClock.now - start).components
            if let expected, expected != found { throw BenchFailure("contacts found differ: \(found), expected \(expected)") }
            expected = found
            print(
                "run \(round) \(batchRead ? "batch   " : "per-user"): wall \(wall.seconds * 1_000 + wall.attoseconds / 1_000_000_000_000_000) ms, "
                    + "client CPU \(milliseconds(ProcessStats.ownCPUNanoseconds() - client)) ms, "
                    + "backend CPU \(milliseconds(ProcessStats.cpuNanoseconds(of: backend) - backendBefore)) ms, "
                    + "statements \(connection.statementCount - statements), round trips \(connection.pipelineSyncCount - syncs), contacts \(found)")
        }
    }
}

/// The run; the server stops and its directory goes when it returns (its deinit).
func main() -> Int32 {
    let options = Options(Array(CommandLine.arguments.dropFirst()))
    let server: PostgresServer
    do { server = try PostgresServer.startBlocking() } catch {
        print("pg-audience-bench: no PostgreSQL: \(error)")
        return 1
    }
    do {
        try run(server, options)
        return 0
    } catch {
        print("pg-audience-bench: \(error)")
        return 1
    }
}

exit(main())
