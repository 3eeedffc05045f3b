import RunLoopChat
public import RunLoopIM
public import RunLoopIMCore
import RunLoopPostgres

extension PostgresChatStore {
    /// Decides a login by ``authentication``: ``Authentication/open`` accepts it and records the
    /// name in `users`; ``Authentication/accounts`` looks the name up in `accounts` in any case and
    /// checks the password against its scrypt hash on a password thread, never on the loop —
    /// `.acceptedAs` the account's stored name, `IMLoginVerdict.accountDisabled` for a disabled
    /// account, or refused. A database failure refuses with
    /// `internalError` (the client tries again later). Loop thread only; `completion` runs there once.
    public func authenticate(_ login: IMLoginAttempt, completion: @escaping (IMLoginVerdict) -> Void) {
        guard PostgresText.isStorable(login.user) else { return completion(Self.unknownOrWrong) }
        switch authentication {
        case .open:
            query(PostgresStatement("INSERT INTO users(name) VALUES ($1) ON CONFLICT DO NOTHING", [login.user]), "login of \(login.user)") {
                result in
                completion(result.map { _ in .accepted }.get(or: Self.storageFailure))
            }
        case .accounts:
            let lookup = PostgresStatement(
                """
                SELECT name, password_hash, disabled FROM accounts WHERE \(Self.accountSQL)
                """, [login.user])
            let password = login.password
            query(lookup, "account of \(login.user)") { result in
                guard case .success(let rows) = result else { return completion(Self.storageFailure) }
                guard rows.count == 1, let name = rows[0, 0], let hash = rows[0, 1] else { return completion(Self.unknownOrWrong) }
                let disabled = rows[0, 2] == "t"
                self.passwordWorkers.run({ PasswordHasher.verify(password, against: hash) }) { matched in
                    // Only the right password learns that the account is disabled.
                    completion(matched ? (disabled ? .accountDisabled : .acceptedAs(user: name)) : Self.unknownOrWrong)
                }
            }
        }
    }

    /// Creates the account `user` in lower case with an scrypt hash (``PasswordHasher``) unless one
    /// exists under any case; completes with whether it was created. The name joins `users` too.
    /// Loop thread only; `completion` runs there once.
    public func createAccount(
        _ user: String, passwordHash: String, completion: @escaping (Result<Bool, IMStoreFailure>) -> Void
    ) {
        guard PostgresText.isStorable(user, passwordHash) else { return completion(.success(false)) }
        let statements = [
            PostgresStatement(
                """
                INSERT INTO accounts(name, password_hash) SELECT lower($1), $2::text
                WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE lower(name) = lower($1)) ON CONFLICT DO NOTHING
                """, [user, passwordHash]),
            PostgresStatement("INSERT INTO users(name) VALUES (lower($1)) ON CONFLICT DO NOTHING", [user])
        ]
        transaction(statements, "account creation of \(user)") { result in
            completion(result.map { $0[0].affectedRows == 1 })
        }
    }

    private static let unknownOrWrong = IMLoginVerdict.refused(.authenticationFailed, reason: "unknown user or wrong password")
    private static let storageFailure = IMLoginVerdict.refused(.internalError, reason: "storage failure")
}

extension Result {
    /// The value, or `fallback` for any failure (already logged where it arose).
    fileprivate func get(or fallback: Success) -> Success { (try? get()) ?? fallback }
}
