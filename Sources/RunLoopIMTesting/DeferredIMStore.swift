public import RunLoopChat
public import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit

/// A store that answers later, the way one across the network does: the store protocols'
/// asynchronous side, for tests of the server's paths that only such a store takes (a session that
/// ends before its SEND is answered, a message stored while an inbox read is out, a failed commit).
///
/// Each call does its work on ``inner`` at once — a write commits, a read takes its snapshot — and
/// answers after ``writeDelay`` or ``readDelay`` on the loop's clock (zero: on a later pass, never
/// inside the call). Writes answer in the order they were made, and so do reads; a read slower than
/// a write lets the write's answer overtake it.
///
/// Loop thread only.
public final class DeferredIMStore: ChatStore {
    /// Where the messages, inboxes and rooms are.
    public let inner: InMemoryIMStore
    public let loop: RunLoop
    public let modes: [RunLoop.Mode]
    /// How long SEND, ABANDON, JOIN and LEAVE take to answer.
    public var writeDelay: Duration
    /// How long logins, inbox reads, room lists and history take to answer.
    public var readDelay: Duration
    /// Answers not given yet: with none, the store is idle.
    public private(set) var answersOut = 0
    /// Inbox reads answered so far (successful or not).
    public private(set) var inboxReads = 0
    /// Reads of a room's members (``members(ofRoom:completion:)``) so far.
    public private(set) var memberReads = 0
    /// Reads of a user's contacts (``contacts(of:roomsOfAtMost:completion:)``) so far.
    public private(set) var contactReads = 0
    /// Batches of acknowledgements handed over so far (``acknowledge(_:)``: the server's, one a loop pass).
    public private(set) var acknowledgementBatches = 0
    private var failingSends: [String: Bool] = [:]
    private var failingReads = 0
    private let writes = AnswerQueue()
    private let reads = AnswerQueue()

    public init(
        inner: InMemoryIMStore = InMemoryIMStore(), loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
        writeDelay: Duration = .zero, readDelay: Duration = .zero
    ) {
        self.inner = inner
        self.loop = loop
        self.modes = modes
        self.writeDelay = writeDelay
        self.readDelay = readDelay
    }

    /// Whether every call has been answered.
    public var isIdle: Bool { answersOut == 0 }

    /// The next SEND of `id` fails as a database that went away fails: answered `internalError`,
    /// whether the commit landed (`committed`: stored all the same, only the answer was lost) or not.
    public func failNextSend(of id: String, committed: Bool) { failingSends[id] = committed }

    /// The next `count` inbox reads fail.
    public func failInboxReads(_ count: Int) { failingReads += count }

    // MARK: IMServerStore

    public func authenticate(_ login: IMLoginAttempt, completion: @escaping (IMLoginVerdict) -> Void) {
        let verdict = inner.authenticate(login)
        answer(on: reads, after: readDelay) { completion(verdict) }
    }

    public func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64, completion: @escaping (IMStoreResult) -> Void) {
        var result = IMStoreResult.refused(.internalError)
        if let committed = failingSends.removeValue(forKey: message.id) {
            if committed { _ = inner.store(message, from: sender, nowMilliseconds: nowMilliseconds) }
        } else {
            result = inner.store(message, from: sender, nowMilliseconds: nowMilliseconds)
        }
        answer(on: writes, after: writeDelay) { [result] in completion(result) }
    }

    public func abandon(_ ids: [String], from sender: String, completion: @escaping (Result<[IMAbandonOutcome], IMStoreFailure>) -> Void) {
        let outcomes = inner.abandon(ids, from: sender)
        answer(on: writes, after: writeDelay) { completion(outcomes) }
    }

    public func undelivered(
        for user: String, after: [IMConversation: UInt64], limit: Int, completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void
    ) {
        var found = inner.undelivered(for: user, after: after, limit: limit)
        if failingReads > 0 {
            failingReads -= 1
            found = .failure(IMStoreFailure("read the inbox of \(user)", reason: "the test's store is down"))
        }
        answer(on: reads, after: readDelay) { [weak self, found] in
            self?.inboxReads += 1
            completion(found)
        }
    }

    public func acknowledge(_ seqs: [UInt64], for user: String) { inner.acknowledge(seqs, for: user) }

    public func acknowledge(_ seqsByUser: [String: [UInt64]]) {
        acknowledgementBatches += 1
        inner.acknowledge(seqsByUser)
    }

    // MARK: ChatStore

    public func join(room: String, user: String, maximumRooms: Int?, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void) {
        let joined = inner.join(room: room, user: user, maximumRooms: maximumRooms)
        answer(on: writes, after: writeDelay) { completion(joined) }
    }

    public func leave(room: String, user: String, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void) {
        let left = inner.leave(room: room, user: user)
        answer(on: writes, after: writeDelay) { completion(left) }
    }

    public func rooms(for user: String, after: String, limit: Int, completion: @escaping (Result<[Room], IMStatusCode>) -> Void) {
        let found = inner.rooms(for: user, after: after, limit: limit)
        answer(on: reads, after: readDelay) { completion(found) }
    }

    public func contacts(of user: String, roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[String], IMStatusCode>) -> Void) {
        contactReads += 1
        let found = inner.contacts(of: user, roomsOfAtMost: maximumRoomMembers)
        answer(on: reads, after: readDelay) { completion(found) }
    }

    public func members(ofRoom room: String, completion: @escaping (Result<[RoomMember], IMStatusCode>) -> Void) {
        memberReads += 1
        let found = inner.members(ofRoom: room)
        answer(on: reads, after: readDelay) { completion(found) }
    }

    public func history(
        _ query: HistoryQuery, for user: String, limit: Int, completion: @escaping (Result<HistoryPage, IMStatusCode>) -> Void
    ) {
        let page = inner.history(query, for: user, limit: limit)
        answer(on: reads, after: readDelay) { completion(page) }
    }

    // MARK: Answers

    /// Answers of one kind, given in the order they were asked for, each once its time has come.
    final class AnswerQueue {
        private var due: [(at: LoopInstant, answer: () -> Void)] = []
        private var head = 0

        /// When an answer asked for now, due after `delay`, is given: never before an earlier one.
        func push(at instant: LoopInstant, _ answer: @escaping () -> Void) -> LoopInstant {
            let at = max(instant, due.last?.at ?? instant)
            due.append((at, answer))
            return at
        }

        /// The next answer due at `now`, taken off the queue.
        func next(now: LoopInstant) -> (() -> Void)? {
            guard head < due.count, due[head].at <= now else { return nil }
            defer {
                head += 1
                if head == due.count {
                    due.removeAll()
                    head = 0
                }
            }
            return due[head].answer
        }
    }

    private func answer(on queue: AnswerQueue, after delay: Duration, _ answer: @escaping () -> Void) {
        answersOut += 1
        let at = queue.push(at: loop.now + delay, answer)
        let timer = RunLoopTimer(fireAt: at, label: "deferred store answer") { [weak self, queue] _ in
            guard let self else { return }
            while let due = queue.next(now: self.loop.now) {
                self.answersOut -= 1
                due()
            }
        }
        for mode in modes { loop.add(timer, forMode: mode) }
    }
}
