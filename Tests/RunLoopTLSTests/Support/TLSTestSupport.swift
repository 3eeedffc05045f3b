import Foundation
import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopTesting

extension TestPKI {
    /// A server context presenting `leaf`.
    func serverContext(
        _ leaf: Leaf = .server, protocols: [String] = [], handshakeTimeout: Duration? = .seconds(10)
    ) throws -> TLSContext {
        var configuration = TLSConfiguration.server(certificateChainFile: certificate(leaf), privateKeyFile: key(leaf))
        configuration.applicationProtocols = protocols
        configuration.handshakeTimeout = handshakeTimeout
        return try TLSContext(configuration)
    }

    /// A client context trusting the test CA only.
    func clientContext(protocols: [String] = []) throws -> TLSContext {
        var configuration = TLSConfiguration.client(trust: .caFile(caFile))
        configuration.applicationProtocols = protocols
        return try TLSContext(configuration)
    }
}

/// A TCP listener on 127.0.0.1, port 0, whose connections become TLS sessions with ``context`` (read
/// at each accept, so a test can swap it) and echo what they receive.
final class EchoTLSServer {
    let listener = TCPListener()
    var context: TLSContext
    var echoes = true
    var sessions: [TLSConnection] = []
    var opened = 0
    var receivedBytes = 0
    var closes: [TLSCloseReason] = []
    var onOpen: ((TLSConnection) -> Void)?

    init(context: TLSContext) throws {
        self.context = context
        // Weak: the loop's teardown closes what is left after the test let go of the server.
        listener.onAccept = { [weak self] _, tcp in
            guard let self else { return tcp.close(immediately: true) }
            let session = TLSConnection(accepted: tcp, context: self.context)
            session.onConnect = { [weak self] session in
                self?.opened += 1
                self?.onOpen?(session)
            }
            session.onData = { [weak self] session, bytes in
                guard let self else { return }
                self.receivedBytes += bytes.count
                if self.echoes { try? session.write(bytes) }
            }
            session.onClose = { [weak self] _, reason in self?.closes.append(reason) }
            self.sessions.append(session)
        }
        try listener.listen()
    }

    var port: UInt16 { listener.port }
}

/// A client session that collects what arrives and how it ends.
final class CollectingClient {
    let tls: TLSConnection
    var received: [UInt8] = []
    var opened = false
    var closeReason: TLSCloseReason?

    init(context: TLSContext) {
        tls = TLSConnection(context: context)
        tls.onConnect = { [weak self] _ in self?.opened = true }
        tls.onData = { [weak self] _, bytes in self?.received += bytes }
        tls.onClose = { [weak self] _, reason in self?.closeReason = reason }
    }

    func connect(port: UInt16, serverName: String? = nil) {
        tls.connect(to: "127.0.0.1", port: port, serverName: serverName)
    }
}

/// A certificate verify failure's kind, or nil for any other end.
func certificateProblem(_ reason: TLSCloseReason?) -> TLSCertificateProblem.Kind? {
    if case .failed(.certificateRejected(let problem)) = reason { return problem.kind }
    return nil
}
