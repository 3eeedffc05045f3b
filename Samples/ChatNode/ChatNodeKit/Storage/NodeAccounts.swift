import RunLoopChat
import RunLoopIM
import RunLoopIMCore

/// What looking up a login's account gave.
enum AccountCheck: Equatable {
    /// The account exists and the password matches: the session's user is its stored name.
    case accepted(as: String)
    case wrongPassword(account: String)
    /// The password matches a disabled account: refused, and no account is created.
    case disabled(account: String)
    case noSuchAccount
    /// The store failed (logged where it happened): the client may try again later.
    case failed
}

/// The accounts a node's logins are checked against, in whichever store it runs on. Asynchronous
/// like the store protocol: loop thread only, each completion once on that thread (at once for
/// SQLite). Password hashes are checked off the loop.
protocol NodeAccounts: AnyObject {
    /// Looks the login's name up in any case and, when found, checks its password.
    func check(_ login: IMLoginAttempt, completion: @escaping (AccountCheck) -> Void)
    /// Creates `user` in lower case unless an account of that name exists in any case: whether it did.
    func create(_ user: String, passwordHash: String, completion: @escaping (Result<Bool, IMStoreFailure>) -> Void)
    /// Every account's name.
    func names(completion: @escaping (Result<[String], IMStoreFailure>) -> Void)
    /// Replaces the password hash of the account `user` names in any case.
    func setPasswordHash(_ passwordHash: String, of user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void)
    /// Disables or enables the account `user` names in any case (`.unchanged`: it was so already).
    func setDisabled(_ disabled: Bool, user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void)
    /// Removes the account `user` names in any case, with the user's memberships, inbox, sent
    /// messages and direct conversations.
    func remove(_ user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void)
}
