import Glibc
import RunLoopTesting
import Testing

/// `SocketPair` closes each end once: an end closed early is not closed again when the pair goes.
@Suite struct SocketPairTests {
    @Test("after closeRight, the right end's number, taken by another descriptor, survives the pair")
    func closeRightClosesOnce() throws {
        // The number freed by closeRight is taken back with F_DUPFD (the lowest free number from it),
        // as a parallel test's next descriptor would take it. A parallel test may win it first: then
        // this try proves nothing and another is made.
        for _ in 0..<20 {
            var pair: SocketPair? = SocketPair()
            let number = try #require(pair?.right)
            pair?.closeRight()
            #expect(pair?.right == -1)
            let successor = fcntl(try #require(pair?.left), F_DUPFD_CLOEXEC, number)
            try #require(successor >= 0)
            guard successor == number else {
                close(successor)
                continue
            }
            let identity = fileIdentity(successor)
            pair = nil
            let survived = identity != nil && fileIdentity(successor) == identity
            #expect(survived, "the pair's deinit closed number \(number) again")
            if survived { close(successor) }
            return
        }
        Issue.record("the freed number was taken by another test every time")
    }
}
