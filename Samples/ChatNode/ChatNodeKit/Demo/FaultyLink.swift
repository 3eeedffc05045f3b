import RunLoopKit
import RunLoopNet

/// A TCP relay that can go silent — between clients and the node in the demo, between a node and
/// Redis in the cluster's chaos test: while ``isSilent`` it keeps every connection open and accepts
/// new ones but drops all bytes both ways — a blackholed path, as a lift or a dead NAT mapping (or a
/// firewall's DROP) looks to the endpoints. TCP itself notices nothing; only heartbeats, ping-pong
/// and command timeouts can.
///
/// Loop thread only (a ``HostedLoop`` of its own in the demo and the cluster's rig).
final class FaultyLink {
    // Internal: the demo and the chaos test (through @testable) use it; it is a test device, not an API.
    private let listener: TCPListener
    private let target: UInt16
    private var pairs: [ObjectIdentifier: (TCPConnection, TCPConnection)] = [:]
    /// Drop everything in both directions.
    var isSilent = false
    /// What traces call the two connections of each relayed pair (nil: their sockets).
    private let labels: (inbound: String, outbound: String)?

    /// - Parameter client: who connects through the link, for the names traces give its connections.
    init(targetPort: UInt16, naming client: String? = nil) throws(NetError) {
        target = targetPort
        labels = client.map { ("\($0) ↔ link", "link ↔ node for \($0)") }
        listener = TCPListener()
        listener.onAccept = { [weak self] _, inbound in self?.relay(inbound) }
        try listener.listen(host: "127.0.0.1", port: 0)
    }

    var port: UInt16 { listener.port }

    func close() {
        listener.close()
        for (inbound, outbound) in pairs.values {
            inbound.close(immediately: true)
            outbound.close(immediately: true)
        }
        pairs.removeAll()
    }

    private func relay(_ inbound: TCPConnection) {
        let outbound = TCPConnection()
        inbound.label = labels?.inbound
        outbound.label = labels?.outbound
        let key = ObjectIdentifier(inbound)
        pairs[key] = (inbound, outbound)
        inbound.onData = { [weak self, weak outbound] _, bytes in
            guard let self, !self.isSilent else { return }
            try? outbound?.write(bytes)
        }
        outbound.onData = { [weak self, weak inbound] _, bytes in
            guard let self, !self.isSilent else { return }
            try? inbound?.write(bytes)
        }
        // One side gone: take the other down too, unless the link is silent (then nothing passes,
        // not even the news of a close).
        inbound.onClose = { [weak self, weak outbound] _, _ in
            self?.pairs[key] = nil
            outbound?.close(immediately: true)
        }
        outbound.onClose = { [weak self, weak inbound] _, _ in
            guard let self else { return }
            if self.isSilent { return }
            self.pairs[key] = nil
            inbound?.close(immediately: true)
        }
        outbound.connect(to: .ipv4Loopback(port: target), timeout: .seconds(5))
    }
}
