public import RunLoopIMCore
import RunLoopNet

/// The read half of a link over a byte stream: bytes in any split become the link's events — whole
/// frames by their length prefix, oversized SENDs skipped where the decoder may, a broken stream
/// reported once. ``TCPFrameLink`` reads through it, and so does any other byte-stream link (the
/// in-memory pair's byte-by-byte mode), so the rule is written once
/// (`IMFrameStreamReading.read`, which its links use).
///
/// A value held inline in its link (an object of its own cost every connection its header and
/// allocation). Loop thread only, like the link that owns it.
public struct IMFrameStreamReader {
    /// What the buffered bytes complete next.
    package enum Step {
        case frame(IMFrame)
        case oversized(FrameHeader, [UInt8], limit: Int)
        case failed(IMFrameError, serial: UInt32)
        /// Nothing more until more bytes arrive.
        case needsMore
    }

    private var decoder: FrameDecoder

    public init(_ decoder: FrameDecoder) {
        self.decoder = decoder
    }

    /// Bytes read and not yet delivered as frames.
    public var bufferedByteCount: Int { decoder.bufferedByteCount }

    /// Accepts bodies up to `bodyLength` from now on, also for bytes already buffered.
    public mutating func raiseLimit(to bodyLength: Int) {
        decoder.raiseMaxBodyLength(to: bodyLength)
    }

    package mutating func append(_ bytes: [UInt8]) {
        decoder.append(bytes)
    }

    /// What the buffered bytes complete next; a frame's body is written into `bodyStorage`'s room
    /// (``FrameDecoder/nextEvent(bodyStorage:)``).
    package mutating func next(bodyStorage: inout [UInt8]) -> Step {
        let event: FrameDecoder.Event?
        do {
            event = try decoder.nextEvent(bodyStorage: &bodyStorage)
        } catch {
            return .failed(error, serial: decoder.failedSerial ?? 0)
        }
        switch event {
        case .frame(let frame)?: return .frame(frame)
        case .oversized(let header, let prefix)?: return .oversized(header, prefix, limit: decoder.maximumBodyLength)
        case nil: return .needsMore
        }
    }
}

/// A link that reads a byte stream through the ``IMFrameStreamReader`` it holds.
package protocol IMFrameStreamReading: AnyObject {
    var frameReader: IMFrameStreamReader { get set }
}

extension IMFrameStreamReading {
    /// Takes one read's bytes and reports what they complete, while `isReporting()` holds — the owner
    /// may close the link while handling a frame, which stops the delivery there — then
    /// ``IMFrameLinkEvents/readEnded()``. A broken stream is reported through
    /// ``IMFrameLinkEvents/failed(_:_:)`` instead; the reader delivers nothing more after it.
    ///
    /// Each step's access to the reader ends before its event is reported: the owner may raise the
    /// limit (``IMFrameStreamReader/raiseLimit(to:)``) while handling a frame.
    ///
    /// Each frame's body is made in the thread's spare body (``ReadScratch``) and taken back once
    /// the frame was handled: no allocation and no free a frame. A receiver that kept the body keeps
    /// it intact; the next frame's is then made anew (copy on write).
    package func read(_ bytes: [UInt8], reportingTo events: IMFrameLinkEvents, while isReporting: () -> Bool) {
        frameReader.append(bytes)
        var spare = ReadScratch.takeSpareBody()
        defer { ReadScratch.keepSpareBody(&spare) }
        while isReporting() {
            switch frameReader.next(bodyStorage: &spare) {
            case .frame(var frame):
                events.received(frame)
                // Taken out of the frame, not copied: a copy would leave the body shared, and
                // emptying it for the next frame would then allocate.
                swap(&spare, &frame.body)
            case .oversized(let header, let prefix, let limit): events.oversized(header, prefix, limit)
            case .failed(let error, let serial): return events.failed(error, serial)
            case .needsMore: return events.readEnded()
            }
        }
    }
}
