import MetricsTestKit
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

@Suite("IM server metrics (manual clock)")
struct ServerMetricsTests {
    @Test("a LOGIN's refusal code decides its result label: wrong credentials failed, limits limited, the rest other")
    func loginResults() {
        #expect(IMServerMetrics.LoginResult(refusal: .authenticationFailed) == .failed)
        #expect(IMServerMetrics.LoginResult(refusal: .rateLimited) == .limited)
        #expect(IMServerMetrics.LoginResult(refusal: .tooManyConnections) == .limited)
        for code in [IMStatusCode.internalError, .shuttingDown, .badRequest] { #expect(IMServerMetrics.LoginResult(refusal: code) == .other) }
        #expect(IMStatusCode.rateLimited.metricLabel == "rate_limited")
    }

    @Test(
        "sessions by transport, logins ok, failed and limited, messages stored, delivered and refused by reason, unacknowledged deliveries back to 0, store calls timed"
    )
    func serverCounts() async throws {
        try await onManualClockLoop { loop, clock in
            let metrics = TestMetrics()
            var settings = IMServer.Settings()
            settings.maximumSessionsPerUser = 1
            settings.session.maximumMessagesPerSecond = 1
            settings.session.messageBurst = 1
            let bench = MemoryIMBench(
                loop: loop, clock: clock, settings: settings, store: InMemoryIMStore(accounts: ["alice": "pw", "bob": "pw", "carol": "pw"]),
                metricsFactory: metrics)
            let alice = bench.client(clientConfiguration("alice"))
            let bob = bench.client(clientConfiguration("bob"))
            try #require(try bench.runUntil { alice.state == .online && bob.state == .online })
            #expect(try metrics.expectMeter("im_sessions", [("transport", "other")]).lastValue == 2)
            #expect(try metrics.expectCounter("im_logins_total", [("result", "ok")]).totalValue == 2)

            // Carol has no session: a login of Alice's or Bob's would meet the session limit first.
            let wrong = bench.client(clientConfiguration("carol", password: "nope"))
            let second = bench.client(clientConfiguration("alice") { $0.clientInstance = "second" })
            try #require(try bench.runUntil { if case .closed = wrong.state { return true } else { return false } })
            try #require(try bench.runUntil { metrics.counterTotal(label: "im_logins_total", dimensions: [("result", "limited")]) >= 1 })
            second.close()
            #expect(try metrics.expectCounter("im_logins_total", [("result", "failed")]).totalValue == 1)

            var received: [String] = []
            bob.onMessage = { _, message in received.append(message.text) }
            // A burst of one: the second SEND is refused for its rate, and the client sends it again later.
            _ = try alice.send("one", to: .user("bob"))
            _ = try alice.send("two", to: .user("bob"))
            try #require(try bench.runUntil { received == ["one", "two"] })
            #expect(try metrics.expectCounter("im_messages_refused_total", [("reason", "rate_limited")]).totalValue >= 1)
            #expect(try metrics.expectCounter("im_messages_stored_total").totalValue == 2)
            #expect(try metrics.expectCounter("im_messages_delivered_total").totalValue == 2)
            try #require(try bench.runUntil { (try? metrics.expectMeter("im_deliveries_unacknowledged").lastValue) == 0 })
            #expect(try metrics.expectTimer("im_store_call_duration_seconds", [("call", "store")]).values.count == 2)
            #expect(try metrics.expectTimer("im_store_call_duration_seconds", [("call", "login")]).values.count >= 3)

            try bench.close()
            #expect(try metrics.expectMeter("im_sessions", [("transport", "other")]).lastValue == 0)
        }
    }
}
