import ChatNodeKit
import Logging
import RunLoopIMCore
import Testing

/// The config file, the environment and flags, layered into the settings `chat-node serve` runs
/// with (ChatNodeKit/Config): types, ranges, unknown keys with their lines, precedence, masking.
@Suite("Node settings: config file, environment, flags")
struct NodeSettingsTests {
    @Test("a file's keys of every type set their settings, in order, each with its line")
    func fileTypes() throws {
        let file = try ConfigFile(
            path: "node.toml",
            text: """
                # a comment
                host = "::1"
                port = 7200
                http = false
                messages-per-second = 12.5
                log-level = "debug"
                "max-connections" = 9
                """)
        #expect(file.entries.map(\.key) == ["host", "port", "http", "messages-per-second", "log-level", "max-connections"])
        #expect(file.entries.map(\.line) == [2, 3, 4, 5, 6, 7])
        let settings = try ResolvedSettings.resolve(file: file, environment: [:], flags: [:]).settings
        #expect(settings.host == "::1")
        #expect(settings.port == 7200)
        #expect(settings.http == false)
        #expect(settings.messagesPerSecond == 12.5)
        #expect(settings.logLevel == .debug)
        #expect(settings.maximumConnections == 9)
    }

    @Test("an integer where a float is expected is taken; a float where an integer is expected is not")
    func numbers() throws {
        let file = try ConfigFile(path: "n.toml", text: "messages-per-second = 5\nmax-connections = 5.5\n")
        let errors = try #require(throws: ConfigErrors.self) { try ResolvedSettings.resolve(file: file, environment: [:], flags: [:]) }
        #expect(errors.description == "n.toml:2: max-connections: expected an integer, found a float")
    }

