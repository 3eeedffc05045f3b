import RunLoopChat
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopPostgres

/// The accounts of a PostgreSQL node: the store's `accounts` table, which every node sharing the
/// database sees. Passwords are checked by the store's own `authenticate`, on its password threads.
final class PostgresNodeAccounts: NodeAccounts {
    private let database: PostgresNodeDatabase
    private var store: PostgresChatStore { database.store }

    init(database: PostgresNodeDatabase) {
        self.database = database
    }

    func check(_ login: IMLoginAttempt, completion: @escaping (AccountCheck) -> Void) {
        // The store's verdict cannot tell a wrong password from a missing account, which registration
        // at first login needs to know: ask first (a race with a creation on another node just makes
        // that login try to create the account and find it there).
        let exists = PostgresStatement("SELECT 1 FROM accounts WHERE lower(name) = lower($1) LIMIT 1", [login.user])
        database.query(exists, "account lookup of \(login.user)") { [store = self.store] result in
            guard case .success(let rows) = result else { return completion(.failed) }
            guard rows.count > 0 else { return completion(.noSuchAccount) }
            store.authenticate(login) { verdict in
                switch verdict {
                case let refusal where refusal == IMLoginVerdict.accountDisabled: completion(.disabled(account: login.user))
                case .accepted: completion(.accepted(as: login.user))
                case .acceptedAs(let name), .created(let name): completion(.accepted(as: name))
                case .refused(.authenticationFailed, _), .accountUnknown: completion(.wrongPassword(account: login.user))
                case .refused: completion(.failed)
                }
            }
        }
    }

    func create(_ user: String, passwordHash: String, completion: @escaping (Result<Bool, IMStoreFailure>) -> Void) {
        store.createAccount(user, passwordHash: passwordHash, completion: completion)
    }

    func setPasswordHash(_ passwordHash: String, of user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        store.setPasswordHash(passwordHash, of: user, completion: completion)
    }

    func setDisabled(_ disabled: Bool, user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        store.setDisabled(disabled, user: user, completion: completion)
    }

    func remove(_ user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        store.removeAccount(user, completion: completion)
    }

    func names(completion: @escaping (Result<[String], IMStoreFailure>) -> Void) {
        database.query(PostgresStatement("SELECT name FROM accounts ORDER BY name"), "account list") { result in
            completion(result.map { rows in (0..<rows.count).compactMap { rows[$0, 0] } })
        }
    }
}
