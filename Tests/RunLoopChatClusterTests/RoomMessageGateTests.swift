import RunLoopIMCore
import RunLoopKit
import Testing

@testable import RunLoopChatCluster

/// A room message from the bus waits for the room's JOINs and LEAVEs that committed before it, on the
/// manual clock; and the standings the node routes it by (``LocalRooms``) when a change never comes.
@Suite("Room message gate")
struct RoomMessageGateTests {
    let clock = ManualClock(autoAdvances: false)

    func message(_ number: UInt64, in room: String = "r") -> IMMessage {
        IMMessage(
            id: "m\(number)", from: "bob", recipient: .room(room), text: "\(number)", seq: 100 + number, sentAtMilliseconds: 1,
            conversationSeq: number)
    }

    /// A gate whose room r was read at membership number 4.
    func gate() -> RoomMessageGate {
        var gate = RoomMessageGate(maximumWait: .seconds(2))
        #expect(gate.read("r", at: 4).isEmpty)
        return gate
    }

    @Test("a message whose changes are all known passes at once, as does one without a number (an older node's)")
    func knownChangesPass() {
        var gate = gate()
        gate.heard("r", seq: 4)
        #expect(gate.admit(message(1), room: "r", now: clock.now) == true)
        #expect(gate.changed("r", seq: 5).isEmpty)
        gate.heard("r", seq: 5)
        #expect(gate.admit(message(2), room: "r", now: clock.now) == true)
        #expect(gate.admit(message(3), room: "r", now: clock.now) == true, "no number heard past what is known")
        #expect(gate.nextDeadline == nil)
    }

    @Test("a message numbered past a change not seen yet waits for it, and the messages after it wait behind it, in order")
    func waitsForTheMissingChange() {
        var gate = gate()
        // Change 5 (a LEAVE on node B) is not out; change 6 came; the message was committed after both.
        #expect(gate.changed("r", seq: 6).isEmpty)
        gate.heard("r", seq: 6)
        #expect(gate.admit(message(1), room: "r", now: clock.now) == false)
        #expect(gate.admit(message(2), room: "r", now: clock.now) == false, "behind the one held, though it carries no number of its own")
        #expect(gate.isHolding("r"))
        #expect(gate.nextDeadline == clock.now + .seconds(2))
        #expect(gate.changed("r", seq: 5) == [message(1), message(2)])
        #expect(!gate.isHolding("r"))
        #expect(gate.nextDeadline == nil)
        gate.heard("r", seq: 6)
        #expect(gate.admit(message(3), room: "r", now: clock.now) == true)
    }

    @Test("a message that waited past the bound is given up with those after it; the room passes nothing until it is read again")
    func givenUpAfterTheBound() {
        var gate = gate()
        gate.heard("r", seq: 5)
        #expect(gate.admit(message(1), room: "r", now: clock.now) == false)
        clock.advance(by: .seconds(1))
        #expect(gate.admit(message(2), room: "r", now: clock.now) == false)
        #expect(gate.expire(now: clock.now).isEmpty, "not yet")
        clock.advance(by: .seconds(1))
        #expect(gate.expire(now: clock.now) == [RoomMessageGate.Expiry(room: "r", messages: [message(1), message(2)])])
        #expect(gate.nextDeadline == nil)
        // Until the standings are read again, nothing passes: the change that never came may be a LEAVE.
        #expect(gate.admit(message(3), room: "r", now: clock.now) == false)
        #expect(gate.changed("r", seq: 7).isEmpty)
        // The first check's read held everything up to 6; 7 was seen since.
        #expect(gate.read("r", at: 6) == [message(3)])
        gate.heard("r", seq: 7)
        #expect(gate.admit(message(4), room: "r", now: clock.now) == true)
    }

    @Test("changes seen while a read is out count above what it read; a later read does not skip what the earlier one has not seen")
    func readsAndChanges() {
        var gate = RoomMessageGate(maximumWait: .seconds(2))
        gate.awaitRead("r")
        #expect(gate.changed("r", seq: 3).isEmpty)
        #expect(gate.changed("r", seq: 5).isEmpty)
        #expect(gate.read("r", at: 2).isEmpty)
        gate.heard("r", seq: 5)
        #expect(gate.admit(message(1), room: "r", now: clock.now) == false, "4 is missing")
        #expect(gate.read("r", at: 9).isEmpty, "a later read holds 4 for its own user only")
        #expect(gate.changed("r", seq: 4) == [message(1)])
    }

    @Test("a room never read here holds its message until a read; a forgotten room keeps nothing, unless a read is awaited")
    func unreadAndForgotten() {
        var gate = RoomMessageGate(maximumWait: .seconds(2))
        #expect(gate.admit(message(1), room: "s", now: clock.now) == false)
        gate.forget("s")
        #expect(gate.isHolding("s"), "kept: its read is still to come")
        #expect(gate.read("s", at: 1) == [message(1)])
        gate.forget("s")
        #expect(gate.admit(message(2), room: "s", now: clock.now) == false, "forgotten: read again first")
    }

    @Test("when a change never came, every user who stands in the room is checked again, and is given none of its messages until answered")
    func recheckOfTheRoom() {
        var rooms = LocalRooms()
        for user in ["alice", "ann"] {
            _ = rooms.userArrived(user)
            #expect(rooms.loaded(user, rooms: ["r": 2]).isEmpty)
        }
        #expect(rooms.settledMembers(of: "r") == ["alice", "ann"])
        let checks = rooms.recheck("r")
        #expect(checks == [RoomCheck(user: "alice", room: "r"), RoomCheck(user: "ann", room: "r")])
        #expect(rooms.recheck("r").isEmpty, "out already")
        #expect(rooms.settledMembers(of: "r").isEmpty)
        // Alice's LEAVE (5) never came: the store says she is out.
        #expect(rooms.checked(checks[0], isMember: false, seq: 5) == false)
        #expect(rooms.checked(checks[1], isMember: true, seq: 5) == true)
        #expect(rooms.settledMembers(of: "r") == ["ann"])
        #expect(rooms.members(of: "r") == ["ann"])
    }
}
