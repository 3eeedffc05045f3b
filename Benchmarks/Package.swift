// swift-tools-version: 6.1
// The RunLoopKit benchmark package: its own manifest, so the main package and CI never build SwiftNIO or
// the benchmark harness. Run everything with ./run.sh (see README.md).
import PackageDescription

let benchmarkPlugin: [Target.PluginUsage] = [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]

/// The RunLoopKit modules an IM client needs: what the chat-node drivers (fan-out, idle, cluster) share.
let imClientModules: [Target.Dependency] = ["RunLoopKit", "RunLoopNet", "RunLoopIM", "RunLoopIMCore"].map {
    .product(name: $0, package: "RunLoopKit")
}
/// What a driver of chat-node clients links: the chat protocol too, and the shared helpers.
let chatClientDriver: [Target.Dependency] =
    imClientModules + [.product(name: "RunLoopChat", package: "RunLoopKit"), "BenchSupport", "ChatBenchKit"]

let package = Package(
    name: "RunLoopKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // A fixed name, so products resolve whatever the folder of the clone is called (a path
        // dependency's identity is otherwise its folder name).
        .package(name: "RunLoopKit", path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0")
    ],
    targets: [
        // Shared C helpers: the same semaphore, thread and socket primitives for every system.
        .target(name: "BenchSupport"),
        // Workload names, operation counts and the shared benchmark configuration.
        .target(
            name: "BenchCommon",
            dependencies: [.product(name: "Benchmark", package: "package-benchmark"), "BenchSupport"]
        ),
        // The workloads written in C directly on libevent 2.1 (Debian's libevent-dev).
        .target(
            name: "LibeventBaseline",
            linkerSettings: [.linkedLibrary("event_core"), .linkedLibrary("event_pthreads")]
        ),
        // What the chat-node drivers share: a crowd of chat clients logging in as the node's limits
        // allow, the timed payload, /proc figures of another process, the open-file limit, a frame link
        // that counts heartbeats.
        .target(
            name: "ChatBenchKit",
            dependencies: imClientModules + [.product(name: "RunLoopChat", package: "RunLoopKit")]
        ),
        // One RunLoopKit workload outside the harness, for callgrind, perf and strace.
        .executableTarget(
            name: "rlk-profile",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "RunLoopNet", package: "RunLoopKit"),
                "BenchSupport"
            ],
            path: "Sources/RunLoopKitProfile"
        ),
        // A job enqueued on an executor and run: RunLoopKit's loop, a SwiftNIO event loop and a
        // DispatchQueue side by side in one process (executor-bench; see README.md). Not a harness
        // benchmark: each workload runs inside an actor pinned to the executor under test.
        .executableTarget(
            name: "executor-bench",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "BenchSupport"
            ],
            path: "Sources/ExecutorBench"
        ),
        // One IMServer loop holding 10,000 idle, heartbeating client connections: RSS per connection and
        // CPU while idle (Scripts/im-idle.sh). Not a harness benchmark: it measures a process.
        .executableTarget(
            name: "im-idle",
            dependencies: chatClientDriver,
            path: "Sources/IMIdleProfile"
        ),
        // Messages per second through one chat node (one room, N clients, fan-out), delivery latency and
        // the node's RSS per client, beside mosquitto doing the same at QoS 1 (Scripts/fanout.sh).
        // Not a harness benchmark: the node is another process, measured through /proc.
        .executableTarget(
            name: "fanout-bench",
            dependencies: chatClientDriver,
            path: "Sources/FanoutBench"
        ),
        // Chat nodes in a cluster (PostgreSQL + Redis) beside one node on SQLite: SEND→DELIVER latency
        // across nodes, a 1,000-member room's deliveries per second, and idle heartbeating connections
        // held by several nodes (Scripts/cluster.sh). The nodes are other processes, measured through /proc.
        .executableTarget(
            name: "cluster-bench",
            dependencies: chatClientDriver,
            path: "Sources/ClusterBench"
        ),
        // The PostgreSQL store's presence audiences, one statement per user against one per batch, on a
        // throw-away server of its own (issue 22).
        .executableTarget(
            name: "pg-audience-bench",
            dependencies: ["ChatBenchKit"]
                + ["RunLoopKit", "RunLoopPostgres", "RunLoopChatPostgres", "RunLoopIMCore", "RunLoopTesting"].map {
                    .product(name: $0, package: "RunLoopKit")
                },
            path: "Sources/PostgresAudienceBench"
        ),
        .executableTarget(
            name: "RunLoopKitBench",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "RunLoopTesting", package: "RunLoopKit"),
                .product(name: "RunLoopNet", package: "RunLoopKit"),
                .product(name: "RunLoopWebSocket", package: "RunLoopKit"),
                "BenchCommon"
            ],
            path: "Benchmarks/RunLoopKitBench",
            plugins: benchmarkPlugin
        ),
        // RunLoopIM's frames encoded and decoded, beside SwiftProtobuf's own delimited framing.
        .executableTarget(
            name: "IMFrameBench",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "RunLoopIMCore", package: "RunLoopKit"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                "BenchCommon"
            ],
            path: "Benchmarks/IMFrameBench",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "LibeventBench",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                "LibeventBaseline",
                "BenchCommon"
            ],
            path: "Benchmarks/LibeventBench",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "FoundationBench",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                "BenchCommon"
            ],
            path: "Benchmarks/FoundationBench",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "NIOBench",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                "BenchCommon"
            ],
            path: "Benchmarks/NIOBench",
            plugins: benchmarkPlugin
        )
    ],
    swiftLanguageModes: [.v6]
)
