public import RunLoopChat

/// Accounts in the node's SQLite file: a user name, its scrypt hash, and whether it is disabled.
/// Loop thread only, like the database it shares with the message store.
///
/// User names ignore case: `Alice`, `ALICE` and `alice` are one account. New accounts are stored in
/// lower case, which is then the user's name everywhere (sessions, messages, rooms, presence). A
/// database from before this rule may hold mixed-case names: they keep working — looked up whatever
/// the case, and keeping the name they were stored with (their messages and rooms use it).
public final class AccountStore {
    /// An account as stored.
    public struct Account: Equatable, Sendable {
        /// The canonical name: what the user is called once logged in.
        public let name: String
        public let passwordHash: String
        /// A disabled account's logins are refused; its data stays.
        public let isDisabled: Bool
    }

    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) throws(SQLiteError) {
        self.database = database
        // `disabled` came with schema version 3; the store's upgrade adds it to an older table.
        try database.execute(
            "CREATE TABLE IF NOT EXISTS accounts(name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID"
        )
        // Not UNIQUE: an older database may hold names that differ only in case (see ``account(named:)``).
        try database.execute("CREATE INDEX IF NOT EXISTS accounts_by_folded_name ON accounts(name COLLATE NOCASE)")
    }

    /// The account `user` names, whatever the case of its letters. Should an older database hold
    /// several names that differ only in case, the exact spelling wins, then the lower-case one, then
    /// the first in byte order.
    public func account(named user: String) throws(SQLiteError) -> Account? {
        var account: Account?
        try database.query(
            """
            SELECT name, password_hash, disabled FROM accounts WHERE name = ?1 COLLATE NOCASE
            ORDER BY name = ?1 DESC, name = lower(?1) DESC, name LIMIT 1
            """, [.text(user)]
        ) { row in
            if let name = row.text(0), let hash = row.text(1) { account = Account(name: name, passwordHash: hash, isDisabled: row.integer(2) != 0) }
        }
        return account
    }

    /// The stored hash of `user`'s account (any case), if it exists.
    public func passwordHash(of user: String) throws(SQLiteError) -> String? {
        try account(named: user)?.passwordHash
    }

    /// Creates the account `user` in lower case unless one exists under any case; returns whether it
    /// was created.
    @discardableResult
    public func create(user: String, passwordHash: String) throws(SQLiteError) -> Bool {
        let name = user.lowercased()
        // One statement: the check and the insert cannot be split by another writer.
        try database.query(
            """
            INSERT INTO accounts(name, password_hash) SELECT ?1, ?2
            WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE name = ?1 COLLATE NOCASE)
            """, [.text(name), .text(passwordHash)])
        guard database.changes == 1 else { return false }
        try database.query("INSERT OR IGNORE INTO users(name) VALUES (?)", [.text(name)])
        return true
    }

    /// Replaces the password hash of `user`'s account (any case).
    public func setPasswordHash(_ passwordHash: String, of user: String) throws(SQLiteError) -> AccountChange {
        guard let account = try account(named: user) else { return .noSuchAccount }
        try database.query("UPDATE accounts SET password_hash = ? WHERE name = ?", [.text(passwordHash), .text(account.name)])
        return .done(account: account.name)
    }

    /// Disables or enables `user`'s account (any case): a disabled account's logins are refused, its
    /// messages, inbox and rooms stay. `.unchanged` when it was so already.
    public func setDisabled(_ disabled: Bool, user: String) throws(SQLiteError) -> AccountChange {
        guard let account = try account(named: user) else { return .noSuchAccount }
        guard account.isDisabled != disabled else { return .unchanged(account: account.name) }
        try database.query("UPDATE accounts SET disabled = ? WHERE name = ?", [.integer(disabled ? 1 : 0), .text(account.name)])
        return .done(account: account.name)
    }

    /// Removes `user`'s account (any case) and everything that is the user's, in one transaction:
    /// their room memberships and inbox (their cursors), every message they sent, their direct
    /// conversations' messages from both sides, their abandoned ids, and their name from the users a
    /// direct message may go to. Room messages of others stay. So a later account of the same name
    /// starts empty: it reads no old private history and none of its message ids collide.
    public func remove(user: String) throws(SQLiteError) -> AccountChange {
        try database.transaction { () throws(SQLiteError) -> AccountChange in
            guard let account = try account(named: user) else { return .noSuchAccount }
            for sql in Self.removalSQL { try database.query(sql, [.text(account.name)]) }
            return .done(account: account.name)
        }
    }

    /// ``remove(user:)``'s statements, in order: the direct conversations are found through the user's
    /// member rows, so those go last.
    static let removalSQL = [
        """
        DELETE FROM messages WHERE sender = ?1 OR conversation_id IN (
            SELECT mb.conversation_id FROM members mb JOIN conversations c ON c.id = mb.conversation_id WHERE mb.user = ?1 AND c.room IS NULL)
        """,
        """
        DELETE FROM members WHERE user <> ?1 AND conversation_id IN (
            SELECT mb.conversation_id FROM members mb JOIN conversations c ON c.id = mb.conversation_id WHERE mb.user = ?1 AND c.room IS NULL)
        """,
        "DELETE FROM members WHERE user = ?1",
        "DELETE FROM abandoned WHERE sender = ?1",
        "DELETE FROM users WHERE name = ?1",
        "DELETE FROM accounts WHERE name = ?1"
    ]

    /// Every account name, sorted.
    public func names() throws(SQLiteError) -> [String] {
        var names: [String] = []
        try database.query("SELECT name FROM accounts ORDER BY name") { row in if let name = row.text(0) { names.append(name) } }
        return names
    }

    /// User names: 1 to 32 ASCII letters, digits, `_`, `-` or `.` — safe in logs and terminals, and
    /// case-folded the same way by Swift and SQLite.
    public static func isValidName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: ".")
            }
    }
}