    @Test("unknown keys, wrong types and values out of range are all reported, each with file, line and key")
    func fileErrors() throws {
        let file = try ConfigFile(
            path: "/etc/chat-node.toml",
            text: """
                prot = 7100
                port = "7100"
                scrypt-cost = 30
                [tls]
                cert = "x"
                log-format = "xml"
                """)
        let errors = try #require(throws: ConfigErrors.self) { try ResolvedSettings.resolve(file: file, environment: [:], flags: [:]) }
        #expect(
            errors.problems.map(\.description) == [
                "/etc/chat-node.toml:1: prot: unknown key",
                "/etc/chat-node.toml:2: port: expected an integer, found a string",
                "/etc/chat-node.toml:3: scrypt-cost: 30 is outside 4...20",
                "/etc/chat-node.toml:4: tls: unknown key"
            ])
    }

    @Test("a table where a value is expected names its kind")
    func tableValue() throws {
        let file = try ConfigFile(path: "t.toml", text: "host = { a = 1 }\nlog-format = \"xml\"\n")
        let errors = try #require(throws: ConfigErrors.self) { try ResolvedSettings.resolve(file: file, environment: [:], flags: [:]) }
        #expect(
            errors.problems.map(\.description) == [
                "t.toml:1: host: expected a string, found a table",
                "t.toml:2: log-format: \"xml\" is not one of text, json"
            ])
    }

    @Test("a syntax error names the file and the line toml++ found it on")
    func syntaxError() throws {
        let errors = try #require(throws: ConfigErrors.self) { try ConfigFile(path: "bad.toml", text: "port = 7100\nhost = \"unclosed\n") }
        let problem = try #require(errors.problems.first)
        #expect(problem.source == .file("bad.toml", line: 2))
        #expect(errors.description.hasPrefix("bad.toml:2: "), "\(errors)")
    }

    @Test("a file that cannot be read is an error naming it")
    func missingFile() throws {
        let errors = try #require(throws: ConfigErrors.self) { try ConfigFile(contentsOf: "/nonexistent/chat-node.toml") }
        #expect(errors.description == "/nonexistent/chat-node.toml: cannot read the file: No such file or directory")
    }

    @Test("the environment overrides the file, a flag overrides both, and each value's source is kept")
    func precedence() throws {
        let file = try ConfigFile(path: "p.toml", text: "port = 1\nmax-connections = 2\nlogin-seconds = 3\n")
        let resolved = try ResolvedSettings.resolve(
            file: file,
            environment: ["CHAT_NODE_MAX_CONNECTIONS": "20", "CHAT_NODE_LOGIN_SECONDS": "30", "CHAT_NODE_SCRYPT_COST": "", "HOME": "/root"],
            flags: ["login-seconds": .unparsed("300")])
        #expect(resolved.settings.port == 1)
        #expect(resolved.settings.maximumConnections == 20)
        #expect(resolved.settings.loginSeconds == 300)
        #expect(resolved.settings.scryptCost == 14, "an empty variable counts as unset")
        #expect(resolved.sources["port"] == .file("p.toml", line: 1))
        #expect(resolved.sources["max-connections"] == .environment("CHAT_NODE_MAX_CONNECTIONS"))
        #expect(resolved.sources["login-seconds"] == .flag("--login-seconds"))
        #expect(resolved.sources["scrypt-cost"] == nil)
    }

    @Test("an environment variable or a flag of the wrong type is named in the error")
    func textErrors() throws {
        let errors = try #require(throws: ConfigErrors.self) {
            try ResolvedSettings.resolve(
                file: nil, environment: ["CHAT_NODE_PORT": "seventy", "CHAT_NODE_REGISTRATION": "maybe"], flags: ["http-port": .unparsed("70000")])
        }
        #expect(
            errors.problems.map(\.description) == [
                "CHAT_NODE_PORT: port: expected an integer, found \"seventy\"",
                "CHAT_NODE_REGISTRATION: registration: expected a boolean (true or false), found \"maybe\"",
                "--http-port: http-port: 70000 is outside 0...65535"
            ])
    }

    @Test("every key's variable is CHAT_NODE_ and its name in upper case, the existing two included")
    func environmentNames() {
        let names = NodeSettingKey.all.map(\.environmentName)
        #expect(names.contains("CHAT_NODE_POSTGRES"))
        #expect(names.contains("CHAT_NODE_REDIS"))
        #expect(names.contains("CHAT_NODE_MAX_SESSIONS_PER_USER"))
        #expect(Set(names).count == names.count)
    }

    @Test("rules between settings are checked on the layered result")
    func inconsistencies() throws {
        let file = try ConfigFile(path: "c.toml", text: "redis = \"redis://127.0.0.1\"\ntls-cert = \"c.pem\"\n")
        let errors = try #require(throws: ConfigErrors.self) { try ResolvedSettings.resolve(file: file, environment: [:], flags: [:]) }
        #expect(errors.problems.contains { $0.reason.contains("--redis needs --postgres") })
        #expect(errors.problems.contains { $0.reason == "tls-cert and tls-key go together" })
        #expect(!errors.problems.contains { $0.reason.contains("no-http") }, "the web port speaks TLS too")
        let both = try #require(throws: ConfigErrors.self) {
            try ResolvedSettings.resolve(file: nil, environment: ["CHAT_NODE_POSTGRES": "postgresql:///chat"], flags: ["database": .unparsed("a.db")])
        }
        #expect(both.problems.map(\.reason) == ["database and postgres both set: use one store"])
    }

    @Test("the summary is TOML a file could hold, with sources as comments and the PostgreSQL password masked")
    func summary() throws {
        let resolved = try ResolvedSettings.resolve(
            file: nil, environment: ["CHAT_NODE_POSTGRES": "postgresql://chat:s3cret@127.0.0.1:5432/chat?sslmode=disable"], flags: [:])
        let summary = resolved.summary
        #expect(!summary.contains("s3cret"))
        #expect(summary.contains("postgres = \"postgresql://chat:***@127.0.0.1:5432/chat?sslmode=disable\"  # CHAT_NODE_POSTGRES"))
        #expect(summary.contains("# database is unset"))
        #expect(summary.contains("port = 7100\n"))
        let reread = try ConfigFile(path: "summary", text: summary)
        #expect(reread.entries.count == NodeSettingKey.all.count - 7, "every key but the seven unset ones")
    }

    @Test("passwords are masked in URLs and in key=value connection strings")
    func masking() {
        let key = NodeSettingKey.named("postgres")!
        var settings = NodeSettings()
        settings.postgres = "host=/tmp dbname=chat password=hunter2 user=chat"
        #expect(key.shown(in: settings) == "\"host=/tmp dbname=chat password=*** user=chat\"")
        settings.postgres = "postgresql://chat@db/chat?password=hunter2&sslmode=require"
        #expect(key.shown(in: settings) == "\"postgresql://chat@db/chat?password=***&sslmode=require\"")
        settings.postgres = "postgresql://chat:pw@db/chat"
        #expect(key.shown(in: settings) == "\"postgresql://chat:***@db/chat\"")
    }

    @Test("the settings become the node's configuration as serve's flags always did")
    func nodeConfiguration() throws {
        var settings = NodeSettings()
        settings.http = false
        settings.maximumRoomsPerUser = 0
        settings.loginSeconds = 7
        settings.scryptCost = 4
        settings.keepDays = 30
        settings.largeRoomMembers = 7
        let configuration = try settings.nodeConfiguration()
        #expect(configuration.largeRoomMembers == 7)
        #expect(try NodeSettings().nodeConfiguration().largeRoomMembers == 1_000)
        #expect(configuration.retention?.keep == .seconds(30 * 86_400))
        #expect(try NodeSettings().nodeConfiguration().retention == nil, "history is kept unless keep-days is set")
        #expect(configuration.httpPort == nil)
        #expect(configuration.maximumRoomsPerUser == nil)
        #expect(configuration.session.loginTimeout == .seconds(7))
        guard case .sqlite(let path) = configuration.storage else {
            Issue.record("\(configuration.storage)")
            return
        }
        #expect(path == "chat-node.db")
        #expect(try NodeSettings().nodeConfiguration().httpPort == 7101)
    }
}
