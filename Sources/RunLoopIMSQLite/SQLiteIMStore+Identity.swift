import CSQLite

/// Which files the store opens: its own, marked by `PRAGMA application_id` (the header's "which
/// program wrote this"), and new ones, which it marks. Another program's SQLite file is refused before
/// anything is written to it, so a wrong `--database` never turns someone's data into a chat store.
extension SQLiteIMStore {
    /// `PRAGMA application_id` of the store's files: "RLIM" (RunLoopKit IM) in ASCII.
    public static let applicationID: Int32 = 0x524C_494D

    /// Every table a store of any schema version created (the message store's and ``AccountStore``'s):
    /// a file written before files were marked is known by them.
    static let knownTables: Set<String> = [
        "conversations", "messages", "members", "abandoned", "users", "accounts", "inbox", "room_members"
    ]

    /// What a file holds, from its `application_id` and its tables (SQLite's own, `sqlite_…`, aside).
    enum FileIdentity: Equatable {
        /// No table and no mark: a new (or empty) file, to be marked.
        case new
        /// Marked as the store's.
        case ours
        /// The store's tables and no mark: written before files were marked, to be marked.
        case oursUnmarked
        /// Another program's mark.
        case foreignApplication(Int32)
        /// No mark, and tables the store never makes (some of them).
        case foreignTables([String])
    }

    static func identity(applicationID: Int32, tables: [String]) -> FileIdentity {
        let tables = tables.filter { !$0.hasPrefix("sqlite_") }
        if applicationID == Self.applicationID { return .ours }
        if applicationID != 0 { return .foreignApplication(applicationID) }
        if tables.isEmpty { return .new }
        let strangers = tables.filter { !knownTables.contains($0) }.sorted()
        // Every schema had `messages`: a file with only `users`, say, is no store of ours.
        guard strangers.isEmpty, tables.contains("messages") else { return .foreignTables(strangers.isEmpty ? tables.sorted() : strangers) }
        return .oursUnmarked
    }

    /// For ``SQLiteDatabase/init(path:durability:admit:)``: refuses another program's file (SQLite's
    /// own error for a file that is no database), and marks a new file or an unmarked one of the store's.
    /// - Throws: `SQLITE_ERROR` naming the file and what it holds; nothing was written to it.
    public static func admit(_ database: SQLiteDatabase) throws(SQLiteError) {
        var applicationID: Int32 = 0
        try database.query("PRAGMA application_id") { row in applicationID = Int32(truncatingIfNeeded: row.integer(0)) }
        var tables: [String] = []
        try database.query("SELECT name FROM sqlite_schema WHERE type = 'table'") { row in
            if let name = row.text(0) { tables.append(name) }
        }
        switch identity(applicationID: applicationID, tables: tables) {
        case .ours:
            return
        case .new, .oursUnmarked:
            try database.execute("PRAGMA application_id = \(Self.applicationID)")
        case .foreignApplication(let other):
            throw refusal(database.path, "another program's SQLite database (its application_id is \(describe(other)))")
        case .foreignTables(let names):
            let shown = names.prefix(5).joined(separator: ", ") + (names.count > 5 ? ", …" : "")
            throw refusal(database.path, "another program's SQLite database (tables \(shown))")
        }
    }

    private static func refusal(_ path: String, _ what: String) -> SQLiteError {
        SQLiteError(code: SQLITE_ERROR, message: "\(path) is \(what), not a chat store: refused, nothing written to it")
    }

    /// An application id in hex, and as its four letters when they are printable ASCII (many are).
    static func describe(_ id: Int32) -> String {
        let value = UInt32(bitPattern: id)
        let digits = String(value, radix: 16, uppercase: true)
        let hex = "0x" + String(repeating: "0", count: 8 - digits.count) + digits
        let bytes = (0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return hex }
        return "\(hex), \"\(String(decoding: bytes, as: UTF8.self))\""
    }
}
