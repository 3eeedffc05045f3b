import RunLoopChat
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// `ChatStore.contacts(ofEach:roomsOfAtMost:completion:)`'s default, for a store that answers later
/// and reads no batch of its own: each user's read, the answers together in the users' order.
@Suite struct ContactBatchDefaultTests {
    @Test("a later-answering store's batch is each user's read, all asked at once, answered together once in the users' order")
    func batchOfEachUsersRead() async throws {
        let (answered, answeredInCall, reads, expected) = try await onLoopThread {
            let store = DeferredIMStore(loop: .current)
            for user in ["ann", "ben", "cat"] { _ = store.inner.join(room: "small", user: user) }
            for user in ["ann", "dan", "eve", "fay", "gil", "hal"] { _ = store.inner.join(room: "big", user: user) }
            let users = ["cat", "ann", "nobody", "dan"]
            var answers: [Result<[[String]], IMStatusCode>] = []
            store.contacts(ofEach: users, roomsOfAtMost: 4) { answers.append($0) }
            let answeredInCall = !answers.isEmpty
            let reads = store.contactReads
            _ = try spin(store.loop) { store.isIdle }
            return (answers, answeredInCall, reads, try users.map { try store.inner.contacts(of: $0, roomsOfAtMost: 4).get() })
        }
        #expect(!answeredInCall)
        #expect(reads == 4)
        #expect(answered == [.success(expected)])
        #expect(expected == [["ann", "ben"], ["ben", "cat"], [], []])
    }
}
