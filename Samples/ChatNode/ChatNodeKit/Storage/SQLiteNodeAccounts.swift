import Logging
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite

/// The accounts of a SQLite node: its file's `accounts` table, read and written at once.
final class SQLiteNodeAccounts: NodeAccounts {
    let accounts: AccountStore
    private let passwordWorkers: PasswordWorkers
    private let logger: Logger

    init(accounts: AccountStore, passwordWorkers: PasswordWorkers, logger: Logger) {
        self.accounts = accounts
        self.passwordWorkers = passwordWorkers
        self.logger = logger
    }

    func check(_ login: IMLoginAttempt, completion: @escaping (AccountCheck) -> Void) {
        let account: AccountStore.Account?
        do {
            account = try accounts.account(named: login.user)
        } catch {
            logger.error("account \(login.user) not read: \(error)")
            return completion(.failed)
        }
        guard let account else { return completion(.noSuchAccount) }
        let password = login.password
        let stored = account.passwordHash
        passwordWorkers.run({ PasswordHasher.verify(password, against: stored) }) { matched in
            completion(matched ? .accepted(as: account.name) : .wrongPassword(account: account.name))
        }
    }

    func create(_ user: String, passwordHash: String, completion: @escaping (Result<Bool, IMStoreFailure>) -> Void) {
        completion(
            Result { try accounts.create(user: user, passwordHash: passwordHash) }.mapError {
                IMStoreFailure("create account \(user)", reason: "\($0)")
            })
    }

    func names(completion: @escaping (Result<[String], IMStoreFailure>) -> Void) {
        completion(Result { try accounts.names() }.mapError { IMStoreFailure("list accounts", reason: "\($0)") })
    }
}
