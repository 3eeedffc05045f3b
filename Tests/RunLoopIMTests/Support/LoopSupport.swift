import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopTesting

/// Records everything a client reports.
final class ClientRecorder {
    var states: [IMConnectionState] = []
    var onlineAt: [LoopInstant] = []
    var disconnects: [(LoopInstant, IMDisconnectReason)] = []
    var messages: [IMMessage] = []
    var deliveries: [String: [IMDeliveryState]] = [:]

    func attach(to client: IMClient) {
        client.onStateChange = { [weak self] client, state in
            guard let self else { return }
            self.states.append(state)
            if state == .online { self.onlineAt.append(client.loop.now) }
        }
        client.onDisconnect = { [weak self] client, reason in self?.disconnects.append((client.loop.now, reason)) }
        client.onMessage = { [weak self] _, message in self?.messages.append(message) }
        client.onDelivery = { [weak self] _, id, state in self?.deliveries[id, default: []].append(state) }
    }

    func finalStates() -> [IMDeliveryState] { deliveries.values.compactMap { $0.last(where: \.isFinal) } }
    var storedCount: Int { finalStates().filter { if case .stored = $0 { return true } else { return false } }.count }
    var failedCount: Int { finalStates().filter { if case .failed = $0 { return true } else { return false } }.count }
    /// Ids that reached a final state more than once: must stay empty.
    var settledTwice: [String] { deliveries.filter { $0.value.filter(\.isFinal).count > 1 }.map(\.key) }
}

func clientConfiguration(_ user: String, password: String = "pw", _ tweak: (inout IMClientConfiguration) -> Void = { _ in }) -> IMClientConfiguration
{
    var configuration = IMClientConfiguration(user: user, password: password)
    configuration.heartbeat = .fixed(.seconds(5))
    configuration.answerTimeout = .seconds(5)
    configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(400))
    configuration.jitter = .seeded(7)
    tweak(&configuration)
    return configuration
}

func makeClient(_ configuration: IMClientConfiguration, port: UInt16) -> IMClient {
    IMClient(configuration: configuration, connector: TCPFrameLink.connector(host: "127.0.0.1", port: port, connectTimeout: .seconds(5)))
}

/// A client of `server` on its loop, connected through in-memory links (a fresh pair per attempt).
func makeClient(_ configuration: IMClientConfiguration, server: IMServer, modes: [RunLoop.Mode] = [.common]) -> IMClient {
    IMClient(configuration: configuration, loop: server.loop, modes: modes, connector: MemoryLinkConnector(server: server).connector)
}
