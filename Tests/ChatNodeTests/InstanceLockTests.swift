import ChatNodeKit
import Foundation
import Glibc
import RunLoopPostgres
import RunLoopTesting
import Testing

/// One `chat-node serve` per SQLite file: the lock beside it, in one process and between two.
@Suite("single instance: the lock beside the database")
struct InstanceLockTests {
    @Test("a second lock on the file is refused with the holder's pid; released, the file is gone and the lock free")
    func inProcess() throws {
        let database = temporaryDatabase()
        defer { removeDatabase(database) }
        var first: InstanceLock? = try InstanceLock(database: database)
        #expect(first?.path == database + ".lock")
        // flock locks an open file, not a process: a second open of it in this process conflicts too.
        #expect(throws: InstanceLock.Failure.held(database: database, lockFile: database + ".lock", pid: getpid())) {
            try InstanceLock(database: database)
        }
        first?.release()
        #expect(access(database + ".lock", F_OK) != 0)
        first = nil
        let second = try InstanceLock(database: database)
        second.release()
    }

    @Test("a refused lock leaves the holder's file alone: it stays, with the holder's pid, and the next try is refused too")
    func refusalKeepsTheHoldersFile() throws {
        let database = temporaryDatabase()
        defer { removeDatabase(database) }
        let lockFile = database + ".lock"
        let first = try InstanceLock(database: database)
        defer { first.release() }
        let identity = try #require(fileIdentity(atPath: lockFile))
        let refusal = InstanceLock.Failure.held(database: database, lockFile: lockFile, pid: getpid())
        #expect(throws: refusal) { try InstanceLock(database: database) }
        // A refusal that tidied up as a holder does (unlink, close) would free the path for a third node.
        #expect(fileIdentity(atPath: lockFile) == identity)
        #expect(throws: refusal) { try InstanceLock(database: database) }
    }

    @Test("a stale pid in a lock file nobody holds (a node killed with -9) does not keep the next from starting")
    func staleFile() throws {
        let database = temporaryDatabase()
        defer { removeDatabase(database) }
        let stale = try #require(fopen(database + ".lock", "w"))
        fputs("999999\n", stale)
        fclose(stale)
        let lock = try InstanceLock(database: database)
        #expect(try String(contentsOfFile: database + ".lock", encoding: .utf8) == "\(getpid())\n")
        lock.release()
    }

    @Test("PostgreSQL takes no lock: a cluster is many nodes on one database")
    func postgresTakesNone() throws {
        #expect(try InstanceLock(storage: .postgres(PostgresConfiguration(host: "/tmp", user: "chat", database: "chat"))) == nil)
    }

    @Test("two chat-node serve on one file: the second refuses, naming the file and the first's pid; after kill -9 a new one starts")
    func twoProcesses() throws {
        let database = temporaryDatabase()
        defer { removeDatabase(database) }
        let serve = ["serve", "--port", "0", "--no-http", "--database", database, "--scrypt-cost", "4", "--log-level", "error"]
        let first = try ServerProcess(executable: ChatNodeBinary.path, serve)
        defer { first.kill() }
        let second = try runCommand([ChatNodeBinary.path] + serve)
        #expect(second.status == 1)
        #expect(
            second.errorOutput.contains(
                "the database \(database) is in use by another chat-node (pid \(first.process.processIdentifier)), which holds \(database).lock"),
            "\(second.errorOutput)")
        #expect(!second.output.contains("listening on"))
        #expect(access(database + ".lock", F_OK) == 0, "the refused node left the first's lock file in place")

        first.kill()
        let third = try ServerProcess(executable: ChatNodeBinary.path, serve)
        #expect(third.port != 0)
        third.signal(SIGTERM)
        #expect(third.exit == .exited(0))
        #expect(access(database + ".lock", F_OK) != 0, "a node that stopped removes its lock file")
    }
}
