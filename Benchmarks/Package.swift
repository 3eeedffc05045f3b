// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "RunLoopKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "Probe",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "RunLoopKit", package: "main"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/Probe",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ]
)
