import RunLoopTesting

/// The `chat-node` executable SwiftPM built beside the test bundle.
enum ChatNodeBinary {
    static var path: String { builtProductPath("chat-node") }
}
