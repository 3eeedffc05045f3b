import ChatNodeKit
import Glibc
import RunLoopChat
import RunLoopTesting
import Testing

/// A node whose OpenSSL cannot derive scrypt would refuse every password as wrong, the right ones
/// included, and look healthy while doing it: it must refuse to start instead, saying why.
@Suite("chat-node refuses to start without scrypt")
struct PasswordHashingStartupTests {
    @Test("this machine's OpenSSL derives RFC 7914's first vector: the start-up check passes")
    func checkPassesHere() throws {
        try PasswordHasher.checkAvailable()
    }

    @Test(
        "with an OpenSSL configuration that loads only the null provider, `serve` and `account list` exit 1 naming scrypt and OPENSSL_CONF, before serving"
    )
    func refusedWithoutScrypt() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        #expect(try runCommand([ChatNodeBinary.path, "migrate", "--database", path]).status == 0)
        // A configuration that activates a provider stops OpenSSL from loading its default one.
        let configuration = "\(path).openssl.cnf"
        let text = "openssl_conf = init\n[init]\nproviders = providers\n[providers]\nnull = null\n[null]\nactivate = 1\n"
        let file = try #require(fopen(configuration, "w"))
        fputs(text, file)
        fclose(file)
        defer { unlink(configuration) }
        let environment = ["/usr/bin/env", "OPENSSL_CONF=\(configuration)"]
        // `timeout`: a node that starts anyway would serve until killed; 124 then fails the test.
        for arguments in [["account", "list"], ["serve", "--port", "0", "--no-http"]] {
            let result = try runCommand(
                environment + ["/usr/bin/timeout", "20", ChatNodeBinary.path] + arguments + ["--database", path])
            #expect(result.status == 1, "\(arguments): \(result.status) \(result.errorOutput)")
            #expect(
                result.errorOutput.contains("scrypt is not available from OpenSSL") && result.errorOutput.contains("OPENSSL_CONF"),
                "\(arguments): \(result.errorOutput)")
        }
    }
}
