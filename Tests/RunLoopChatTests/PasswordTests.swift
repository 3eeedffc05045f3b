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
