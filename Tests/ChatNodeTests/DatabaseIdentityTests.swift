import Foundation
import Glibc
import RunLoopTesting
import Testing

@testable import RunLoopIMSQLite

/// The node's SQLite file says it is the node's (`PRAGMA application_id`), and a file that is
/// another program's is refused without a byte written to it.
@Suite("the database is ours: application_id")
struct DatabaseIdentityTests {
    @Test("a new file is marked with the store's application_id; user_version stays the schema's")
    func newFileMarked() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        try SQLiteIMStore(path: path).database.close()
        #expect(try pragma("application_id", path) == Int64(SQLiteIMStore.applicationID))
        #expect(try pragma("user_version", path) == SQLiteIMStore.schemaVersion)
    }

    @Test("a file of ours from before the mark (known by its tables) opens, keeps its data, and is marked")
    func olderFileOfOurs() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let store = try SQLiteIMStore(path: path)
        _ = try AccountStore(database: store.database).create(user: "alice", passwordHash: "hash")
        try store.database.execute("PRAGMA application_id = 0")
        store.database.close()
        #expect(try pragma("application_id", path) == 0)

        let reopened = try SQLiteIMStore(path: path)
        #expect(try AccountStore(database: reopened.database).account(named: "alice") != nil)
        reopened.database.close()
        #expect(try pragma("application_id", path) == Int64(SQLiteIMStore.applicationID))
    }

    @Test("another program's SQLite file, by its application_id or by its tables, is refused by name and left as it was")
    func foreignFiles() throws {
        let geoPackage = try foreignFile("PRAGMA application_id = 1196444487; CREATE TABLE gpkg_contents(table_name TEXT)")
        let notes = try foreignFile("CREATE TABLE notes(body TEXT); CREATE TABLE users(name TEXT)")
        let onlyUsers = try foreignFile("CREATE TABLE users(name TEXT PRIMARY KEY)")
        defer { [geoPackage, notes, onlyUsers].forEach(removeDatabase) }
        let expected = [
            (geoPackage, "is another program's SQLite database (its application_id is 0x47504B47, \"GPKG\"), not a chat store"),
            (notes, "is another program's SQLite database (tables notes), not a chat store"),
            (onlyUsers, "is another program's SQLite database (tables users), not a chat store")
        ]
        for (path, what) in expected {
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            do {
                _ = try SQLiteIMStore(path: path)
                Issue.record("\(path) was opened")
            } catch {
                #expect(error.message.contains("\(path) \(what): refused, nothing written to it"), "\(error)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "\(path) was written to")
            #expect(access(path + "-wal", F_OK) != 0, "\(path) got a write-ahead log")
        }
    }

    @Test("a file that is no SQLite database is refused as such and left as it was")
    func notSQLite() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let text = Data(String(repeating: "a diary, not a database\n", count: 200).utf8)
        try text.write(to: URL(fileURLWithPath: path))
        #expect(throws: SQLiteError.self) { try SQLiteIMStore(path: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == text)
        #expect(access(path + "-wal", F_OK) != 0)
    }

    @Test("chat-node serve and account refuse another program's file, naming it and what it is")
    func commandLine() throws {
        let path = try foreignFile("CREATE TABLE photos(id INTEGER PRIMARY KEY)")
        defer { removeDatabase(path) }
        for arguments in [["account", "list"], ["serve", "--port", "0", "--no-http"]] {
            let result = try runCommand([ChatNodeBinary.path] + arguments + ["--database", path])
            #expect(result.status != 0)
            #expect(
                result.errorOutput.contains("\(path) is another program's SQLite database (tables photos), not a chat store"),
                "\(arguments): \(result.errorOutput)")
        }
    }

    /// A SQLite file in rollback-journal mode (as most programs leave theirs) made by `sql`.
    private func foreignFile(_ sql: String) throws -> String {
        let path = temporaryDatabase()
        let database = try SQLiteDatabase(path: path)
        try database.execute(sql)
        try database.execute("PRAGMA journal_mode = DELETE")
        database.close()
        return path
    }

    private func pragma(_ name: String, _ path: String) throws -> Int64 {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        var value: Int64 = -1
        try database.query("PRAGMA \(name)") { value = $0.integer(0) }
        return value
    }
}

@Suite("application_id: what a file is")
struct DatabaseIdentityDecisionTests {
    @Test("a mark decides; without one, the tables: none is new, ours (with messages) is ours, any other is foreign")
    func identity() {
        let ours = SQLiteIMStore.applicationID
        #expect(SQLiteIMStore.identity(applicationID: ours, tables: ["anything"]) == .ours)
        #expect(SQLiteIMStore.identity(applicationID: 7, tables: []) == .foreignApplication(7))
        #expect(SQLiteIMStore.identity(applicationID: 0, tables: ["sqlite_sequence"]) == .new)
        #expect(SQLiteIMStore.identity(applicationID: 0, tables: ["messages", "inbox", "room_members", "sqlite_sequence"]) == .oursUnmarked)
        #expect(SQLiteIMStore.identity(applicationID: 0, tables: ["messages", "photos"]) == .foreignTables(["photos"]))
        #expect(SQLiteIMStore.identity(applicationID: 0, tables: ["users"]) == .foreignTables(["users"]))
        #expect(SQLiteIMStore.describe(1_196_444_487) == "0x47504B47, \"GPKG\"")
        #expect(SQLiteIMStore.describe(-1) == "0xFFFFFFFF")
    }
}
