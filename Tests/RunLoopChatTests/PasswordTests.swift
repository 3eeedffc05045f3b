import Glibc
import RunLoopChat
import RunLoopKit
import RunLoopTesting
import Testing

@Suite("Password hashes")
struct PasswordHasherTests {
    @Test("scrypt hashes verify, carry their parameters and salt, and never contain the password")
    func roundTrip() {
        let hasher = PasswordHasher(rounds: 1 << 10)
        let first = hasher.hash("correct horse")
        let second = hasher.hash("correct horse")
        #expect(first.hasPrefix("scrypt$N=1024,r=8,p=1$") && first != second, "salted: \(first)")
        #expect(!first.contains("correct"))
        #expect(PasswordHasher.verify("correct horse", against: first))
        #expect(!PasswordHasher.verify("correct horsf", against: first))
        for broken in [
            "", "scrypt$", "sha256$N=2,r=8,p=1$00$00", "scrypt$N=3,r=8,p=1$00$00", "scrypt$N=1024,r=8,p=1$zz$00",
            "scrypt$N=1099511627776,r=8,p=1$00$00"
        ] {
            #expect(!PasswordHasher.verify("x", against: broken), "\(broken)")
        }
    }
    @Test(
        "stored hashes are standard scrypt (RFC 7914 §12's test vectors): hashes made by any scrypt implementation, ours included before the switch to OpenSSL, keep verifying"
    )
    func rfc7914Vectors() {
        func stored(_ parameters: String, salt: String, key: String) -> String {
            "scrypt$\(parameters)$\(salt.utf8.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())$\(key)"
        }
        let nacl = stored(
            "N=1024,r=8,p=16", salt: "NaCl",
            key: "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640")
        let sodium = stored(
            "N=16384,r=8,p=1", salt: "SodiumChloride",
            key: "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887")
        #expect(PasswordHasher.verify("password", against: nacl))
        #expect(!PasswordHasher.verify("passwore", against: nacl))
        #expect(PasswordHasher.verify("pleaseletmein", against: sodium))
        #expect(!PasswordHasher.verify("pleaseletmeim", against: sodium))
    }
}

@Suite("Password workers")
struct PasswordWorkersTests {
    @Test("password hashing runs on a fixed number of worker threads: a burst of checks waits its turn instead of taking a thread each")
    func boundedWorkers() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let workers = PasswordWorkers(count: 2, loop: loop)
            let running = LockedBox(0)
            let peak = LockedBox(0)
            var done = 0
            for _ in 0..<8 {
                workers.run(
                    {
                        var now = 0
                        running.update {
                            $0 += 1; now = $0
                        }
                        peak.update { $0 = max($0, now) }
                        usleep(20_000)
                        running.update { $0 -= 1 }
                        return true
                    }, then: { _ in done += 1 })
            }
            try #require(try spin(loop) { done == 8 })
            #expect(peak.get() == 2 && workers.peakBusy == 2)
        }
    }
}
