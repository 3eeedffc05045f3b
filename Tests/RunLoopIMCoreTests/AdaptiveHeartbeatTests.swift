import RunLoopKit
import Testing

@testable import RunLoopIMCore

@Suite("Adaptive heartbeat")
struct AdaptiveHeartbeatTests {
    @Test("climbs a step after each run of successes, up to the maximum")
    func climbs() {
        var beat = AdaptiveHeartbeat(settings: .init())
        var seen: [Int64] = []
        for _ in 0..<40 {
            beat.recordSuccess(afterQuiet: beat.interval)
            seen.append(beat.interval.components.seconds)
        }
        #expect(seen.prefix(6) == [270, 270, 330, 330, 330, 390])
        #expect(beat.interval == .seconds(890))
    }

    @Test("a NAT-like failure settles just below the last interval that worked; further failures step back")
    func stepsBack() {
        var beat = AdaptiveHeartbeat(settings: .init())
        for _ in 0..<9 { beat.recordSuccess(afterQuiet: beat.interval) }
        #expect(beat.interval == .seconds(450))
        beat.recordNATLikeFailure(afterQuiet: .seconds(450))
        #expect(beat.interval == .seconds(370), "20 s below the 390 s that worked")
        #expect(beat.isSettled)
        for _ in 0..<10 { beat.recordSuccess(afterQuiet: beat.interval) }
        #expect(beat.interval == .seconds(370), "settled: no more climbing")
        beat.recordNATLikeFailure(afterQuiet: .seconds(370))
        #expect(beat.interval == .seconds(310))
        beat.reset()
        #expect(beat.interval == .seconds(270) && !beat.isSettled && beat.longestSuccess == nil)
    }

    @Test("never below the minimum")
    func floor() {
        var beat = AdaptiveHeartbeat(settings: .init(initial: .seconds(90), minimum: .seconds(60)))
        for _ in 0..<10 { beat.recordNATLikeFailure(afterQuiet: beat.interval) }
        #expect(beat.interval == .seconds(60))
    }

    @Test("in the client: a heartbeat that dies after a long quiet spell teaches the schedule; a new network resets it")
    func inTheClient() {
        let settings = AdaptiveHeartbeat.Settings(
            initial: .seconds(60), minimum: .seconds(30), maximum: .seconds(300),
            step: .seconds(30), successesBeforeGrowing: 2, settleMargin: .seconds(10))
        var harness = ClientHarness { $0.heartbeat = .adaptive(settings) }
        harness.goOnline()
        // A NAT that forgets mappings idle for more than 100 s: beats after ≤ 100 s are answered.
        var intervals: [Duration] = []
        while harness.disconnects.isEmpty {
            let before = harness.now
            harness.fireNext()
            guard let beat = harness.lastWritten(.heartbeat), harness.written(.heartbeat).count > intervals.count else { continue }
            let quiet = harness.now - before
            intervals.append(quiet)
            if quiet <= .seconds(100) { harness.receive(IMFrame(command: .heartbeatAck, serial: beat.serial)) }
        }
        #expect(intervals.map { $0.components.seconds } == [60, 60, 90, 90, 120])
        #expect(harness.disconnects == [.answerTimeout(.seconds(5))])
        #expect(harness.machine.heartbeatInterval == .seconds(80), "settled 10 s below the 90 s that worked")
        harness.record(harness.machine.networkChanged(reachable: false, reason: "wifi off", now: harness.now))
        harness.record(harness.machine.networkChanged(reachable: true, reason: "", now: harness.now))
        #expect(harness.machine.heartbeatInterval == .seconds(60))
    }
}
