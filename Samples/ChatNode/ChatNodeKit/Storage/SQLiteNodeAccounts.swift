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
            guard matched else { return completion(.wrongPassword(account: account.name)) }
            completion(account.isDisabled ? .disabled(account: account.name) : .accepted(as: account.name))
        }
    }

    func create(_ user: String, passwordHash: String, completion: @escaping (Result<Bool, IMStoreFailure>) -> Void) {
        completion(answer("create account \(user)") { () throws(SQLiteError) in try accounts.create(user: user, passwordHash: passwordHash) })
    }

    func names(completion: @escaping (Result<[String], IMStoreFailure>) -> Void) {
        completion(answer("list accounts", accounts.names))
    }

    func setPasswordHash(_ passwordHash: String, of user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        completion(answer("change the password of \(user)") { () throws(SQLiteError) in try accounts.setPasswordHash(passwordHash, of: user) })
    }

    func setDisabled(_ disabled: Bool, user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        completion(answer("change the state of \(user)") { () throws(SQLiteError) in try accounts.setDisabled(disabled, user: user) })
    }

    func remove(_ user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        completion(answer("remove account \(user)") { () throws(SQLiteError) in try accounts.remove(user: user) })
    }

    /// What `body` gave, or its SQLite error as a store failure about `operation`.
    private func answer<Value>(_ operation: String, _ body: () throws(SQLiteError) -> Value) -> Result<Value, IMStoreFailure> {
        do {
            return .success(try body())
        } catch {
            return .failure(IMStoreFailure(operation, reason: "\(error)"))
        }
    }
}
