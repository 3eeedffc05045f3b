import CHiredis
import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopRedis

/// hiredis writes with a plain `write(2)`, so a write to a connection Redis has closed raises SIGPIPE,
/// which ends a process that has not ignored it (a chat node did, three at once, under the thread
/// sanitizer). Each test blocks SIGPIPE on its own thread first, so that a regression shows as a
/// signal left pending, not as the end of the test process.
@Suite struct BrokenPipeTests {
    @Test("a write to a closed socket inside withSIGPIPESuppressed fails with EPIPE and leaves no SIGPIPE")
    func suppressedWriteLeavesNoSignal() async throws {
        let (failure, pending) = try await onLoopThread {
            withSIGPIPEBlockedOnThisThread {
                let pair = SocketPair()
                pair.closeRight()
                return withSIGPIPESuppressed { writeByte(to: pair.left) }
            }
        }
        #expect(failure == EPIPE)
        #expect(!pending)
    }

    @Test("a SIGPIPE that was pending before stays pending: only the one the write raised is taken back")
    func earlierSignalStaysPending() async throws {
        let (failure, pending) = try await onLoopThread {
            withSIGPIPEBlockedOnThisThread {
                let pair = SocketPair()
                pair.closeRight()
                pthread_kill(pthread_self(), SIGPIPE)
                return withSIGPIPESuppressed { writeByte(to: pair.left) }
            }
        }
        #expect(failure == EPIPE)
        #expect(pending)
    }

    @Test("hiredis writing to a connection Redis killed raises no SIGPIPE: the context ends with EPIPE")
    func adapterWriteAfterClientKill() async throws {
        let (endedWith, pending) = try await onLoopWithRedis { loop, server in
            guard let context = redisAsyncConnectUnix(server.socketPath), context.pointee.err == 0 else {
                throw RedisTestError.notConnected(nil)
            }
            var endedWith: String?? = nil
            let adapter = try HiredisLoopAdapter(context: context, loop: loop, modes: [.default], handled: {}, ended: { endedWith = $0 })
            defer { adapter.context.map { redisAsyncFree($0) } }
            try loop.runUntil(timeout: .seconds(10)) { context.pointee.c.flags & REDIS_CONNECTED != 0 }
            // Redis closes the socket before it answers; the loop does not run again, so the adapter
            // has not read that end when hiredis writes the next command: the order the window between
            // a node's poll and its write allows.
            let killed = try server.command(["CLIENT", "KILL", "TYPE", "normal"])
            guard killed.output.split(whereSeparator: \.isNewline).first == "1" else { throw RedisTestError.noAnswer(["CLIENT", "KILL"]) }
            return withSIGPIPEBlockedOnThisThread {
                let ping = Array("PING".utf8CString)
                var length = ping.count - 1
                ping.withUnsafeBufferPointer { bytes in
                    var argv: [UnsafePointer<CChar>?] = [bytes.baseAddress]
                    _ = redisAsyncCommandArgv(context, nil, nil, 1, &argv, &length)
                }
                adapter.writable()
                return endedWith
            }
        }
        #expect(endedWith == .some("Broken pipe"))
        #expect(!pending)
    }
}

/// One byte to `fd`: `errno` when it failed, else 0.
private func writeByte(to fd: Int32) -> Int32 {
    var byte: UInt8 = 0
    return write(fd, &byte, 1) == 1 ? 0 : errno
}

/// Runs `body` with SIGPIPE blocked on this thread; its result and whether a SIGPIPE was pending when
/// it returned. Takes any pending SIGPIPE back and restores the mask before returning.
private func withSIGPIPEBlockedOnThisThread<T>(_ body: () throws -> T) rethrows -> (T, pending: Bool) {
    var brokenPipe = sigset_t()
    sigemptyset(&brokenPipe)
    sigaddset(&brokenPipe, SIGPIPE)
    var previousMask = sigset_t()
    pthread_sigmask(SIG_BLOCK, &brokenPipe, &previousMask)
    defer { pthread_sigmask(SIG_SETMASK, &previousMask, nil) }
    let result = try body()
    let pending = isSIGPIPEPending()
    var now = timespec()
    while isSIGPIPEPending(), sigtimedwait(&brokenPipe, nil, &now) == SIGPIPE {}
    return (result, pending)
}
