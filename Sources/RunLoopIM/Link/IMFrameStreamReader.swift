public import RunLoopIMCore

/// The read half of a link over a byte stream: bytes in any split become the link's events — whole
/// frames by their length prefix, oversized SENDs skipped where the decoder may, a broken stream
/// reported once. ``TCPFrameLink`` reads through it, and so does any other byte-stream link (the
/// in-memory pair's byte-by-byte mode), so the rule is written once.
///
/// Loop thread only, like the link that owns it.
public final class IMFrameStreamReader {
    private var decoder: FrameDecoder

    public init(_ decoder: FrameDecoder) {
        self.decoder = decoder
    }

    /// Bytes read and not yet delivered as frames.
    public var bufferedByteCount: Int { decoder.bufferedByteCount }

    /// Accepts bodies up to `bodyLength` from now on, also for bytes already buffered.
    public func raiseLimit(to bodyLength: Int) {
        decoder.raiseMaxBodyLength(to: bodyLength)
    }

    /// Takes one read's bytes and reports what they complete, while `isReporting()` holds — the owner
    /// may close the link while handling a frame, which stops the delivery there — then
    /// ``IMFrameLinkEvents/readEnded``. A broken stream is reported through
    /// ``IMFrameLinkEvents/failed`` instead; the reader delivers nothing more after it.
    public func read(_ bytes: [UInt8], reportingTo events: IMFrameLinkEvents, while isReporting: () -> Bool) {
        decoder.append(bytes)
        while isReporting() {
            let event: FrameDecoder.Event?
            do {
                event = try decoder.nextEvent()
            } catch {
                return events.failed(error, decoder.failedSerial ?? 0)
            }
            switch event {
            case .frame(let frame)?: events.received(frame)
            case .oversized(let header, let prefix)?: events.oversized(header, prefix, decoder.maximumBodyLength)
            case nil: return events.readEnded()
            }
        }
    }
}
