/// The sessions open on an ``IMServer`` (logged in or not), in an array in which each session knows
/// its place (``IMServerSession/placeInOpen``): one leaving hands its place to the last. Keyed by
/// session in a dictionary, each cost its bucket of 16 bytes at a load of a half to three quarters
/// (21–33 bytes); here it costs its 8 bytes at the array's growth (8–16), and the place fits in the
/// session's padding.
///
/// Loop thread only, owned by its server.
struct OpenSessions {
    /// The sessions, in no particular order.
    private(set) var all: [IMServerSession] = []

    var count: Int { all.count }
    var isEmpty: Bool { all.isEmpty }
    /// Room in the array (for tests).
    var capacity: Int { all.capacity }

    mutating func insert(_ session: IMServerSession) {
        precondition(session.placeInOpen == IMServerSession.notOpen, "a session is opened once")
        session.placeInOpen = UInt32(all.count)
        all.append(session)
    }

    /// Takes `session` out, if it is in: the last one moves into its place.
    mutating func remove(_ session: IMServerSession) {
        let place = Int(session.placeInOpen)
        guard place < all.count, all[place] === session else { return }
        session.placeInOpen = IMServerSession.notOpen
        let last = all.removeLast()
        if last !== session {
            all[place] = last
            last.placeInOpen = UInt32(place)
        }
        shrinkIfSparse()
    }

    /// Gives back the room a crowd left once those still open fill at most a quarter of it, as the
    /// server's hash tables do (HashTable+Shrinking): O(1) per removal, spread out.
    private mutating func shrinkIfSparse() {
        guard all.capacity > 64, all.count * 4 < all.capacity else { return }
        var smaller: [IMServerSession] = []
        smaller.reserveCapacity(all.count)
        smaller.append(contentsOf: all)
        all = smaller
    }
}
