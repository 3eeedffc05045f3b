// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "RunLoopKit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
        .library(name: "RunLoopTesting", targets: ["RunLoopTesting"]),
        .library(name: "RunLoopNet", targets: ["RunLoopNet"]),
        .executable(name: "loop-demo", targets: ["LoopDemo"]),
        .executable(name: "loop-record", targets: ["LoopRecorder"]),
        .executable(name: "echo-server", targets: ["EchoServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // C
        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent_core",
            providers: [.apt(["libevent-dev"])]
        ),
        .target(name: "CRunLoopSupport"),

        // Libraries
        .target(
            name: "RunLoopKit",
            dependencies: [
                "CLibevent",
                "CRunLoopSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "RunLoopTesting",
            dependencies: ["RunLoopKit", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "RunLoopNet",
            dependencies: [
                "RunLoopKit",
                "CRunLoopSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Samples
        .executableTarget(
            name: "LoopDemo",
            dependencies: [
                "RunLoopKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Samples/LoopDemo",
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "LoopRecorder",
            dependencies: [
                "RunLoopKit",
                "RunLoopTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Samples/LoopRecorder",
            exclude: ["README.md"]
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
            exclude: ["README.md"]
        ),

        // Tests
        .testTarget(
            name: "RunLoopKitTests",
            dependencies: [
                "RunLoopKit",
                "RunLoopTesting",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "RunLoopTestingTests",
            dependencies: ["RunLoopKit", "RunLoopTesting"]
        ),
        .testTarget(
            name: "EchoServerTests",
            // The sample as a process: depending on it makes SwiftPM build the binary the tests start.
            dependencies: ["EchoServer", "RunLoopTesting"]
        ),
        .testTarget(
            name: "RunLoopNetTests",
            dependencies: [
                "RunLoopKit", "RunLoopNet", "RunLoopTesting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
