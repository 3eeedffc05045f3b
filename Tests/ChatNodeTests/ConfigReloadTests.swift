import ChatNodeKit
import Logging
import Testing

/// ``ConfigReload``: what a SIGHUP does with settings read again — live changes applied, the
/// others kept until a restart, and nothing at all when the new settings are wrong.
@Suite("Config reload decisions")
struct ConfigReloadTests {
    @Test("limits and the log level are applied; ports and storage need a restart and keep their running values")
    func liveAndRestart() {
        let running = NodeSettings()
        var new = running
        new.maximumConnections = 5
        new.logLevel = .debug
        new.port = 7300
        new.database = "other.db"
        let reload = ConfigReload.decide(running: running, loaded: .success(new))
        #expect(reload.applied.map(\.description) == ["max-connections: 1024 → 5", "log-level: \"info\" → \"debug\""])
        #expect(reload.needsRestart.map(\.description) == ["port: 7100 → 7300", "database: unset → \"other.db\""])
        #expect(reload.errors.isEmpty)
        #expect(reload.settings.maximumConnections == 5)
        #expect(reload.settings.logLevel == .debug)
        #expect(reload.settings.port == 7100)
        #expect(reload.settings.database == nil)
        #expect(
            reload.report == [
                "configuration reloaded: max-connections: 1024 → 5",
                "configuration reloaded: log-level: \"info\" → \"debug\"",
                "configuration: port: 7100 → 7300 needs a restart; keeping 7100",
                "configuration: database: unset → \"other.db\" needs a restart; keeping unset"
            ])
    }

    @Test("settings that cannot be read change nothing and the report says why")
    func refused() {
        var running = NodeSettings()
        running.maximumConnections = 7
        let problem = ConfigProblem(.file("n.toml", line: 3), key: "port", "expected an integer, found a string")
        let reload = ConfigReload.decide(running: running, loaded: .failure(ConfigErrors([problem])))
        #expect(reload.settings == running)
        #expect(reload.applied.isEmpty && reload.needsRestart.isEmpty)
        #expect(reload.errors == [problem])
        #expect(
            reload.report == [
                "configuration reload refused, keeping every setting as it was:",
                "  n.toml:3: port: expected an integer, found a string"
            ])
    }

    @Test("new certificate files are live; turning TLS on or off needs a restart")
    func certificates() {
        var running = NodeSettings()
        running.tlsCertificate = "a.pem"
        running.tlsKey = "a.key"
        var renamed = running
        renamed.tlsCertificate = "b.pem"
        let live = ConfigReload.decide(running: running, loaded: .success(renamed))
        #expect(live.applied.map(\.key) == ["tls-cert"])
        #expect(live.settings.tlsCertificate == "b.pem")

        var plain = running
        plain.tlsCertificate = nil
        plain.tlsKey = nil
        let off = ConfigReload.decide(running: running, loaded: .success(plain))
        #expect(off.applied.isEmpty)
        #expect(off.needsRestart.map(\.key) == ["tls-cert", "tls-key"])
        #expect(off.settings.tlsCertificate == "a.pem")
        let on = ConfigReload.decide(running: plain, loaded: .success(running))
        #expect(on.needsRestart.map(\.key) == ["tls-cert", "tls-key"])
        #expect(on.settings.tlsCertificate == nil)
    }

    @Test("a changed PostgreSQL password is seen and needs a restart, but is never shown")
    func secretChange() {
        var running = NodeSettings()
        running.postgres = "postgresql://chat:old@db/chat"
        var new = running
        new.postgres = "postgresql://chat:new@db/chat"
        let reload = ConfigReload.decide(running: running, loaded: .success(new))
        #expect(reload.needsRestart.map(\.description) == ["postgres: \"postgresql://chat:***@db/chat\" → \"postgresql://chat:***@db/chat\""])
    }

    @Test("the same settings again: one line saying nothing changed")
    func unchanged() {
        let reload = ConfigReload.decide(running: NodeSettings(), loaded: .success(NodeSettings()))
        #expect(reload.report == ["configuration reloaded: no setting changed"])
    }

    @Test("every live key is applied by a reload, every other key waits for a restart")
    func everyKey() throws {
        for key in NodeSettingKey.all where !key.name.hasPrefix("tls-") {
            var new = NodeSettings()
            // A value of the key's type that differs from the default.
            let candidates: [ConfigValue] = [
                .unparsed("5"), .unparsed("2048"), .unparsed("false"), .unparsed("debug"), .unparsed("json"), .unparsed("x")
            ]
            for value in candidates {
                try? key.set(value, in: &new)
                if !(new == NodeSettings()) { break }
            }
            try #require(new != NodeSettings(), "no value found for \(key.name)")
            let reload = ConfigReload.decide(running: NodeSettings(), loaded: .success(new))
            #expect(reload.applied.map(\.key) == (key.isLive ? [key.name] : []), "\(key.name)")
            #expect(reload.needsRestart.map(\.key) == (key.isLive ? [] : [key.name]), "\(key.name)")
        }
    }
}
