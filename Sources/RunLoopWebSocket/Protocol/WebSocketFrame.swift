/// One WebSocket frame, payload unmasked. Encode it with ``encoded(maskingKey:)``; the parser
/// (``WebSocketFrameParser``) produces them from bytes.
public struct WebSocketFrame: Sendable, Equatable {
    /// Whether this frame ends its message.
    public var fin: Bool
    public var opcode: WebSocketOpcode
    /// The application data, already unmasked.
    public var payload: [UInt8]

    public init(fin: Bool = true, opcode: WebSocketOpcode, payload: [UInt8] = []) {
        self.fin = fin
        self.opcode = opcode
        self.payload = payload
    }

    /// The frame on the wire. Clients pass a fresh random `maskingKey` for every frame (RFC 6455
    /// §5.3, so that a hostile page cannot choose the bytes an intermediary sees); servers pass `nil`.
    public func encoded(maskingKey: [UInt8]? = nil) -> [UInt8] {
        precondition(maskingKey == nil || maskingKey!.count == 4, "a masking key has 4 bytes")
        return encoded(maskingWord: maskingKey.map(WebSocketMask.word(of:)))
    }

    /// The frame on the wire, the masking key given as its four bytes in network order (`key[0]` in
    /// the top byte). A connection's own sends use this: an array per key would be one more
    /// allocation per message.
    func encoded(maskingWord: UInt32?) -> [UInt8] {
        let length = payload.count
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length + 14)
        bytes.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingWord == nil ? 0 : 0x80
        // The shortest length form: RFC 6455 §5.2 requires the minimal encoding.
        if length < 126 {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            bytes.append(maskBit | 126)
            bytes.append(UInt8(length >> 8))
            bytes.append(UInt8(length & 0xFF))
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((UInt64(length) >> UInt64(shift)) & 0xFF)) }
        }
        guard let maskingWord else {
            bytes.append(contentsOf: payload)
            return bytes
        }
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((maskingWord >> UInt32(shift)) & 0xFF)) }
        let start = bytes.count
        bytes.append(contentsOf: payload)
        WebSocketMask.apply(word: maskingWord, to: &bytes, from: start)
        return bytes
    }
}

/// The XOR masking of RFC 6455 §5.3; applying it twice restores the data.
public enum WebSocketMask {
    /// A fresh key from the system's random generator, as the RFC requires (unpredictable per frame).
    public static func randomKey() -> [UInt8] {
        let word = randomWord()
        return [UInt8(word >> 24), UInt8((word >> 16) & 0xFF), UInt8((word >> 8) & 0xFF), UInt8(word & 0xFF)]
    }

    /// A fresh key as one word, `key[0]` in the top byte.
    static func randomWord() -> UInt32 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }

    /// The four bytes of `key` as one word, `key[0]` in the top byte.
    static func word(of key: [UInt8]) -> UInt32 {
        UInt32(key[0]) << 24 | UInt32(key[1]) << 16 | UInt32(key[2]) << 8 | UInt32(key[3])
    }

    /// XORs `bytes[start...]` with `key`, key byte 0 on `bytes[start]`.
    public static func apply(_ key: [UInt8], to bytes: inout [UInt8], from start: Int) {
        precondition(key.count == 4, "a masking key has 4 bytes")
        apply(word: word(of: key), to: &bytes, from: start)
    }

    /// XORs `bytes[start...]` with the key `word` (`key[0]` in its top byte) on `bytes[start]`.
    static func apply(word key: UInt32, to bytes: inout [UInt8], from start: Int) {
        let count = bytes.count - start
        guard count > 0 else { return }
        // Eight bytes at a time: messages run to megabytes, and byte-wise XOR is slow in debug builds
        // (the Autobahn runs use them). In memory the key's bytes come in wire order: key[0] first.
        let inMemoryOrder = UInt64(key.byteSwapped.littleEndian)
        let word = inMemoryOrder | inMemoryOrder << 32
        bytes.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress! + start
            var offset = 0
            while offset + 8 <= count {
                let value = (base + offset).loadUnaligned(as: UInt64.self)
                (base + offset).storeBytes(of: value ^ word, as: UInt64.self)
                offset += 8
            }
            while offset < count {
                let pointer = (base + offset).assumingMemoryBound(to: UInt8.self)
                pointer.pointee ^= UInt8(truncatingIfNeeded: key >> UInt32(24 - 8 * (offset & 3)))
                offset += 1
            }
        }
    }
}
