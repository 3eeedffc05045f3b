import RunLoopChat
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore

// Until `PostgresChatStore: ChatStore` lands (it replaces `PostgresStoreFailure` by
// `IMStoreFailure`), this file makes it one; the node gives the server `PostgresChatStore.chatStore`.
// Delete the file once the conformance is in, and use the store itself.

extension PostgresChatStore {
    /// The store as the server's ``ChatStore``.
    var chatStore: any ChatStore { PostgresChatStoreAdapter(store: self) }

    /// ``createAccount(_:passwordHash:completion:)`` failing with the store protocol's failure.
    func createAccount(_ user: String, passwordHash: String, failure completion: @escaping (Result<Bool, IMStoreFailure>) -> Void) {
        createAccount(user, passwordHash: passwordHash) { completion($0.mapError(IMStoreFailure.init)) }
    }
}

/// ``PostgresChatStore`` seen as a ``ChatStore``: the same calls, failures as ``IMStoreFailure``.
private final class PostgresChatStoreAdapter: ChatStore {
    let store: PostgresChatStore

    init(store: PostgresChatStore) {
        self.store = store
    }

    func authenticate(_ login: IMLoginAttempt, completion: @escaping (IMLoginVerdict) -> Void) {
        store.authenticate(login, completion: completion)
    }

    func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64, completion: @escaping (IMStoreResult) -> Void) {
        store.store(message, from: sender, nowMilliseconds: nowMilliseconds, completion: completion)
    }

    func abandon(_ ids: [String], from sender: String, completion: @escaping (Result<[IMAbandonOutcome], IMStoreFailure>) -> Void) {
        store.abandon(ids, from: sender) { completion($0.mapError(IMStoreFailure.init)) }
    }

    func undelivered(
        for user: String, after: [IMConversation: UInt64], limit: Int, completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void
    ) {
        store.undelivered(for: user, after: after, limit: limit) { completion($0.mapError(IMStoreFailure.init)) }
    }

    func acknowledge(_ seqs: [UInt64], for user: String) {
        store.acknowledge(seqs, for: user)
    }

    func join(room: String, user: String, maximumRooms: Int?, completion: @escaping (Result<Room, IMStatusCode>) -> Void) {
        store.join(room: room, user: user, maximumRooms: maximumRooms, completion: completion)
    }

    func leave(room: String, user: String, completion: @escaping (Result<Room, IMStatusCode>) -> Void) {
        store.leave(room: room, user: user, completion: completion)
    }

    func rooms(for user: String, after: String, limit: Int, completion: @escaping (Result<[Room], IMStatusCode>) -> Void) {
        store.rooms(for: user, after: after, limit: limit, completion: completion)
    }

    func history(_ query: HistoryQuery, for user: String, limit: Int, completion: @escaping (Result<HistoryPage, IMStatusCode>) -> Void) {
        store.history(query, for: user, limit: limit, completion: completion)
    }
}

extension IMStoreFailure {
    /// The store protocol's failure for a PostgreSQL store's.
    init(_ failure: PostgresStoreFailure) {
        self.init(failure.operation, reason: "\(failure.cause)", isTemporary: failure.isTemporary)
    }
}
