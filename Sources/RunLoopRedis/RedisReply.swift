import CHiredis

/// One reply from Redis, copied out of hiredis's reply object (which hiredis frees once its callback
/// returns). Binary-safe: bulk strings keep their bytes as sent, NUL and invalid UTF-8 included.
public enum RedisReply: Equatable, Sendable {
    /// A bulk string (`GET`'s value, a stream entry's field), its bytes as stored.
    case bytes([UInt8])
    /// An integer reply (`INCR`, `DEL`, `XLEN`).
    case integer(Int64)
    /// An array reply (`MGET`, `XREAD`, `EXEC`), element by element.
    case array([RedisReply])
    /// The nil reply: a missing key, an `XREAD BLOCK` that timed out.
    case null
    /// A status reply (`OK`, `PONG`).
    case status(String)
    /// An error inside an array (`EXEC` of a transaction whose command failed). An error as the whole
    /// reply fails the command with ``RedisError/server(_:)`` instead.
    case error(String)

    /// The text of a status, or of a bulk string that is valid UTF-8; `nil` otherwise.
    public var string: String? {
        switch self {
        case .status(let text): return text
        case .bytes(let bytes): return String(validating: bytes, as: UTF8.self)
        default: return nil
        }
    }

    /// The integer, for an integer reply.
    public var integer: Int64? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// The elements, for an array reply.
    public var array: [RedisReply]? {
        if case .array(let elements) = self { elements } else { nil }
    }

    /// Copies `reply` and everything under it.
    init(copying reply: UnsafePointer<redisReply>) {
        let reply = reply.pointee
        switch reply.type {
        case REDIS_REPLY_STRING: self = .bytes(Self.bytes(reply))
        case REDIS_REPLY_INTEGER: self = .integer(reply.integer)
        case REDIS_REPLY_NIL: self = .null
        case REDIS_REPLY_STATUS: self = .status(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_ERROR: self = .error(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            self = .array((0..<reply.elements).map { index in RedisReply(copying: reply.element[index]!) })
        default:
            // hiredis 0.14 speaks RESP2 only: these six are all it makes.
            self = .error("unknown reply type \(reply.type)")
        }
    }

    private static func bytes(_ reply: redisReply) -> [UInt8] {
        guard let text = reply.str, reply.len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: text, count: reply.len))
    }
}
