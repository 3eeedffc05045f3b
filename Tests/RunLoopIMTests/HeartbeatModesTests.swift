import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

@Suite("Heartbeat and run loop modes")
struct HeartbeatModesTests {
    /// Client and server on one manual-clock loop over in-memory links: five minutes of a "modal"
    /// mode pass in milliseconds.
    private func runModal(clientModes: [RunLoop.Mode]) async throws -> (beats: Int, disconnects: [IMDisconnectReason], ended: [IMSessionEndReason]) {
        try await onManualClockLoop { loop, _ in
            loop.addCommonMode("modal")
            let server = IMServer(store: InMemoryIMStore())
            var ended: [IMSessionEndReason] = []
            server.onSessionEnd = { _, _, reason in ended.append(reason) }
            let configuration = clientConfiguration("alice") {
                $0.heartbeat = .fixed(.seconds(30))
                $0.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(600), maximumDelay: .seconds(600))
            }
            let client = makeClient(configuration, server: server, modes: clientModes)
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try spin(loop) { client.state == .online }
            let recorder = ActivityRecorder()
            recorder.attach(to: loop, modes: ["modal"])
            try loop.run("modal", timeout: .seconds(300))
            recorder.detach()
            let result = (recorder.count(of: "T:im.client alice"), log.disconnects.map(\.1), ended)
            client.close()
            server.shutdown()
            return result
        }
    }

    @Test("in the common modes (the default) the heartbeat keeps beating while the loop runs a modal mode")
    func commonModesKeepBeating() async throws {
        let result = try await runModal(clientModes: [.common])
        #expect(result.beats == 10, "one beat per 30 s of quiet over 300 s")
        #expect(result.disconnects.isEmpty && result.ended.isEmpty)
    }

    @Test("in the default mode only, the heartbeat stops in a modal run and the server drops the silent client")
    func defaultModeOnlyIsTheClassicTrap() async throws {
        let result = try await runModal(clientModes: [.default])
        #expect(result.beats == 0)
        #expect(result.ended == [.keepaliveExpired(silentFor: .seconds(45))])
    }
}
