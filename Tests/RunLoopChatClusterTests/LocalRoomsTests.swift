import Testing

@testable import RunLoopChatCluster

/// Which room messages go to which users of a node: loaded at a user's first session, kept by
/// membership changes in the room's order, dropped at their last.
@Suite("Local rooms")
struct LocalRoomsTests {
    @Test("a user's rooms count once loaded; a change seen while the load is out applies over its answer")
    func loadAndChanges() {
        var rooms = LocalRooms()
        let first = rooms.userArrived("ann")
        let again = rooms.userArrived("ann")
        #expect(first && !again, "loading already")
        rooms.membershipChanged("ann", room: "r", joined: false)
        rooms.membershipChanged("ann", room: "s", joined: true)
        rooms.loaded("ann", rooms: ["r", "t"])
        #expect(rooms.members(of: "r").isEmpty, "the leave came after the load's snapshot")
        #expect(rooms.members(of: "s") == ["ann"] && rooms.members(of: "t") == ["ann"])
        rooms.membershipChanged("ann", room: "t", joined: false)
        #expect(rooms.members(of: "t").isEmpty)
    }

    @Test(
        "a catch-up reloads every tracked user: their rooms stay as known until the answer, which replaces them, with changes seen meanwhile applied at once and over it"
    )
    func reload() {
        var rooms = LocalRooms()
        _ = rooms.userArrived("ann")
        rooms.loaded("ann", rooms: ["r", "s"])
        _ = rooms.userArrived("ben")
        #expect(rooms.reloadAll() == ["ann"], "ben's first load is still out")
        #expect(rooms.reloadAll().isEmpty, "ann's reload is out already")
        #expect(rooms.members(of: "r") == ["ann"], "known rooms serve until the answer")
        rooms.membershipChanged("ann", room: "u", joined: true)
        #expect(rooms.members(of: "u") == ["ann"], "a change during a reload applies now")
        rooms.loaded("ann", rooms: ["s", "t"])
        #expect(rooms.members(of: "r").isEmpty, "the store says ann left r: a missed LEAVE")
        #expect(rooms.members(of: "s") == ["ann"] && rooms.members(of: "t") == ["ann"] && rooms.members(of: "u") == ["ann"])
        #expect(rooms.reloadAll() == ["ann"])
        rooms.loadFailed("ann")
        #expect(rooms.isTracking("ann") && rooms.members(of: "t") == ["ann"], "a failed reload keeps what was known")
    }

    @Test("users without a session here are not tracked: their changes and late loads are ignored")
    func untracked() {
        var rooms = LocalRooms()
        rooms.membershipChanged("ben", room: "r", joined: true)
        #expect(rooms.members(of: "r").isEmpty && !rooms.isTracking("ben"))
        _ = rooms.userArrived("ben")
        rooms.userLeft("ben")
        rooms.loaded("ben", rooms: ["r"])
        #expect(rooms.members(of: "r").isEmpty, "left before the load answered")
        let back = rooms.userArrived("ben")
        rooms.loaded("ben", rooms: ["r"])
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
