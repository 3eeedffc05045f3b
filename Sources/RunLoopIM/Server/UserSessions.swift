/// The sessions one user has open on a server, in the order they went online. Almost every user has
/// exactly one, so that one is held inline: a crowd of single-session users then costs no array
/// each (a one-element array is a 40-byte allocation per user).
///
/// Loop thread only, like the server's tables that hold it.
struct UserSessions: RandomAccessCollection, ExpressibleByArrayLiteral {
    private enum Storage {
        case one(IMServerSession)
        /// Two or more, or none (an empty array allocates nothing).
        case many([IMServerSession])
    }

    private var storage: Storage

    init(arrayLiteral sessions: IMServerSession...) {
        storage = sessions.count == 1 ? .one(sessions[0]) : .many(sessions)
    }

    var startIndex: Int { 0 }

    var endIndex: Int {
        switch storage {
        case .one: 1
        case .many(let sessions): sessions.count
        }
    }

    subscript(position: Int) -> IMServerSession {
        switch storage {
        case .one(let session):
            precondition(position == 0, "index out of range")
            return session
        case .many(let sessions): return sessions[position]
        }
    }

    mutating func append(_ session: IMServerSession) {
        switch storage {
        case .one(let first): storage = .many([first, session])
        case .many(let sessions) where sessions.isEmpty: storage = .one(session)
        case .many(var sessions):
            // Let go of the storage's reference first, so the append does not copy the array.
            storage = .many([])
            sessions.append(session)
            storage = .many(sessions)
        }
    }

    /// Removes `session` if it is among them; one left is held inline again.
    mutating func remove(_ session: IMServerSession) {
        switch storage {
        case .one(let only): if only === session { storage = .many([]) }
        case .many(var sessions):
            storage = .many([])
            sessions.removeAll { $0 === session }
            storage = sessions.count == 1 ? .one(sessions[0]) : .many(sessions)
        }
    }

    /// Whether the storage is inline: for the tests that hold the layout to its promise.
    var isInline: Bool {
        if case .one = storage { return true }
        return false
    }
}
