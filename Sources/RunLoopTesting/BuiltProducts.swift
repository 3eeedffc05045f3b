import Foundation

/// Where SwiftPM put the product `name` of the package under test: beside the test bundle, as
/// `swift build` and `swift test` build every product of the package into the same folder.
public func builtProductPath(_ name: String) -> String {
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var directory = bundle.deletingLastPathComponent()
    // On Linux the test runner is `<build>/debug/<Package>PackageTests.xctest`.
    if directory.lastPathComponent.hasSuffix(".xctest") { directory = directory.deletingLastPathComponent() }
    return directory.appendingPathComponent(name).path
}
