import ArgumentParser
import ChatNodeKit
import Glibc
import RunLoopKit
import RunLoopPostgres

/// Where a subcommand finds the node's data: `--database FILE` (SQLite, the default) or
/// `--postgres URL` (also `CHAT_NODE_POSTGRES`; the flag wins).
struct StorageOptions: ParsableArguments {
    @Option(help: "SQLite file for accounts, rooms, history and undelivered messages (default: chat-node.db).")
    var database: String?

    @Option(
        help: ArgumentHelp(
            "PostgreSQL instead of SQLite: postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?host=/socket/dir] (libpq's URI or key=value form).",
            discussion: "Also read from CHAT_NODE_POSTGRES; the flag wins. Run `chat-node migrate` first."))
    var postgres: String?

    func validate() throws {
        guard database == nil || postgresURL == nil else { throw ValidationError("use --database or --postgres, not both") }
        _ = try storage()
    }

    /// The flag, else the environment.
    private var postgresURL: String? { postgres ?? environment("CHAT_NODE_POSTGRES") }

    /// The storage the options name; libpq's own message for a URL it cannot read.
    func storage() throws -> ChatNodeStorage {
        guard let url = postgresURL else { return .sqlite(path: database ?? "chat-node.db") }
        do {
            return .postgres(try PostgresURL.parse(url))
        } catch {
            throw ValidationError("\(error)")
        }
    }
}

/// The non-empty value of an environment variable.
func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
}

extension RunLoop {
    /// Runs the loop until `start`'s `finish` was called, then returns what it was given: for the
    /// one-shot subcommands whose work completes on the loop.
    func runUntilFinished<Value>(_ start: (@escaping (Value) -> Void) -> Void) throws -> Value {
        var value: Value?
        start { value = $0 }
        // A timer that never fires keeps the mode from looking empty while the work waits on a thread.
        let keepAlive = RunLoopTimer(after: .seconds(86_400), label: "chat-node.wait") { _ in }
        add(keepAlive, forMode: .default)
        defer { keepAlive.invalidate() }
        while value == nil { try run(.default, timeout: .milliseconds(100)) }
        return value!
    }
}
