/// What a change to one account (a new password, disabled, enabled, removed) did, for the stores
/// that keep accounts and the tools that report it: an operator's command that changed nothing says
/// so and fails.
public enum AccountChange: Equatable, Sendable {
    /// Changed; the account's stored name (the one asked for may differ in case).
    case done(account: String)
    /// No account has that name, in any case.
    case noSuchAccount
    /// The account was in that state already (disabling a disabled account).
    case unchanged(account: String)
}
