import ArgumentParser
import ChatNodeKit
import Glibc
import RunLoopIMSQLite

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a node's SQLite database to FILE while the node runs, and check the copy.",
        discussion:
            "Uses SQLite's online backup API on a connection of its own: the node keeps serving. To restore: stop the node, copy FILE over its database (and delete the old database's -wal and -shm files), start it. For PostgreSQL use pg_dump."
    )

    @Argument(help: "Where the copy goes (must not exist).")
    var file: String

    @OptionGroup var storage: StorageOptions

    func run() throws {
        guard case .sqlite(let path) = try storage.storage() else {
            throw ValidationError("backup copies a SQLite file; back a PostgreSQL database up with pg_dump")
        }
        try StartupFailure.requireExistingDatabase(.sqlite(path: path))
        guard access(file, F_OK) != 0 else { throw ValidationError("\(file) exists: give a new file") }
        let report = try SQLiteBackup.copy(from: path, to: file)
        print("backed up \(path) to \(file): \(report.pages) pages, integrity ok")
    }
}
