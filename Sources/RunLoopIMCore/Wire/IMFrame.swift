package import SwiftProtobuf

/// One frame: a ``FrameHeader`` and its body (the serialized Protocol Buffers message, or nothing).
public struct IMFrame: Sendable, Equatable, CustomStringConvertible {
    public var header: FrameHeader
    public var body: [UInt8]

    /// A frame for `command` with `body` as its bytes; the header's length is taken from the body.
    public init(command: IMCommand, serial: UInt32, code: IMStatusCode = .ok, body: [UInt8] = []) {
        self.init(rawCommand: command.rawValue, serial: serial, code: code.rawValue, body: body)
    }

    /// A frame for `command` whose body is `message` serialized (package: the messages are the wire
    /// format, not API).
    package init(command: IMCommand, serial: UInt32, code: IMStatusCode = .ok, message: some SwiftProtobuf.Message) {
        // Serializing a message of our own generated types cannot fail (it has no required fields or
        // `Any` fields); a failure would be a programming error in this module.
        let body: [UInt8] = try! message.serializedBytes()
        self.init(command: command, serial: serial, code: code, body: body)
    }

    /// A frame with a command or code number this module may not know (for forwarding and tests).
    public init(rawCommand: UInt16, serial: UInt32, code: UInt32 = 0, version: UInt16 = FrameHeader.currentVersion, body: [UInt8] = []) {
        header = FrameHeader(bodyLength: UInt32(body.count), version: version, command: rawCommand, serial: serial, code: code)
        self.body = body
    }

    init(header: FrameHeader, body: [UInt8]) {
        self.header = header
        self.body = body
    }

    /// The command, if it is one this module knows.
    public var command: IMCommand? { IMCommand(rawValue: header.command) }
    /// The status code, if it is one this module knows.
    public var code: IMStatusCode? { IMStatusCode(rawValue: header.code) }
    public var serial: UInt32 { header.serial }

    /// The frame's bytes on the wire: header, then body.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(FrameHeader.size + body.count)
        append(to: &bytes)
        return bytes
    }

    /// Appends the frame's bytes on the wire to `bytes`: many frames into one buffer, with no array
    /// of their own (a link writing a loop pass's frames at once).
    package func append(to bytes: inout [UInt8]) {
        header.append(to: &bytes)
        bytes.append(contentsOf: body)
    }

    /// Decodes the body as `type`.
    /// - Throws: ``IMFrameError/undecodableBody(command:reason:)`` for bytes that are not a valid
    ///   encoding of `type`.
    package func decode<M: SwiftProtobuf.Message>(_ type: M.Type) throws(IMFrameError) -> M {
        do {
            return try M(serializedBytes: body)
        } catch {
            throw .undecodableBody(command: header.command, reason: "\(error)")
        }
    }

    public var description: String { header.description }
}

/// Why a byte stream is not a valid sequence of frames. Each one closes that connection (after an
/// ERROR frame with the matching ``IMStatusCode``, where the peer can still be told).
public enum IMFrameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A header announced a body longer than the receiver's limit; nothing of it was buffered.
    case frameTooLarge(length: UInt32, limit: Int)
    /// The header's version is not ``FrameHeader/currentVersion``.
    case unsupportedVersion(UInt16)
    /// The body is not a valid encoding of the command's message.
    case undecodableBody(command: UInt16, reason: String)
    /// The input broke the link's own encoding, above the bytes but below the frames (a WebSocket
    /// message that is not exactly one frame, a JSON envelope that does not parse): `code` is what
    /// the peer is told.
    case linkEncoding(IMStatusCode, String)

    /// The code to send the peer before closing.
    public var statusCode: IMStatusCode {
        switch self {
        case .frameTooLarge: return .frameTooLarge
        case .unsupportedVersion: return .unsupportedVersion
        case .undecodableBody: return .badRequest
        case .linkEncoding(let code, _): return code
        }
    }

    public var description: String {
        switch self {
        case .frameTooLarge(let length, let limit): return "frame body of \(length) B exceeds the limit of \(limit) B"
        case .unsupportedVersion(let version): return "unsupported protocol version \(version)"
        case .undecodableBody(let command, let reason):
            return "undecodable body for \(IMCommand(rawValue: command).map { "\($0)" } ?? "command \(command)"): \(reason)"
        case .linkEncoding(_, let reason): return reason
        }
    }
}
