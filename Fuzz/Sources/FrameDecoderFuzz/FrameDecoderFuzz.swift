// libFuzzer target for RunLoopIM's frame decoder. Built with `-sanitize=fuzzer,address` (see
// ../../run.sh). SwiftPM links an executable with `main` aliased to its module's entry point, so
// libFuzzer's own `main` is never linked: the entry point below hands the command line to libFuzzer's
// driver, which then calls `LLVMFuzzerTestOneInput` once per input.
//
// One input = a settings prefix and a byte stream:
//   byte 0       which `maximumBodyLength` the decoder gets (small limits reach the size check quickly)
//   byte 1       seed of the read sizes the stream is cut into (1 byte up to the whole stream)
//   bytes 2...   what a peer sent
// Every property that must hold is checked with `fuzzCheck`, which traps: libFuzzer reports a trap as
// a crash and saves the input.
import CFuzzerDriver
import RunLoopIMCore

#if canImport(Glibc)
import Glibc
#endif

@main
enum FrameDecoderFuzzMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data!, size) })
    }
}

/// The limits byte 0 chooses between: 0 and 1 are edge cases, 16 and 100 fit many frames in one
/// input, the default is what servers and clients use.
let bodyLimits = [0, 1, 16, 100, 255, 1024, 4096, 64 * 1024]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard input.count >= 2 else { return 0 }
    let limit = bodyLimits[Int(input[0]) % bodyLimits.count]
    let stream = Array(input[2...])

    let whole = decodeAll(stream, limit: limit, seed: 0)
    let chunked = decodeAll(stream, limit: limit, seed: UInt64(input[1]) | 1)
    // However the stream was cut into reads, the decoder must find the same frames and the same end.
    fuzzCheck(whole.frames == chunked.frames, "frames depend on read sizes")
    fuzzCheck(whole.error == chunked.error, "error depends on read sizes: \(String(describing: whole.error)) vs \(String(describing: chunked.error))")

    // Each frame is the bytes it came from: re-encoding it gives them back exactly.
    var offset = 0
    for frame in whole.frames {
        let encoded = frame.encoded()
        fuzzCheck(
            offset + encoded.count <= stream.count && Array(stream[offset..<(offset + encoded.count)]) == encoded,
            "frame at \(offset) does not re-encode to its bytes")
        fuzzCheck(frame.body.count <= limit, "body over the limit")
        offset += encoded.count
        decodeBody(frame)
    }
    if whole.error == nil {
        // Without an error, what is left buffered is exactly the incomplete tail.
        fuzzCheck(whole.buffered == stream.count - offset, "buffered \(whole.buffered) of a \(stream.count - offset)-byte tail")
    }
    return 0
}

/// Feeds `stream` to a fresh decoder in reads whose sizes `seed` picks (0: all at once), taking every
/// frame after each read, until the end or the first error.
func decodeAll(_ stream: [UInt8], limit: Int, seed: UInt64) -> (frames: [IMFrame], error: IMFrameError?, buffered: Int) {
    var decoder = FrameDecoder(maximumBodyLength: limit)
    var random = SplitMix(seed: seed)
    var frames: [IMFrame] = []
    var index = 0
    repeat {
        let left = stream.count - index
        let chunk = seed == 0 || left == 0 ? left : Int(random.next() % UInt64(min(left, 300))) + 1
        decoder.append(stream[index..<(index + chunk)])
        index += chunk
        // A hostile peer can make it hold at most one header and one body (less one byte) from
        // before, plus whatever this read brought.
        fuzzCheck(decoder.bufferedByteCount < FrameHeader.size + limit + chunk, "buffer grew to \(decoder.bufferedByteCount)")
        do {
            while let frame = try decoder.next() { frames.append(frame) }
        } catch {
            // The error sticks: the next call throws it again and nothing stays buffered.
            fuzzCheck(decoder.bufferedByteCount == 0, "bytes kept after an error")
            do {
                _ = try decoder.next()
                fuzzCheck(false, "error not repeated")
            } catch let again {
                fuzzCheck(again == error, "a different error the second time")
            }
            return (frames, error, 0)
        }
        // Once drained, less than one whole frame of the largest size is left.
        fuzzCheck(decoder.bufferedByteCount < FrameHeader.size + limit, "a whole frame left in the buffer")
    } while index < stream.count
    return (frames, nil, decoder.bufferedByteCount)
}

func fuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("fuzz property failed: \(message())") }
}

/// xorshift-free SplitMix64: a few instructions, deterministic for a seed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
