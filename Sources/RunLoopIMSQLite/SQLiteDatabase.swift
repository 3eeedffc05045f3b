import CSQLite

/// Why a SQLite call failed: the result code and SQLite's own message.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { "SQLite error \(code): \(message)" }
}

/// One SQLite connection, opened in WAL mode: a thin, typed layer over the C API with prepared
/// statements cached by SQL text. Not thread-safe: the store that owns it uses it on its loop's thread.
public final class SQLiteDatabase {
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// The file, or ":memory:".
    public let path: String

    /// How much a commit waits for the disk.
    public enum Durability: Sendable {
        /// `synchronous=NORMAL` in WAL mode: a commit survives the process being killed, not a power
        /// loss (the last commits may roll back). SQLite's recommended WAL setting.
        case processCrash
        /// `synchronous=FULL`: every commit is on disk before it returns, at an fsync per commit.
        case powerLoss
    }

    /// Opens (creating if needed) the database at `path` in WAL mode.
    /// - Parameter admit: runs on the open connection before the switch to WAL mode writes to the
    ///   file: it may refuse a file that is not the caller's by throwing, and nothing was written.
    public init(
        path: String, durability: Durability = .processCrash, admit: (SQLiteDatabase) throws(SQLiteError) -> Void = { _ in }
    ) throws(SQLiteError) {
        self.path = path
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(handle)
            handle = nil
            throw SQLiteError(code: status, message: "\(path): \(message)")
        }
        sqlite3_busy_timeout(handle, 5_000)
        try admit(self)
        if path != ":memory:" { try execute("PRAGMA journal_mode=WAL") }
        try execute(durability == .powerLoss ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        try execute("PRAGMA foreign_keys=ON")
    }

    deinit { close() }

    /// Whether the connection is open (``close()`` not called yet).
    public var isOpen: Bool { handle != nil }

    /// Finalizes the statements and closes the connection. Idempotent.
    public func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        if let handle { sqlite3_close(handle) }
        handle = nil
    }

    /// Frees the page cache's unused pages (``SQLiteIMStore``'s reads of a crowd's logins fill it to
    /// its size, in blocks scattered among the crowd's own): the next reads load them again.
    public func releaseMemory() {
        if let handle { sqlite3_db_release_memory(handle) }
    }

    /// Runs SQL with no parameters and no rows (schema, pragmas, transactions).
    public func execute(_ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &error)
        guard status == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "failed"
            sqlite3_free(error)
            throw SQLiteError(code: status, message: message)
        }
    }

    /// Runs `body` in one write transaction (BEGIN IMMEDIATE … COMMIT), rolled back if it throws.
    public func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// A value to bind.
    public enum Value: Equatable, Sendable {
        case integer(Int64)
        case text(String)
        case null
    }

    /// Runs one statement with `parameters` bound in order; calls `row` for each result row.
    public func query(_ sql: String, _ parameters: [Value] = [], row: (Row) throws(SQLiteError) -> Void = { _ in }) throws(SQLiteError) {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in parameters.enumerated() {
            let position = Int32(index + 1)
            let status: Int32
            switch value {
            case .integer(let number): status = sqlite3_bind_int64(statement, position, number)
            case .text(let text):
                // The byte count, not -1: text may hold NUL characters, and -1 would cut it at the first.
                status = text.withCString { sqlite3_bind_text(statement, position, $0, Int32(clamping: text.utf8.count), Self.transient) }
            case .null: status = sqlite3_bind_null(statement, position)
            }
            guard status == SQLITE_OK else { throw lastError(status) }
        }
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else { throw lastError(status) }
            try row(Row(statement: statement))
        }
    }

    /// The work the statement of `sql` did since the last call (SQLite's statement counters, reset by
    /// this call): rows stepped through by full table scans, and virtual-machine steps. `nil`: the
    /// statement was never run. For tests that a query uses its indexes — a count, not a timing.
    package func work(of sql: String) -> (fullScanSteps: Int, virtualMachineSteps: Int)? {
        guard let statement = statements[sql] else { return nil }
        return (
            Int(sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1)),
            Int(sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 1))
        )
    }

    /// How many times the statement of `sql` ran since the last call (reset by this call); `nil`: it
    /// was never prepared. For tests that a batch runs a statement once, not once per item.
    package func runs(of sql: String) -> Int? {
        guard let statement = statements[sql] else { return nil }
        return Int(sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_RUN, 1))
    }

    /// Where the database's contents stand: equal stamps mean nothing was written in between — no
    /// commit by another connection (`PRAGMA data_version`, which changes with each), no row
    /// inserted, updated or deleted through this one (`sqlite3_total_changes64`, triggers' rows
    /// among them; a write rolled back counts too). What a cache of reads is kept by.
    struct ChangeStamp: Equatable {
        let dataVersion: Int64
        let totalChanges: Int64
    }

    /// The stamp now (``ChangeStamp``).
    func changeStamp() throws(SQLiteError) -> ChangeStamp {
        var dataVersion: Int64 = 0
        try query("PRAGMA data_version") { dataVersion = $0.integer(0) }
        return ChangeStamp(dataVersion: dataVersion, totalChanges: sqlite3_total_changes64(handle))
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }
    /// The rowid of the last INSERT.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// One result row; valid only inside the `row` callback.
    public struct Row {
        let statement: OpaquePointer
        public func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
        public func text(_ column: Int32) -> String? {
            guard let bytes = sqlite3_column_text(statement, column) else { return nil }
            // By length, not to the first NUL: stored text may hold NUL characters.
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        }
    }

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw lastError(status) }
        statements[sql] = statement
        return statement
    }

    private func lastError(_ status: Int32) -> SQLiteError {
        SQLiteError(code: status, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed")
    }

    /// SQLITE_TRANSIENT: SQLite copies bound text before the call returns (the C macro is not importable).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
