import RunLoopTesting
import Testing

@testable import RunLoopTLS

/// OpenSSL's session on memory BIOs, two of them wired back to back in memory: no loop, no socket.
@Suite struct TLSEngineTests {
    /// Hands each side's records to the other until neither has more.
    static func pump(_ a: TLSEngine, _ b: TLSEngine) {
        while true {
            let fromA = a.takeOutput()
            let fromB = b.takeOutput()
            if fromA.isEmpty && fromB.isEmpty { return }
            b.feed(fromA)
            a.feed(fromB)
        }
    }

    /// A client and a server session of `pki`'s, handshaken.
    static func connectedPair(_ pki: TestPKI) throws -> (client: TLSEngine, server: TLSEngine) {
        let client = try TLSEngine(context: pki.clientContext(), serverName: "localhost")
        let server = try TLSEngine(context: pki.serverContext(), serverName: nil)
        var done = (client: false, server: false)
        for _ in 0..<10 where !(done.client && done.server) {
            done.client = done.client || client.handshake() == .finished
            pump(client, server)
            done.server = done.server || server.handshake() == .finished
            pump(client, server)
        }
        #expect(done.client && done.server)
        return (client, server)
    }

    @Test("the server sends no session ticket: nothing here resumes sessions")
    func noTickets() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (client, server) = try Self.connectedPair(pki)
        // Post-handshake messages (a TLS 1.3 ticket) are taken in by a read.
        _ = server.read(shouldContinue: { true }) { _ in }
        Self.pump(client, server)
        _ = client.read(shouldContinue: { true }) { _ in }
        #expect(!client.hasResumableSession)
    }

    @Test("a session that moved a large burst keeps no BIO buffer the size of it once idle")
    func buffersAreReleasedAfterABurst() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (client, server) = try Self.connectedPair(pki)
        let burst = [UInt8](repeating: 42, count: 64 * 1024)
        try client.write(burst)
        server.feed(client.takeOutput())
        var received = 0
        let outcome = server.read(shouldContinue: { true }) { received += $0.count }
        #expect(received == burst.count && outcome == .needsMoreInput)
        #expect(!client.mayHoldLargeBuffers && !server.mayHoldLargeBuffers)
    }
}
