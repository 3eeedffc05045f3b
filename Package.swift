// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "RunLoopKit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
        .executable(name: "loop-demo", targets: ["LoopDemo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent_core",
            providers: [.apt(["libevent-dev"])]
        ),
        .target(name: "CRunLoopSupport"),
        .target(
            name: "RunLoopKit",
            dependencies: [
                "CLibevent",
                "CRunLoopSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "LoopDemo",
            dependencies: [
                "RunLoopKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Samples/LoopDemo",
            exclude: ["README.md"]
        ),
        .testTarget(
            name: "RunLoopKitTests",
            dependencies: ["RunLoopKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
