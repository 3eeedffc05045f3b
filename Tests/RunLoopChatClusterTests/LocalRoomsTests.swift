import Testing

@testable import RunLoopChatCluster

/// Which room messages go to which users of a node: loaded at a user's first session, kept by
/// membership changes in the room's order, dropped at their last.
@Suite("Local rooms")
struct LocalRoomsTests {
    @Test(
        "a user's rooms count once loaded; a change seen while the load is out applies over its answer, a JOIN of a room the read does not show once checked"
    )
    func loadAndChanges() {
        var rooms = LocalRooms()
        let first = rooms.userArrived("ann")
        let again = rooms.userArrived("ann")
        #expect(first && !again, "loading already")
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 3) == nil)
        #expect(rooms.membershipChanged("ann", room: "s", joined: true, seq: 1) == nil, "kept for the load")
        #expect(rooms.loaded("ann", rooms: ["r": 2, "t": 1]) == [RoomCheck(user: "ann", room: "s")], "the read may predate the join, or a leave")
        #expect(rooms.members(of: "r").isEmpty, "the leave came after the load's snapshot")
        #expect(rooms.members(of: "s").isEmpty, "not before the check answers")
        #expect(rooms.members(of: "t") == ["ann"])
        #expect(rooms.checked(RoomCheck(user: "ann", room: "s"), isMember: true, seq: 1) == true)
        #expect(rooms.members(of: "s") == ["ann"])
        #expect(rooms.membershipChanged("ann", room: "t", joined: false, seq: 2) == nil)
        #expect(rooms.members(of: "t").isEmpty)
    }

    @Test(
        "changes of one room arriving out of order apply in the room's order: one numbered at or below what is known is older and ignored, before and after a load"
    )
    func outOfOrder() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        // Seen while the load was out, committed before the read: the read's join (4) is newer.
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 3) == nil)
        #expect(rooms.loaded("ann", rooms: ["r": 4, "old": 0]).isEmpty)
        #expect(rooms.members(of: "r") == ["ann"], "a leave older than the load's join")

        // Left on node B, back on node A at once: B's leave arrives after A's join.
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 5) == nil)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 7) == nil)
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 6) == nil)
        #expect(rooms.members(of: "r") == ["ann"], "the leave (6) is older than the join (7)")
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 7) == nil)
        #expect(rooms.members(of: "r") == ["ann"], "the same number again is no newer")

        // The reverse: a repeated JOIN told after a later LEAVE leaves her out.
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 9) == nil)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 8) == nil)
        #expect(rooms.members(of: "r").isEmpty, "the join (8) is older than the leave (9)")
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 10) == nil)
        #expect(rooms.members(of: "r") == ["ann"])

        // A member from before the store numbered changes (0): every numbered change is newer.
        #expect(rooms.membershipChanged("ann", room: "old", joined: false, seq: 1) == nil)
        #expect(rooms.members(of: "old").isEmpty)

        // A user's numbers are their own: ben's older number does not hide ann's change.
        _ = rooms.userArrived("ben")
        #expect(rooms.loaded("ben", rooms: ["r": 11]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 12) == nil)
        #expect(rooms.members(of: "r") == ["ben"])
    }

    @Test(
        "a catch-up reloads every tracked user: their rooms stay as known until the answer, which replaces them, with changes seen meanwhile applied at once and over it"
    )
    func reload() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: ["r": 1, "s": 1]).isEmpty)
        _ = rooms.userArrived("ben")
        #expect(rooms.reloadAll() == ["ann"], "ben's first load is still out")
        #expect(rooms.reloadAll().isEmpty, "ann's reload is out already")
        #expect(rooms.members(of: "r") == ["ann"], "known rooms serve until the answer")
        #expect(rooms.membershipChanged("ann", room: "s", joined: false, seq: 2) == nil)
        #expect(rooms.members(of: "s").isEmpty, "a change during a reload applies now")
        #expect(rooms.loaded("ann", rooms: ["s": 1, "t": 1]).isEmpty, "the leave (2) is newer than the read's join (1)")
        #expect(rooms.members(of: "r").isEmpty, "the store says ann left r: a missed LEAVE")
        #expect(rooms.members(of: "s").isEmpty && rooms.members(of: "t") == ["ann"])
        #expect(rooms.reloadAll() == ["ann"])
        rooms.loadFailed("ann")
        #expect(rooms.isTracking("ann") && rooms.members(of: "t") == ["ann"], "a failed reload keeps what was known")
    }

    @Test("a reload keeps the numbers known before it: an older change arriving after its answer is still ignored")
    func reloadKeepsNumbers() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        #expect(rooms.loaded("ann", rooms: ["r": 4, "v": 2]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: true, seq: 8) == nil)
        #expect(rooms.membershipChanged("ann", room: "v", joined: false, seq: 9) == nil)
        #expect(rooms.reloadAll() == ["ann"])
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 6) == nil)
        #expect(rooms.members(of: "r") == ["ann"], "older than the repeated join (8), during the reload")
        // The read shows her join (4), not the repeated one (8); v is gone from it.
        #expect(rooms.loaded("ann", rooms: ["r": 4]).isEmpty)
        #expect(rooms.membershipChanged("ann", room: "r", joined: false, seq: 7) == nil)
        #expect(rooms.membershipChanged("ann", room: "v", joined: true, seq: 5) == nil)
        #expect(rooms.members(of: "r") == ["ann"], "older than the repeated join (8), after the reload")
        #expect(rooms.members(of: "v").isEmpty, "older than her leave (9)")
    }

    @Test("users without a session here are not tracked: their changes and late loads are ignored")
    func untracked() {
        var rooms = LocalRooms()
        #expect(rooms.membershipChanged("ben", room: "r", joined: true, seq: 1) == nil)
        #expect(rooms.members(of: "r").isEmpty && !rooms.isTracking("ben"))
        _ = rooms.userArrived("ben")
        rooms.userLeft("ben")
        #expect(rooms.loaded("ben", rooms: ["r": 1]).isEmpty)
        #expect(rooms.members(of: "r").isEmpty, "left before the load answered")
        let back = rooms.userArrived("ben")
        #expect(rooms.loaded("ben", rooms: ["r": 1]).isEmpty)
        #expect(back)
        #expect(rooms.members(of: "r") == ["ben"])
        rooms.userLeft("ben")
        #expect(rooms.members(of: "r").isEmpty && !rooms.isTracking("ben"))
        _ = rooms.userArrived("cat")
        rooms.loadFailed("cat")
        let retried = !rooms.isTracking("cat") && rooms.userArrived("cat")
        #expect(retried, "a failed load is tried again at the next first login")
    }
}
