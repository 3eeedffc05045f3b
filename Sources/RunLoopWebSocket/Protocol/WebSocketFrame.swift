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
        let length = payload.count
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length + 14)
        bytes.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
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
        guard let maskingKey else {
            bytes.append(contentsOf: payload)
            return bytes
        }
        bytes.append(contentsOf: maskingKey)
        let start = bytes.count
        bytes.append(contentsOf: payload)
        WebSocketMask.apply(maskingKey, to: &bytes, from: start)
        return bytes
    }
}

/// The XOR masking of RFC 6455 §5.3; applying it twice restores the data.
public enum WebSocketMask {
    /// A fresh key from the system's random generator, as the RFC requires (unpredictable per frame).
    public static func randomKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        let word = generator.next() as UInt32
        return [UInt8(word >> 24), UInt8((word >> 16) & 0xFF), UInt8((word >> 8) & 0xFF), UInt8(word & 0xFF)]
    }

    /// XORs `bytes[start...]` with `key`, key byte 0 on `bytes[start]`.
    public static func apply(_ key: [UInt8], to bytes: inout [UInt8], from start: Int) {
        let count = bytes.count - start
        guard count > 0 else { return }
        // Eight bytes at a time: messages run to megabytes, and byte-wise XOR is slow in debug builds
        // (the Autobahn runs use them).
        var word: UInt64 = 0
        for index in 0..<8 { word |= UInt64(key[index & 3]) << UInt64(8 * index) }
        bytes.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress! + start
            var offset = 0
            while offset + 8 <= count {
                let value = (base + offset).loadUnaligned(as: UInt64.self)
                (base + offset).storeBytes(of: value ^ word.littleEndian, as: UInt64.self)
                offset += 8
            }
            while offset < count {
                let pointer = (base + offset).assumingMemoryBound(to: UInt8.self)
                pointer.pointee ^= key[offset & 3]
                offset += 1
            }
        }
    }
}
