import Foundation
import RunLoopTesting

/// The `chat-node` executable SwiftPM built beside the test bundle.
enum ChatNodeBinary {
    static var path: String { builtProductPath("chat-node") }
}

/// Runs chat-node to its end with `input` on its standard input and `environment` added to this
/// process's: its status, standard output and standard error.
func runChatNode(_ arguments: [String], input: String = "", environment: [String: String] = [:]) throws -> (Int32, String, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ChatNodeBinary.path)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
    let (output, errors, standardInput) = (Pipe(), Pipe(), Pipe())
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = standardInput
    try process.runWithNoSignalBlocked()
    standardInput.fileHandleForWriting.write(Data(input.utf8))
    try standardInput.fileHandleForWriting.close()
    let outputText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (try process.waitForExit().status, outputText, errorText)
}
