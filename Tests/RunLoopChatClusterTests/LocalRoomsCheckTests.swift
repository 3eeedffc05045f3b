import Testing

@testable import RunLoopChatCluster

/// A JOIN for a room a user's load did not show: the read does not say how far the room's membership
/// order had gone, so the JOIN may be older than a LEAVE that committed before it. It waits for the
/// store's answer (a check) and never routes the room's messages to the user before it.
@Suite("Local rooms: JOINs checked against the store")
struct LocalRoomsCheckTests {
    private let annInR = RoomCheck(user: "ann", room: "r")

    @Test(
        "a JOIN told after ann's load, for a room she had left before the read (its LEAVE told while she was not tracked), never makes her a member"
    )
    func lateJoinOfARoomLeftBeforeTheLoad() {
        var rooms = LocalRooms()
        // Her JOIN (5) on node B and LEAVE (6) on node C; C's entry came before her login here.
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 6) == nil)
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: [:]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 5) == annInR)
        #expect(rooms.members(of: "r").isEmpty, "a room she left: none of its messages")
        #expect(rooms.checked(annInR, isMember: false, seq: 6) == false)
        #expect(rooms.members(of: "r").isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 4) == nil, "older than the check's read: no second check")
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 7) == nil, "newer than the read: applies at once")
        #expect(rooms.members(of: "r") == ["ann"])
    }

    @Test("a JOIN that came after the load makes her a member once the store says so; LEAVEs apply at once")
    func joinAfterTheLoad() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: ["s": 2]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 3) == annInR)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 4) == nil, "a repeat while the check is out: no second check")
        #expect(rooms.members(of: "r").isEmpty)
        #expect(rooms.checked(annInR, isMember: true, seq: 4) == true)
        #expect(rooms.members(of: "r") == ["ann"])
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 5) == nil)
        #expect(rooms.members(of: "r").isEmpty)
        #expect(rooms.membershipChanged("ann", room: "s", joined: true, seq: 3) == nil, "the load read s: a newer JOIN applies at once")
        #expect(rooms.checked(annInR, isMember: true, seq: 9) == false, "no such check: ignored")
        #expect(rooms.members(of: "r").isEmpty)
    }

    @Test(
        "a LEAVE told after the load has no read behind it: a JOIN newer than it may still be older than a LEAVE before the read, and is checked"
    )
    func leaveWithoutARead() {
        var rooms = LocalRooms()
        // JOIN 3, LEAVE 4, JOIN 5, LEAVE 6, all before the read; only 6 was told before it.
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 6) == nil)
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: [:]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 4) == nil)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 3) == nil, "older than the LEAVE told (4)")
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 5) == annInR)
        #expect(rooms.members(of: "r").isEmpty)
        #expect(rooms.checked(annInR, isMember: false, seq: 6) == false)
        #expect(rooms.members(of: "r").isEmpty)
    }

    @Test("changes seen while a check is out apply over its answer, in the room's order, whichever came first")
    func changesDuringACheck() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: [:]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 3) == annInR)
        // Committed after the check's read: a LEAVE applies at once, and the JOIN after it is held.
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 5) == nil)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 6) == nil)
        #expect(rooms.members(of: "r").isEmpty, "still no read behind the JOIN (6)")
        #expect(rooms.checked(annInR, isMember: true, seq: 4) == true, "the read (4) then the LEAVE (5) then the JOIN (6)")
        #expect(rooms.members(of: "r") == ["ann"])

        // The read is the newest: what was held is older.
        #expect(rooms.membershipChanged("ann", room: "t", joined: true, seq: 1) == RoomCheck(user: "ann", room: "t"))
        #expect(rooms.membershipChanged("ann", room: "t", joined: true, seq: 2) == nil)
        #expect(rooms.checked(RoomCheck(user: "ann", room: "t"), isMember: false, seq: 3) == false)
        #expect(rooms.members(of: "t").isEmpty)
    }

    @Test("a reload that answered while a check was out, having read later, outweighs the check's answer")
    func reloadDuringACheck() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: [:]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 3) == annInR)
        #expect(rooms.reloadAll() == ["ann"])
        #expect(rooms.loaded("ann", rooms: ["r": 5]).isEmpty)
        #expect(rooms.members(of: "r") == ["ann"], "the reload read her in r")
        #expect(rooms.checked(annInR, isMember: false, seq: 4) == true, "read before her JOIN (5): older")
        #expect(rooms.members(of: "r") == ["ann"])
    }

    @Test("a reload that no longer shows a room leaves no read behind its number: a later JOIN is checked")
    func reloadWithoutTheRoom() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: ["r": 2]).isEmpty)
        #expect(rooms.reloadAll() == ["ann"])
        // Left by a change the node missed (a catch-up): its number, and any JOIN's before it, unknown.
        #expect(rooms.loaded("ann", rooms: [:]).isEmpty)
        #expect(rooms.members(of: "r").isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 2) == nil, "no newer than the join read (2)")
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 3) == annInR)
        #expect(rooms.members(of: "r").isEmpty)
    }

    @Test("a check that failed is asked again, once; one whose user left is dropped, and its late answer ignored")
    func failedChecks() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        _ = rooms.userArrived("ben")
        #expect(rooms.loaded("ann", rooms: [:]).isEmpty && rooms.loaded("ben", rooms: [:]).isEmpty)
        let benInR = RoomCheck(user: "ben", room: "r")
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 1) == annInR)
        #expect(rooms.membershipChanged("ben", room: "r", joined: true, seq: 2) == benInR)
        #expect(rooms.checksToAsk().isEmpty, "both out")
        rooms.checkFailed(annInR)
        rooms.checkFailed(benInR)
        #expect(rooms.checksToAsk() == [annInR, benInR])
        #expect(rooms.checksToAsk().isEmpty, "out again")
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 3) == nil, "still wanted: no second check")
        rooms.checkFailed(benInR)
        rooms.userLeft("ben")
        #expect(rooms.checksToAsk().isEmpty, "ben is gone")
        #expect(rooms.checked(benInR, isMember: true, seq: 2) == false)
        #expect(rooms.members(of: "r").isEmpty)
        #expect(rooms.checked(annInR, isMember: true, seq: 3) == true)
        #expect(rooms.members(of: "r") == ["ann"])
    }
}
