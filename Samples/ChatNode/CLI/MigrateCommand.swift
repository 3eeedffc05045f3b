import ArgumentParser
import ChatNodeKit
import RunLoopKit

/// `chat-node migrate`: creates or upgrades the store's schema.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create or upgrade the schema of a node's store; prints the versions before and after.",
        discussion: """
            With --postgres (or CHAT_NODE_POSTGRES): run it once before the first node starts and after \
            upgrading chat-node; nodes refuse to run on an older or newer schema. Several may run at once. \
            With --database: a node upgrades its SQLite file itself when it opens it; this does the same ahead of time.
            """)

    @OptionGroup var storage: StorageOptions
    @OptionGroup var log: LogOptions

    func run() throws {
        log.bootstrap()
        let storage = try storage.storage()
        let outcome: ChatNodeMigration.Outcome
        switch storage {
        case .sqlite(let path):
            outcome = try StartupFailure.openingDatabase(storage) { try ChatNodeMigration.migrate(sqlitePath: path) }
            print("\(storage): \(outcome) (as a node does when it opens the file)")
            return
        case .postgres(let configuration):
            let result = try RunLoop.current.runUntilFinished { ChatNodeMigration.migrate(postgres: configuration, completion: $0) }
            switch result {
            case .success(let done): outcome = done
            case .failure(let error):
                printError("\(storage): \(error)")
                throw ExitCode.failure
            }
        }
        print("\(storage): \(outcome)")
    }
}
