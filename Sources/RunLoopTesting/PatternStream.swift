import Glibc

/// A test stream whose byte at `offset` is `(offset + seed) % 251`: a period that no power-of-two
/// block size divides, so a lost, repeated or reordered block shows.
///
/// Made with a handful of memcpy calls, never a Swift loop over the bytes: in a debug build under
/// the thread sanitizer such a loop costs microseconds a byte, and on a loaded machine making 4 MiB
/// that way inside a loop callout has taken over 40 s — the whole of `spin`'s hang guard, with the
/// loop unable to move a byte meanwhile.
public func patternStream(count: Int, seed: Int = 0) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBufferPointer { buffer in
        guard let base = buffer.baseAddress else { return }
        let period = min(251, count)
        for offset in 0..<period { base[offset] = UInt8((offset + seed) % 251) }
        var filled = period
        while filled < count {
            let copied = min(filled, count - filled)
            memcpy(base + filled, base, copied)
            filled += copied
        }
    }
    return bytes
}

/// Whether `bytes` are the part of `stream` that starts at `offset` — one memcmp, for the same reason
/// as ``patternStream(count:seed:)``: not a Swift loop over every byte received.
public func isPart(_ bytes: [UInt8], of stream: [UInt8], at offset: Int) -> Bool {
    guard offset >= 0, offset + bytes.count <= stream.count else { return false }
    guard !bytes.isEmpty else { return true }
    return bytes.withUnsafeBytes { received in
        stream.withUnsafeBytes { expected in
            memcmp(received.baseAddress!, expected.baseAddress! + offset, bytes.count) == 0
        }
    }
}
