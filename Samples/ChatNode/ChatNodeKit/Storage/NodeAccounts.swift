import RunLoopChat
import RunLoopIM
import RunLoopIMCore

/// What looking up a login's account gave.
enum AccountCheck: Equatable {
    /// The account exists and the password matches: the session's user is its stored name.
    case accepted(as: String)
    case wrongPassword(account: String)
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
}
