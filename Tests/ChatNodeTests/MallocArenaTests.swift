import Foundation
import Glibc
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

/// Issue 22: the password threads' scrypt buffers live in malloc's main heap, whose free pages the
/// trim after a crowd gives back; in arenas of their own they would stay resident for good.
@Suite("chat-node: one malloc arena")
struct MallocArenaTests {
    /// glibc maps a thread's arena as a heap of 64 MiB aligned to its size: the part in use
    /// read-write, the rest without access. Thread stacks and mapped blocks are not so aligned or sized.
    private func arenaHeaps(of pid: Int32) throws -> [String] {
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8).split(separator: "\n")
        let heapSize: UInt64 = 64 << 20
        var heaps: [String] = []
        for (index, line) in maps.enumerated() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 5, fields[1] == "rw-p" else { continue }  // anonymous: no path
            let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2, bounds[0] % heapSize == 0 else { continue }
            var end = bounds[1]
            if index + 1 < maps.count {
                let next = maps[index + 1].split(separator: " ", omittingEmptySubsequences: true)
                let nextBounds = next[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
                if next.count == 5, next[1] == "---p", nextBounds.first == end { end = nextBounds[1] }
            }
            if end - bounds[0] == heapSize { heaps.append(String(line)) }
        }
        return heaps
    }

    @Test("logins hashed on the password threads at scrypt cost 10 leave no malloc arena beside the main heap")
    func passwordThreadsShareTheMainHeap() async throws {
        let database = temporaryDatabase()
        defer { removeDatabase(database) }
        let node = try ServerProcess(
            executable: ChatNodeBinary.path,
            ["serve", "--port", "0", "--no-http", "--database", database, "--scrypt-cost", "10", "--log-level", "error"])
        defer { node.kill() }
        try await onLoopThread {
            let loop = RunLoopKit.RunLoop.current
            // First logins: each account's hash is made on a password thread, then checked again at the next login.
            let names = ["alice", "bob", "carol", "dave"]
            let users = names.map { client($0, port: node.port) }
            for user in users { user.start() }
            try #require(try spin(loop) { users.allSatisfy { $0.state == .online } })
            for user in users { user.close() }
            let again = names.map { client($0, port: node.port) }
            for user in again { user.start() }
            try #require(try spin(loop) { again.allSatisfy { $0.state == .online } })
            for user in again { user.close() }
        }
        #expect(try arenaHeaps(of: node.process.processIdentifier) == [])
    }
}
