public import RunLoopChat
public import RunLoopIMCore
import RunLoopPostgres

extension PostgresChatStore {
    /// The account `$1` names, in any case: the exact spelling first, then the lower-case one, then
    /// the first in byte order (a database from before names were folded may hold several).
    static let accountSQL = "lower(name) = lower($1) ORDER BY name = $1 DESC, name = lower($1) DESC, name LIMIT 1"

    /// Replaces the password hash of `user`'s account (any case). Loop thread only; `completion`
    /// runs there once.
    public func setPasswordHash(_ passwordHash: String, of user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        update(user, set: "password_hash = $2::text", where: "true", passwordHash, "password change of \(user)", completion: completion)
    }

    /// Disables or enables `user`'s account (any case): a disabled account's logins are refused, its
    /// data stays; `.unchanged` when it was so already. Loop thread only; `completion` runs there once.
    public func setDisabled(_ disabled: Bool, user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        let flag = PostgresText.bool(disabled)
        update(user, set: "disabled = $2::boolean", where: "a.disabled <> $2::boolean", flag, "account state of \(user)", completion: completion)
    }

    /// Removes `user`'s account (any case) and what is the user's, in one transaction, as the SQLite
    /// store does: memberships and inbox, every message they sent, their direct conversations'
    /// messages from both sides, abandoned ids, their name in `users`. Room messages of others stay.
    /// Loop thread only; `completion` runs there once.
    public func removeAccount(_ user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        guard PostgresText.isStorable(user) else { return completion(.success(.noSuchAccount)) }
        let name = "(SELECT name FROM accounts WHERE \(Self.accountSQL))"
        // Direct conversations are found through the user's member rows, so those go after them.
        let direct = """
            SELECT mb.conversation_id FROM members mb JOIN conversations c ON c.id = mb.conversation_id
            WHERE mb."user" = \(name) AND c.room IS NULL
            """
        let statements = [
            "SELECT \(name)",
            "DELETE FROM messages WHERE sender = \(name) OR conversation_id IN (\(direct))",
            "DELETE FROM members WHERE \"user\" <> \(name) AND conversation_id IN (\(direct))",
            "DELETE FROM members WHERE \"user\" = \(name)",
            "DELETE FROM abandoned WHERE sender = \(name)",
            "DELETE FROM users WHERE name = \(name)",
            "DELETE FROM accounts WHERE name = \(name)"
        ].map { PostgresStatement($0, [user]) }
        transaction(statements, "removal of account \(user)") { result in
            completion(result.map { rows in rows[0][0, 0].map { .done(account: $0) } ?? .noSuchAccount })
        }
    }

    /// One UPDATE of the account `user` names, where `condition` (on `a`) holds.
    private func update(
        _ user: String, set assignment: String, where condition: String, _ value: String, _ operation: String,
        completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void
    ) {
        guard PostgresText.isStorable(user, value) else { return completion(.success(.noSuchAccount)) }
        let statement = PostgresStatement(
            """
            WITH target AS (SELECT name FROM accounts WHERE \(Self.accountSQL)),
            changed AS (UPDATE accounts a SET \(assignment) FROM target t WHERE a.name = t.name AND \(condition) RETURNING a.name)
            SELECT t.name, (SELECT count(*) FROM changed) FROM target t
            """, [user, value])
        query(statement, operation) { result in
            completion(
                result.map { rows in
                    guard rows.count == 1, let name = rows[0, 0] else { return .noSuchAccount }
                    return rows.int(0, 1) == 1 ? .done(account: name) : .unchanged(account: name)
                })
        }
    }
}
