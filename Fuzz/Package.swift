// swift-tools-version: 6.1
// The frame decoder's libFuzzer target: a package of its own so the main package and CI never build it
// (it needs `-sanitize=fuzzer`). Build and run it with ./run.sh (see README.md).
import PackageDescription

let package = Package(
    name: "RunLoopKitFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named explicitly: SwiftPM otherwise names a path dependency after its folder, which is
        // whatever the checkout or worktree happens to be called.
        .package(name: "RunLoopKit", path: ".."),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0")
    ],
    targets: [
        .target(name: "CFuzzerDriver"),
        .executableTarget(
            name: "FrameDecoderFuzz",
            dependencies: [
                "CFuzzerDriver",
                .product(name: "RunLoopIMCore", package: "RunLoopKit"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
