// The same ChatMessage framed by SwiftProtobuf's own length-delimited API (`BinaryDelimited`, on
// Foundation's memory streams): what an application using swift-protobuf alone would write. This
// file imports Foundation; it never touches RunLoopKit's `RunLoop`.
import BenchCommon
import Benchmark
import Foundation
import RunLoopIMCore
// Explicitly internal: the linked runloopim.pb.swift imports it `package`, and an import without a
// level beside that one is ambiguous.
internal import SwiftProtobuf

func delimitedBenchmarks() {
    let configuration = benchConfiguration(iterations: 2_000)
    let message = typicalProtobufMessage()

    Benchmark(Workload.name(IMWorkload.delimitedEncode, frameCount), configuration: configuration) { benchmark in
        let output = OutputStream.toMemory()
        output.open()
        benchmark.startMeasurement()
        do {
            for _ in 0..<frameCount { try BinaryDelimited.serialize(message: message, to: output) }
        } catch {
            fatalError("BinaryDelimited.serialize failed: \(error)")
        }
        benchmark.stopMeasurement()
        output.close()
    }

    let stream = delimitedStream(message)
    Benchmark(Workload.name(IMWorkload.delimitedDecode, frameCount), configuration: configuration) { benchmark in
        let input = InputStream(data: stream)
        input.open()
        benchmark.startMeasurement()
        do {
            for _ in 0..<frameCount {
                blackHole(try BinaryDelimited.parse(messageType: IMChatMessage.self, from: input))
            }
        } catch {
            fatalError("BinaryDelimited.parse failed: \(error)")
        }
        benchmark.stopMeasurement()
        input.close()
    }
}

/// `frameCount` copies of `message`, delimited.
private func delimitedStream(_ message: IMChatMessage) -> Data {
    let output = OutputStream.toMemory()
    output.open()
    defer { output.close() }
    for _ in 0..<frameCount {
        do {
            try BinaryDelimited.serialize(message: message, to: output)
        } catch {
            fatalError("BinaryDelimited.serialize failed: \(error)")
        }
    }
    guard let data = output.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else {
        fatalError("no data in the memory stream")
    }
    return data
}
