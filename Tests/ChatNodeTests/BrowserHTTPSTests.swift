import Foundation
import RunLoopTesting
import Testing

@Suite("Chat node's page over HTTPS in a browser")
struct BrowserHTTPSTests {
    /// Where the page's screenshot over HTTPS is kept.
    static let artifacts = BrowserEnvironment.repository.appendingPathComponent(".build/test-artifacts/browser-https").path

    @Test(
        "Chromium trusting a throw-away test CA (an NSS database in a temporary HOME, no error ignored) loads the page over HTTPS, rates it secure, logs in over wss:// and chats both ways; a certificate the CA signed for another host name is refused: no page, no socket",
        .browserAvailable, .nssToolsAvailable, .timeLimit(.minutes(3))
    )
    func pageOverHTTPS() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        print("screenshot in \(Self.artifacts)")
        try await BrowserEnvironment.shared.expectPasses(
            "browser_https.py", screenshots: Self.artifacts,
            arguments: [
                "--ca", pki.caFile, "--cert", pki.certificate(.server), "--key", pki.key(.server),
                "--wrong-cert", pki.certificate(.wrongName), "--wrong-key", pki.key(.wrongName)
            ])
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where `certutil` can make the browser's NSS database.
    static var nssToolsAvailable: Self {
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/certutil"),
            "needs certutil for the browser's NSS database (libnss3-tools: bash Scripts/setup.sh --tests)")
    }
}
