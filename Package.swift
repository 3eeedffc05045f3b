// swift-tools-version: 6.1
import PackageDescription

/// The compiler settings every Swift target of the package builds with (issue 19): existentials
/// spelled `any`, members visible only through the modules a file imports, and imports internal
/// unless a file says `public import` because its public API shows the module's types.
/// Every target has them, the test targets too: a test file imports what it uses like any other.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "RunLoopKit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
        .library(name: "RunLoopTesting", targets: ["RunLoopTesting", "RunLoopIMTesting"]),
        .library(name: "RunLoopNet", targets: ["RunLoopNet"]),
        .library(name: "RunLoopIMCore", targets: ["RunLoopIMCore"]),
        .library(name: "RunLoopIM", targets: ["RunLoopIM"]),
        .library(name: "RunLoopIMSQLite", targets: ["RunLoopIMSQLite"]),
        .library(name: "RunLoopWebSocket", targets: ["RunLoopWebSocket"]),
        .library(name: "RunLoopTLS", targets: ["RunLoopTLS"]),
        .library(name: "RunLoopIMWebSocket", targets: ["RunLoopIMWebSocket"]),
        .library(name: "RunLoopChat", targets: ["RunLoopChat"]),
        .library(name: "RunLoopRedis", targets: ["RunLoopRedis"]),
        .library(name: "RunLoopPostgres", targets: ["RunLoopPostgres"]),
        .library(name: "RunLoopChatCluster", targets: ["RunLoopChatCluster"]),
        .library(name: "RunLoopChatPostgres", targets: ["RunLoopChatPostgres"]),
        .executable(name: "loop-demo", targets: ["LoopDemo"]),
        .executable(name: "loop-record", targets: ["LoopRecorder"]),
        .executable(name: "echo-server", targets: ["EchoServer"]),
        .executable(name: "im-relay", targets: ["IMRelay"]),
        .executable(name: "chat-node", targets: ["ChatNodeCLI"]),
        .executable(name: "ws-echo-server", targets: ["WebSocketEcho"]),
        .executable(name: "ws-autobahn-client", targets: ["WebSocketAutobahnClient"]),
        .executable(name: "async-chat-bot", targets: ["AsyncChatBot"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Heap: the IM server's session deadlines (SessionDeadlines).
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The chat node's config file (TOML): see Samples/ChatNode/ChatNodeKit/Config/ConfigFile.swift.
        .package(url: "https://github.com/LebJe/TOMLKit", exact: "0.6.0"),
    ],
    targets: [
        // C
        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent_core",
            providers: [.apt(["libevent-dev"])]
        ),
        .target(
            name: "CRunLoopSupport",
            // event_pool.c hands libevent its allocator (event_set_mem_functions); main_queue.c
            // services the main dispatch queue.
            linkerSettings: [.linkedLibrary("event_core"), .linkedLibrary("dispatch")]
        ),
        .systemLibrary(
            // libcrypto (SHA-1 for the WebSocket handshake, scrypt for passwords) and libssl (TLS).
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            // hiredis's asynchronous context, put on the run loop by RunLoopRedis. No pkgConfig:
            // Debian's hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM drops with a warning on
            // every build; the headers are in /usr/include/hiredis and the module map links the library.
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        .systemLibrary(
            name: "CLibpq",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),

        // Libraries
        .target(
            name: "RunLoopKit",
            dependencies: [
                "CLibevent",
                "CRunLoopSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // Throw-away PostgreSQL and Redis servers, server processes and commands: what the tests
            // start and what `chat-node demo --cluster` starts too, so no Testing or XCTest in it.
            name: "ThrowawayServers",
            dependencies: ["RunLoopKit"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RunLoopTesting",
            dependencies: ["RunLoopKit", "ThrowawayServers", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            // The IM stack's in-memory link pair with a fault script: a target of its own in the
            // RunLoopTesting product, so tests of the loop alone do not build the IM stack.
            name: "RunLoopIMTesting",
            dependencies: [
                "RunLoopKit", "RunLoopNet", "RunLoopIMCore", "RunLoopIM", "RunLoopChat", "RunLoopTesting",
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RunLoopNet",
            dependencies: [
                "RunLoopKit",
                "CRunLoopSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // The IM protocol without a transport: wire format, messages and the pure machines.
            name: "RunLoopIMCore",
            dependencies: [
                "RunLoopKit",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RunLoopIM",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "RunLoopIMCore",
                "RunLoopTLS",
                "CRunLoopSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // The IM server's store and the chat's rooms and history (RunLoopChat's ChatStore) in SQLite.
            name: "RunLoopIMSQLite",
            dependencies: [
                "RunLoopIM", "RunLoopIMCore", "RunLoopChat",
                "CSQLite",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RunLoopWebSocket",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "RunLoopTLS",
                .product(name: "Logging", package: "swift-log"),
                "COpenSSL",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // TLS through OpenSSL's memory BIOs, on a RunLoopNet TCP connection and driven by its loop.
            name: "RunLoopTLS",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // The IM protocol over WebSocket, both sides: its own target so neither RunLoopIM nor
            // RunLoopWebSocket depends on the other.
            name: "RunLoopIMWebSocket",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "RunLoopTLS",
                "RunLoopIM", "RunLoopIMCore",
                "RunLoopWebSocket",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // The chat application protocol on RunLoopIM: typed client, server-side rooms and
            // history, password hashing for the accounts RunLoopIMSQLite keeps.
            name: "RunLoopChat",
            dependencies: [
                "RunLoopKit",
                "RunLoopIM",
                "RunLoopIMCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                "COpenSSL",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // Redis through hiredis's asynchronous context, its socket a port source on the loop.
            name: "RunLoopRedis",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "CHiredis",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // A PostgreSQL client driven by the loop: libpq's asynchronous API in pipeline mode.
            name: "RunLoopPostgres",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "CLibpq",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // What joins chat nodes into a cluster over a shared Redis: the stream bus between nodes,
            // node leases, presence and session counts across nodes.
            name: "RunLoopChatCluster",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "RunLoopIMCore",
                "RunLoopIM",
                "RunLoopChat",
                "RunLoopChatPostgres",
                "RunLoopRedis",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // The chat's store in a PostgreSQL database several nodes share: its versioned schema and
            // PostgresChatStore (messages, per-conversation sequences and cursors, rooms, history).
            name: "RunLoopChatPostgres",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "RunLoopIMCore",
                "RunLoopIM",
                "RunLoopChat",
                "RunLoopPostgres",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // Samples
        .executableTarget(
            name: "LoopDemo",
            dependencies: [
                "RunLoopKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Samples/LoopDemo",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "LoopRecorder",
            dependencies: [
                "RunLoopKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Samples/LoopRecorder",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "EchoServer",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Samples/EchoServer",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "IMRelay",
            dependencies: [
                "RunLoopKit",
                "RunLoopIM", "RunLoopIMCore",
                "RunLoopIMSQLite",
                "RunLoopChat",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Samples/IMRelay",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ChatNodeKit",
            dependencies: [
                "RunLoopKit",
                "RunLoopNet",
                "RunLoopIM", "RunLoopIMCore",
                "RunLoopIMSQLite",
                "RunLoopWebSocket",
                "RunLoopIMWebSocket",
                "RunLoopChat",
                "RunLoopPostgres", "RunLoopChatPostgres", "RunLoopRedis", "RunLoopChatCluster", "CLibpq", "RunLoopTLS",
                "ThrowawayServers",
                .product(name: "Logging", package: "swift-log"),
                // The node binary's metrics backend: the libraries emit through swift-metrics alone.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            path: "Samples/ChatNode/ChatNodeKit",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ChatNodeCLI",
            dependencies: [
                "ChatNodeKit",
                "RunLoopChat",
                "RunLoopIM",
                "RunLoopIMCore",
                "RunLoopIMSQLite",
                "RunLoopKit",
                "RunLoopNet",
                "RunLoopPostgres", "RunLoopChatPostgres", "RunLoopRedis", "RunLoopChatCluster", "RunLoopTLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Samples/ChatNode/CLI",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            // A chat bot on RunLoopChat's async API alone (AsyncChatClient).
            name: "AsyncChatBot",
            dependencies: [
                "RunLoopKit", "RunLoopIM", "RunLoopIMCore", "RunLoopChat",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Samples/AsyncChatBot",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "WebSocketEcho",
            dependencies: ["RunLoopKit", "RunLoopNet", "RunLoopTLS", "RunLoopWebSocket"],
            path: "Samples/WebSocketEcho",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "WebSocketAutobahnClient",
            dependencies: ["RunLoopKit", "RunLoopNet", "RunLoopTLS", "RunLoopWebSocket"],
            path: "Samples/WebSocketAutobahnClient",
            swiftSettings: swiftSettings
        ),

        // Tests
        .testTarget(
            name: "RunLoopKitTests",
            dependencies: [
                "RunLoopKit",
                "RunLoopTesting",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopTestingTests",
            dependencies: ["RunLoopKit", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EchoServerTests",
            // The sample as a process: depending on it makes SwiftPM build the binary the tests start.
            dependencies: ["EchoServer", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopNetTests",
            dependencies: [
                "RunLoopKit", "RunLoopNet", "RunLoopTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChatNodeTests",
            // AsyncChatBot: the sample as a process (depending on it makes SwiftPM build the binary).
            dependencies: [
                "ChatNodeKit", "AsyncChatBot", "RunLoopKit", "RunLoopNet", "RunLoopIM", "RunLoopIMCore", "RunLoopIMSQLite", "RunLoopWebSocket",
                "RunLoopIMWebSocket", "RunLoopChat", "RunLoopTesting", "RunLoopIMTesting", "RunLoopPostgres", "RunLoopChatPostgres",
                "RunLoopRedis", "RunLoopChatCluster", "RunLoopTLS",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopIMCoreTests",
            dependencies: ["RunLoopKit", "RunLoopIMCore", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopIMTests",
            dependencies: [
                "RunLoopKit", "RunLoopNet", "RunLoopIM", "RunLoopIMCore", "RunLoopIMSQLite", "RunLoopChat", "RunLoopTesting", "RunLoopTLS",
                "RunLoopIMTesting",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopIMSQLiteTests",
            dependencies: ["RunLoopChat", "RunLoopIM", "RunLoopIMCore", "RunLoopIMSQLite", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopChatTests",
            dependencies: ["RunLoopKit", "RunLoopNet", "RunLoopIM", "RunLoopIMCore", "RunLoopIMSQLite", "RunLoopChat", "RunLoopIMTesting", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopWebSocketTests",
            dependencies: ["RunLoopKit", "RunLoopNet", "RunLoopWebSocket", "RunLoopTLS", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopTLSTests",
            dependencies: ["RunLoopKit", "RunLoopNet", "RunLoopTLS", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopChatClusterTests",
            dependencies: [
                "RunLoopKit", "RunLoopNet", "RunLoopIMCore", "RunLoopIM", "RunLoopChat", "RunLoopRedis", "RunLoopPostgres", "RunLoopChatPostgres",
                "RunLoopChatCluster", "RunLoopTesting", "RunLoopIMTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopRedisTests",
            dependencies: ["RunLoopKit", "RunLoopRedis", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopIMWebSocketTests",
            dependencies: [
                "RunLoopKit", "RunLoopNet", "RunLoopIM", "RunLoopIMCore", "RunLoopWebSocket", "RunLoopIMWebSocket", "RunLoopTesting",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopPostgresTests",
            dependencies: ["RunLoopKit", "RunLoopNet", "RunLoopPostgres", "RunLoopTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunLoopChatPostgresTests",
            dependencies: [
                "RunLoopKit", "RunLoopNet", "RunLoopIMCore", "RunLoopIM", "RunLoopChat", "RunLoopPostgres", "RunLoopChatPostgres",
                "RunLoopTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)

/// Scripts/asan.sh builds only the test targets it runs under AddressSanitizer: with
/// `RUNLOOPKIT_TEST_TARGETS` set (test target names separated by commas), the package keeps those
/// test targets and what they depend on, and drops the rest — the chat node, the cluster, the
/// PostgreSQL and Redis clients, the samples and their dependencies — which that build would
/// otherwise compile for tests it does not run. Unset (every other build), nothing changes.
if let testTargets = Context.environment["RUNLOOPKIT_TEST_TARGETS"] {
    let targetsByName = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
    var kept = Set<String>()
    var pending = testTargets.split(separator: ",").map(String.init)
    while let name = pending.popLast() {
        guard let target = targetsByName[name], kept.insert(name).inserted else { continue }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): pending.append(name)
            default: break
            }
        }
    }
    package.targets.removeAll { !kept.contains($0.name) }
    package.products.removeAll()
}
