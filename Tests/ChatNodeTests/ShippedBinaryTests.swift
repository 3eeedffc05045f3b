import Foundation
import RunLoopTesting
import Testing

/// What ships does not carry the testing libraries: no shipped target depends on RunLoopTesting, so
/// neither XCTest nor Swift Testing is linked into the programs.
@Suite("Shipped binaries")
struct ShippedBinaryTests {
    /// The testing libraries a binary is dynamically linked against, as `ldd` lists them.
    private func testingLibraries(of path: String) throws -> [String] {
        try #require(FileManager.default.isExecutableFile(atPath: path), "not built: \(path)")
        let result = try runCommand(["/usr/bin/ldd", path])
        try #require(result.status == 0, "ldd \(path): \(result.errorOutput)")
        return result.output.split(separator: "\n")
            .compactMap { $0.split(separator: " ").first.map(String.init) }
            .filter { $0.contains("XCTest") || $0.contains("Testing") }
    }

    @Test("ldd of chat-node and loop-record shows no XCTest and no Testing library")
    func noTestingLibraries() throws {
        // The witness: the test bundle itself links both, so the check does see them when they are there.
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let linkedByTests = try testingLibraries(of: bundle)
        #expect(linkedByTests.contains { $0.contains("XCTest") }, "\(linkedByTests)")
        #expect(linkedByTests.contains { $0.contains("Testing") }, "\(linkedByTests)")

        #expect(try testingLibraries(of: ChatNodeBinary.path) == [])
        #expect(try testingLibraries(of: builtProductPath("loop-record")) == [])
    }
}
