// RunLoopIM's wire format: frames encoded and decoded per second, and allocations per frame (issue 9).
// One iteration encodes 1,000 frames into one stream, or decodes such a stream back: the stream is fed
// to a fresh FrameDecoder in one append (as if one large read brought it) and every frame taken out
// and, for SEND, its body decoded as an IMMessage (RunLoopIMCore's public IMFrame(command:serial:message:)
// and decodeMessage(), which convert between IMMessage and the protobuf ChatMessage). The same
// ChatMessage is also framed the way SwiftProtobuf frames messages itself — a varint length before
// each message ("delimited") — through its BinaryDelimited API on Foundation streams
// (DelimitedFraming.swift) and by hand on [UInt8] (VarintFraming.swift), for a side-by-side of the
// framing cost. The generated messages are `package` in RunLoopKit, so this target compiles its own
// copy of them: runloopim.pb.swift here is a link to Sources/RunLoopIMCore/Generated/runloopim.pb.swift.
// Scripts/im_frames.py prints the table.
import BenchCommon
import Benchmark
import RunLoopIMCore

let benchmarks: @Sendable () -> Void = {
    frameBenchmarks()
    delimitedBenchmarks()
    varintBenchmarks()
}

/// Frames per iteration.
let frameCount = 1_000

/// Workload names (`<name>#<frames per iteration>`, as in BenchCommon's `Workload`).
enum IMWorkload {
    static let heartbeatEncode = "im.frame.heartbeat.encode"
    static let heartbeatDecode = "im.frame.heartbeat.decode"
    static let sendEncode = "im.frame.send.encode"
    static let sendDecode = "im.frame.send.decode"
    static let delimitedEncode = "im.delimited.foundation.encode"
    static let delimitedDecode = "im.delimited.foundation.decode"
    static let varintEncode = "im.delimited.bytes.encode"
    static let varintDecode = "im.delimited.bytes.decode"
}

/// A typical chat message: a UUID id, short user names, about 100 bytes of text (UTF-8).
let typicalMessage = IMMessage(
    id: "6f1d2c3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f", from: "alice", recipient: .user("bob"),
    text: "Are we still on for lunch at noon? I booked the place by the river, table for four — see you there.",
    seq: 0, sentAtMilliseconds: 0)

/// ``typicalMessage`` as this target's copy of the generated protobuf message, for the delimited
/// framings: the same bytes as the body of its SEND frame.
func typicalProtobufMessage() -> IMChatMessage {
    do {
        return try IMChatMessage(serializedBytes: IMFrame(command: .send, serial: 0, message: typicalMessage).body)
    } catch {
        fatalError("the SEND body did not decode: \(error)")
    }
}

private func frameBenchmarks() {
    let configuration = benchConfiguration(iterations: 2_000)

    Benchmark(Workload.name(IMWorkload.heartbeatEncode, frameCount), configuration: configuration) { benchmark in
        var stream: [UInt8] = []
        benchmark.startMeasurement()
        for serial in 0..<UInt32(frameCount) {
            stream.append(contentsOf: IMFrame(command: .heartbeat, serial: serial).encoded())
        }
        benchmark.stopMeasurement()
        precondition(stream.count == frameCount * FrameHeader.size)
    }

    let heartbeats = (0..<UInt32(frameCount)).flatMap { IMFrame(command: .heartbeat, serial: $0).encoded() }
    Benchmark(Workload.name(IMWorkload.heartbeatDecode, frameCount), configuration: configuration) { benchmark in
        benchmark.startMeasurement()
        let frames = decodeFrames(heartbeats) { frame in
            precondition(frame.command == .heartbeat && frame.body.isEmpty)
        }
        benchmark.stopMeasurement()
        precondition(frames == frameCount)
    }

    let message = typicalMessage
    Benchmark(Workload.name(IMWorkload.sendEncode, frameCount), configuration: configuration) { benchmark in
        var stream: [UInt8] = []
        benchmark.startMeasurement()
        for serial in 0..<UInt32(frameCount) {
            stream.append(contentsOf: IMFrame(command: .send, serial: serial, message: message).encoded())
        }
        benchmark.stopMeasurement()
        blackHole(stream)
    }

    let sends = (0..<UInt32(frameCount)).flatMap { IMFrame(command: .send, serial: $0, message: message).encoded() }
    Benchmark(Workload.name(IMWorkload.sendDecode, frameCount), configuration: configuration) { benchmark in
        benchmark.startMeasurement()
        let frames = decodeFrames(sends) { frame in
            do {
                blackHole(try frame.decodeMessage())
            } catch {
                fatalError("SEND body did not decode: \(error)")
            }
        }
        benchmark.stopMeasurement()
        precondition(frames == frameCount)
    }
}

/// Feeds `stream` to a fresh decoder in one append and hands every frame to `body`.
/// - Returns: how many frames came out.
private func decodeFrames(_ stream: [UInt8], _ body: (IMFrame) -> Void) -> Int {
    var decoder = FrameDecoder()
    decoder.append(stream)
    var count = 0
    do {
        while let frame = try decoder.next() {
            body(frame)
            count += 1
        }
    } catch {
        fatalError("frame decoder failed on a valid stream: \(error)")
    }
    precondition(decoder.bufferedByteCount == 0)
    return count
}
