import RunLoopIMSQLite

/// Accounts in the node's SQLite file: a user name and its scrypt hash, nothing else.
/// Loop thread only, like the database it shares with the message store.
public final class AccountStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) throws(SQLiteError) {
        self.database = database
        try database.execute("CREATE TABLE IF NOT EXISTS accounts(name TEXT PRIMARY KEY, password_hash TEXT NOT NULL) WITHOUT ROWID")
    }

    /// The stored hash of `user`, if the account exists.
    public func passwordHash(of user: String) throws(SQLiteError) -> String? {
        var hash: String?
        try database.query("SELECT password_hash FROM accounts WHERE name = ?", [.text(user)]) { row in hash = row.text(0) }
        return hash
    }

    /// Creates the account unless it exists; returns whether it was created.
    @discardableResult
    public func create(user: String, passwordHash: String) throws(SQLiteError) -> Bool {
        try database.query("INSERT OR IGNORE INTO accounts(name, password_hash) VALUES (?, ?)", [.text(user), .text(passwordHash)])
        guard database.changes == 1 else { return false }
        try database.query("INSERT OR IGNORE INTO users(name) VALUES (?)", [.text(user)])
        return true
    }

    /// Every account name, sorted.
    public func names() throws(SQLiteError) -> [String] {
        var names: [String] = []
        try database.query("SELECT name FROM accounts ORDER BY name") { row in if let name = row.text(0) { names.append(name) } }
        return names
    }

    /// User names: 1 to 32 letters, digits, `_`, `-` or `.` — safe in logs and terminals.
    public static func isValidName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }
}
