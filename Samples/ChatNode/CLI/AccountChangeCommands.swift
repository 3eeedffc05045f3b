import ArgumentParser
import ChatNodeKit
import RunLoopChat
import RunLoopIMCore
import RunLoopKit

extension Account {
    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an account a new password, read from standard input (asked twice at a terminal).",
            discussion: "Sessions online stay logged in; their next login needs the new password.")

        @OptionGroup var account: AccountName

        func run() throws {
            let node = try account.openNode()
            let password = try PasswordInput.read()
            try Account.change(account.name, done: "password changed for") {
                node.setPassword(user: account.name, password: password, completion: $0)
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an account with its memberships, inbox, sent messages and direct conversations.",
            discussion:
                "Room messages of others stay. Sessions online are not ended: stop the node first, or disable the account and remove it once they are gone. With registration on, the name can be taken again by a first login; it starts empty."
        )

        @OptionGroup var account: AccountName

        func run() throws {
            let node = try account.openNode()
            try Account.change(account.name, done: "removed") { node.removeAccount(user: account.name, completion: $0) }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Refuse an account's logins (authenticationFailed, \"account disabled\"); its data stays.",
            discussion: "Sessions online carry on until they end; their next login is refused.")

        @OptionGroup var account: AccountName

        func run() throws { try account.setDisabled(true, done: "disabled", unchanged: "is disabled already") }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let a disabled account log in again.")

        @OptionGroup var account: AccountName

        func run() throws { try account.setDisabled(false, done: "enabled", unchanged: "is not disabled") }
    }

    /// What every command on one account takes: its name and where the node's data is.
    struct AccountName: ParsableArguments {
        @Argument(help: "The account's name (any case).")
        var name: String
        @OptionGroup var storage: StorageOptions
        @OptionGroup var log: LogOptions

        /// Logging set up, and a node on the store that does not listen.
        func openNode() throws -> ChatNode {
            log.bootstrap()
            return try Account.node(storage)
        }

        func setDisabled(_ disabled: Bool, done: String, unchanged: String) throws {
            let node = try openNode()
            try Account.change(name, done: done, unchanged: unchanged) { node.setAccountDisabled(disabled, user: name, completion: $0) }
        }
    }

    /// Runs one account change on the loop and says what it did: "`done` NAME" on stdout, or why
    /// nothing was done on standard error with a failing exit status.
    static func change(
        _ name: String, done: String, unchanged: String = "", _ start: (@escaping (Result<AccountChange, IMStoreFailure>) -> Void) -> Void
    ) throws {
        switch try RunLoop.current.runUntilFinished(start).get() {
        case .done(let account): print("\(done) \(account)")
        case .noSuchAccount: throw NothingDone("no account \(name)")
        case .unchanged(let account): throw NothingDone("\(account) \(unchanged)")
        }
    }

    /// A command that changed nothing: its reason on standard error, exit status 1.
    struct NothingDone: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
