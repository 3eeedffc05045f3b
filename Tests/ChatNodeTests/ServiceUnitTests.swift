import Foundation
import Glibc
import RunLoopTesting
import Testing

/// `Samples/ChatNode/systemd/chat-node.service`: what it must say for the node it runs, the binary path
/// the README's install steps create, and systemd's own reading of it where `systemd-analyze` is.
@Suite("the systemd unit")
struct ServiceUnitTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private static let unitPath = root.appendingPathComponent("Samples/ChatNode/systemd/chat-node.service").path

    /// `[Section]` → key → values, in order (a key may repeat); comments and blank lines skipped.
    private func unit() throws -> [String: [String: [String]]] {
        var sections: [String: [String: [String]]] = [:]
        var section: String?
        for raw in try String(contentsOfFile: Self.unitPath, encoding: .utf8).split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let current = try #require(section, "a key before any section: \(line)")
            try #require(parts.count == 2, "not KEY=VALUE: \(line)")
            sections[current, default: [:]][parts[0], default: []].append(parts[1])
        }
        return sections
    }

    @Test("Type=notify with the watchdog, restarts, reload by SIGHUP, its own user and state directory, and the hardening")
    func says() throws {
        let service = try #require(try unit()["Service"])
        let expected = [
            "Type": "notify", "NotifyAccess": "main", "Restart": "on-failure", "ExecReload": "/bin/kill -HUP $MAINPID",
            "User": "chat-node", "StateDirectory": "chat-node", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
            "ProtectHome": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes", "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
            "SystemCallFilter": "@system-service"
        ]
        for (key, value) in expected { #expect(service[key] == [value], "\(key)") }
        #expect(service["WatchdogSec"]?.first.flatMap { Int($0) }.map { $0 > 0 } == true)
        #expect(service["LimitNOFILE"]?.first.flatMap { Int($0) }.map { $0 >= 1024 } == true)
        #expect(try unit()["Install"]?["WantedBy"] == ["multi-user.target"])
    }

    @Test("ExecStart runs the binary the README installs, on a database in the state directory")
    func execStart() throws {
        let service = try #require(try unit()["Service"])
        let words = try #require(service["ExecStart"]?.first).split(separator: " ").map(String.init)
        #expect(words.first == "/usr/local/bin/chat-node")
        #expect(Array(words.dropFirst().prefix(1)) == ["serve"])
        let database = try #require(words.firstIndex(of: "--database").map { words[$0 + 1] })
        #expect(database.hasPrefix("/var/lib/\(service["StateDirectory"]?.first ?? "?")/"), "\(database)")
        let readme = try String(contentsOf: Self.root.appendingPathComponent("Samples/ChatNode/README.md"), encoding: .utf8)
        #expect(readme.contains("sudo install -m 755 .build/release/chat-node /usr/local/bin/chat-node"))
        #expect(readme.contains("sudo install -m 644 Samples/ChatNode/systemd/chat-node.service /etc/systemd/system/"))
    }

    @Test("systemd-analyze verify finds nothing to say (ExecStart pointed at the built binary)")
    func systemdReadsIt() throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard access(analyze, X_OK) == 0 else {
            print("skipped: no \(analyze) (Scripts/setup.sh --tests installs systemd)")
            return
        }
        let directory = temporaryPath("unit")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // verify checks that the binary exists; the installed path does not on a build machine.
        let text = try String(contentsOfFile: Self.unitPath, encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/chat-node", with: ChatNodeBinary.path)
        try text.write(toFile: directory + "/chat-node.service", atomically: true, encoding: .utf8)
        let result = try runCommand([analyze, "verify", directory + "/chat-node.service"])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.errorOutput.isEmpty, "\(result.errorOutput)")

        // The witness: a key systemd does not know is reported.
        try (text + "Bogus=1\n").write(toFile: directory + "/chat-node.service", atomically: true, encoding: .utf8)
        let bogus = try runCommand([analyze, "verify", directory + "/chat-node.service"])
        #expect(bogus.errorOutput.contains("Unknown key 'Bogus'"), "\(bogus.errorOutput)")
    }
}
