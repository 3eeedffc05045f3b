// The delimited format of DelimitedFraming.swift (a varint length, then the message) written by hand
// on [UInt8], without Foundation streams: the cheapest framing protobuf itself defines, to set our
// 16-byte header against. Same message, same 1,000 per iteration, one buffer as in IMFrameBench.swift.
import BenchCommon
import Benchmark
import RunLoopIMCore
// Explicitly internal: the linked runloopim.pb.swift imports it `package`, and an import without a
// level beside that one is ambiguous.
internal import SwiftProtobuf

func varintBenchmarks() {
    let configuration = benchConfiguration(iterations: 2_000)
    let message = typicalProtobufMessage()

    Benchmark(Workload.name(IMWorkload.varintEncode, frameCount), configuration: configuration) { benchmark in
        var stream: [UInt8] = []
        benchmark.startMeasurement()
        for _ in 0..<frameCount { appendDelimited(message, to: &stream) }
        benchmark.stopMeasurement()
        blackHole(stream)
    }

    var stream: [UInt8] = []
    for _ in 0..<frameCount { appendDelimited(message, to: &stream) }
    let encoded = stream
    Benchmark(Workload.name(IMWorkload.varintDecode, frameCount), configuration: configuration) { benchmark in
        benchmark.startMeasurement()
        var offset = 0
        var count = 0
        while offset < encoded.count {
            let length = readVarint(encoded, at: &offset)
            do {
                // Copied out as FrameDecoder copies each body: swift-protobuf parses [UInt8] or Data,
                // not slices.
                blackHole(try IMChatMessage(serializedBytes: Array(encoded[offset..<(offset + length)])))
            } catch {
                fatalError("delimited message did not decode: \(error)")
            }
            offset += length
            count += 1
        }
        benchmark.stopMeasurement()
        precondition(count == frameCount)
    }
}

private func appendDelimited(_ message: IMChatMessage, to stream: inout [UInt8]) {
    let body: [UInt8]
    do {
        body = try message.serializedBytes()
    } catch {
        fatalError("serialize failed: \(error)")
    }
    var length = UInt64(body.count)
    while length >= 0x80 {
        stream.append(UInt8(truncatingIfNeeded: length) | 0x80)
        length >>= 7
    }
    stream.append(UInt8(length))
    stream.append(contentsOf: body)
}

private func readVarint(_ bytes: [UInt8], at offset: inout Int) -> Int {
    var value = 0
    var shift = 0
    while true {
        let byte = bytes[offset]
        offset += 1
        value |= Int(byte & 0x7F) << shift
        if byte < 0x80 { return value }
        shift += 7
    }
}
