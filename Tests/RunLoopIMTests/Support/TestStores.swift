import RunLoopChat
import RunLoopIM
import RunLoopIMSQLite
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting

/// The stores the server's delivery tests run against: memory and SQLite answer inside each call,
/// `deferred` (a ``DeferredIMStore`` over memory) on a later loop pass, as a database across the
/// network does, so the server's asynchronous paths are taken too.
enum StoreKind: String, CaseIterable, CustomStringConvertible {
    case memory, sqlite, deferred
    var description: String { rawValue }
}

/// A store for one test: what the server gets, the same data read directly, and whether every
/// answer has come back.
final class TestStore {
    let server: any ChatStore
    /// The data under ``server``, read and written at once (for setting up a backlog, checking an inbox).
    let direct: any SynchronousChatStore
    let path: String?

    init(_ kind: StoreKind) throws {
        switch kind {
        case .memory:
            let store = InMemoryIMStore()
            (server, direct, path) = (store, store, nil)
        case .sqlite:
            let path = temporaryPath("rooms.db")
            let store = try SQLiteIMStore(path: path)
            (server, direct, self.path) = (store, store, path)
        case .deferred:
            let store = DeferredIMStore()
            (server, direct, path) = (store, store.inner, nil)
        }
    }

    /// Whether no store answer is still on its way to the server.
    var isIdle: Bool { (server as? DeferredIMStore)?.isIdle ?? true }

    /// A peer whose steps settle only once the store has answered too.
    func peer() -> MemoryLinkPeer {
        let peer = MemoryLinkPeer()
        peer.serverIsIdle = { [weak self] in self?.isIdle ?? true }
        return peer
    }

    deinit { if let path { removeDatabase(path) } }
}
