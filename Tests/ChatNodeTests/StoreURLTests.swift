import ChatNodeKit
import Glibc
import RunLoopPostgres
import RunLoopRedis
import Testing

/// `--postgres` read by libpq's parser, `--redis` by hand; passwords never shown.
@Suite("Store addresses")
struct StoreURLTests {
    @Test("a full PostgreSQL URI: user, password, host, port, database; other keywords go to libpq; connect_timeout to the loop's clock")
    func fullPostgresURI() throws {
        let configuration = try PostgresURL.parse("postgresql://chat:s3cret@db.example:6543/chatdb?sslmode=require&connect_timeout=5")
        #expect(configuration.host == "db.example")
        #expect(configuration.port == 6543)
        #expect(configuration.user == "chat")
        #expect(configuration.password == "s3cret")
        #expect(configuration.database == "chatdb")
        #expect(configuration.options == ["sslmode": "require"])
        #expect(configuration.connectTimeout == .seconds(5))
    }

    @Test("a socket directory as ?host=, and libpq's defaults for what is left out")
    func socketAndDefaults() throws {
        let socket = try PostgresURL.parse("postgresql://postgres@/postgres?host=/tmp/pg-socket")
        #expect(socket.host == "/tmp/pg-socket")
        #expect(socket.port == 5432)
        #expect(socket.password == nil)
        let bare = try PostgresURL.parse("postgresql:///chat")
        #expect(bare.host == PostgresURL.defaultSocketDirectory)
        #expect(bare.user == String(cString: getpwuid(geteuid()).pointee.pw_name))
        #expect(bare.database == "chat")
        let keywords = try PostgresURL.parse("host=10.0.0.7 user=ops dbname=chat")
        #expect(keywords.host == "10.0.0.7" && keywords.user == "ops" && keywords.database == "chat")
    }

    @Test("libpq's own message for what it cannot parse; a list of hosts and a bad port refused")
    func postgresErrors() {
        #expect(throws: StoreURLError(.postgres, "invalid URI query parameter: \"nonsense\"")) {
            try PostgresURL.parse("postgresql://h/db?nonsense=1")
        }
        #expect(throws: StoreURLError.self) { try PostgresURL.parse("postgresql://h:port/db") }
        #expect(throws: StoreURLError(.postgres, "one host only, not a list: a,b")) { try PostgresURL.parse("postgresql://a,b/db") }
        #expect(throws: StoreURLError(.postgres, "invalid port 70000")) { try PostgresURL.parse("postgresql://h:70000/db") }
    }

    @Test("the password never appears in the node's description of its storage")
    func passwordRedacted() throws {
        let configuration = try PostgresURL.parse("postgresql://chat:s3cret@db.example/chatdb")
        let shown = ChatNodeStorage.postgres(configuration).description
        #expect(shown == "PostgreSQL postgresql://chat:***@db.example:5432/chatdb")
        let socket = ChatNodeStorage.postgres(try PostgresURL.parse("postgresql://chat@/chatdb?host=/run/pg")).description
        #expect(socket == "PostgreSQL postgresql://chat@:5432/chatdb?host=/run/pg")
    }

    @Test("Redis: redis://IP[:port] (IPv6 in brackets) and unix:///path; names, passwords, databases and other schemes refused")
    func redis() throws {
        let tcp = try RedisURL.parse("redis://127.0.0.1:7000")
        #expect(tcp.host == "127.0.0.1" && tcp.port == 7000)
        let v6 = try RedisURL.parse("redis://[::1]/")
        #expect(v6.host == "::1" && v6.port == 6379)
        #expect(try RedisURL.parse("unix:///tmp/redis.sock").host == "/tmp/redis.sock")
        #expect(RedisURL.describe(v6) == "redis://[::1]:6379")
        let refused = [
            "redis://localhost:6379", "redis://:pw@127.0.0.1", "redis://127.0.0.1/2", "http://127.0.0.1", "unix://relative", "redis://1.2.3.4:0"
        ]
        for bad in refused {
            #expect(throws: StoreURLError.self, "\(bad)") { try RedisURL.parse(bad) }
        }
    }
}
