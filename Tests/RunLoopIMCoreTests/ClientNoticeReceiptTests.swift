import RunLoopKit
import Testing

@testable import RunLoopIMCore

/// `IMClientMachine.noticeReceived`, the way `IMClient` takes a notice without an action array, against
/// `frameReceived`, the general way: the same decisions, now and later.
@Suite("Client machine: a notice without an action array")
struct ClientNoticeReceiptTests {
    @Test("PRESENCE, PRESENCE_BATCH and MEMBERSHIP are notices; nothing else is")
    func notices() {
        for command in [IMCommand.presence, .presenceBatch, .membership] {
            #expect(IMClientMachine.isNotice(IMFrame(command: command, serial: 0)), "\(command)")
        }
        for command in [IMCommand.deliver, .loginAck, .sendAck, .heartbeatAck, .heartbeat, .error, .joinAck, .roomList] {
            #expect(!IMClientMachine.isNotice(IMFrame(command: command, serial: 0)), "\(command)")
        }
    }

    @Test("the same deadlines and the same later drop as frameReceived, with and without an answer awaited")
    func sameAsFrameReceived() throws {
        for awaitsAnswer in [false, true] {
            var general = ClientHarness()
            general.goOnline()
            if awaitsAnswer { general.record(try general.machine.request(.listRooms, body: [], now: general.now).actions) }
            var fast = general
            let notice = IMFrame.presence(of: "bob", online: true)
            // Notices every 3 s for 12 s: each starts an awaited answer's 5 s wait over.
            for _ in 0..<4 {
                general.now = general.now + .seconds(3)
                fast.now = general.now
                general.record(general.machine.timerFired(now: general.now))
                fast.record(fast.machine.timerFired(now: fast.now))
                let before = fast.machine.nextDeadline
                #expect(general.machine.frameReceived(notice, generation: general.generation, now: general.now) == [.notice(notice)])
                let receipt = fast.machine.noticeReceived(generation: fast.generation, now: fast.now)
                #expect(receipt == (awaitsAnswer ? .movedDeadline : .report))
                #expect(fast.machine.nextDeadline == general.machine.nextDeadline)
                if receipt == .report { #expect(fast.machine.nextDeadline == before) }
            }
            #expect(general.disconnects.isEmpty && fast.disconnects.isEmpty, "every notice kept the link alive")
            // Then silence: both drop at the same instant — an awaited answer 5 s after the last notice.
            let lastNotice = general.now
            let dropped = Self.dropInstant(&general)
            let fastDropped = Self.dropInstant(&fast)
            #expect(dropped != nil && fastDropped == dropped)
            #expect(fast.disconnects == general.disconnects)
            if awaitsAnswer { #expect(dropped == lastNotice + .seconds(5)) }
        }
    }

    /// When the machine drops the connection, a second at a time for a minute at most.
    static func dropInstant(_ harness: inout ClientHarness) -> LoopInstant? {
        for _ in 0..<60 {
            harness.advance(by: .seconds(1))
            if !harness.disconnects.isEmpty { return harness.now }
        }
        return nil
    }

    @Test("a read of notices leaves nothing for endOfInput; a delivery does until its DELIVER_ACK")
    func endOfInputAfterNotices() throws {
        var harness = ClientHarness()
        harness.goOnline()
        #expect(harness.machine.noticeReceived(generation: harness.generation, now: harness.now) == .report)
        let afterNotice = harness.machine.awaitsEndOfInput()
        #expect(!afterNotice)
        #expect(harness.machine.endOfInput(generation: harness.generation, now: harness.now).isEmpty, "what the owner skips")
        var message = IMChatMessage()
        message.id = "m1"
        message.from = "bob"
        message.seq = 9
        harness.record(
            harness.machine.frameReceived(IMFrame(command: .deliver, serial: 1, message: message), generation: harness.generation, now: harness.now))
        let afterDelivery = harness.machine.awaitsEndOfInput()
        #expect(afterDelivery)
        harness.record(harness.machine.endOfInput(generation: harness.generation, now: harness.now))
        #expect(try harness.lastWritten(.deliverAck)?.decode(IMDeliverAck.self).seqs == [9])
        let afterAck = harness.machine.awaitsEndOfInput()
        #expect(!afterAck)
    }

    @Test("an old transport's notice is dropped and changes nothing")
    func staleNotice() {
        var harness = ClientHarness()
        harness.goOnline()
        let deadline = harness.machine.nextDeadline
        harness.now = harness.now + .seconds(1)
        #expect(harness.machine.noticeReceived(generation: harness.generation + 1, now: harness.now) == .stale)
        #expect(harness.machine.noticeReceived(generation: harness.generation - 1, now: harness.now) == .stale)
        #expect(harness.machine.nextDeadline == deadline)
        var idle = ClientHarness()
        #expect(idle.machine.noticeReceived(generation: 0, now: idle.now) == .stale, "no transport yet")
    }

    @Test("a random UUID's text: lowercase 8-4-4-4-12, version 4, variant 10xx, never the same twice")
    func uuidText() {
        var seen = Set<String>()
        for _ in 0..<2_000 {
            let text = UUIDText.random()
            let groups = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            #expect(groups.map(\.count) == [8, 4, 4, 4, 12], "\(text)")
            #expect(text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || $0 == 0x2D }, "\(text)")
            #expect(groups[2].first == "4", "\(text)")
            #expect("89ab".contains(groups[3].first ?? "x"), "\(text)")
            seen.insert(text)
        }
        #expect(seen.count == 2_000)
    }
}
