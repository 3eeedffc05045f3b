import Foundation
import RunLoopIM
public import RunLoopIMCore
import SwiftProtobuf

/// The IM protocol's frames as JSON text, for browsers (docs/PROTOCOL.md §13): one WebSocket text
/// message per frame,
///
/// ```json
/// {"command":"SEND","serial":7,"code":0,"body":{"id":"…","room":"lobby","text":"hi"}}
/// ```
///
/// `command` is the command's name, `serial` and `code` the header's fields, `body` the command's
/// message in the Protocol Buffers canonical JSON mapping (absent or `{}` for an empty one). The
/// header's length and version have no JSON counterpart: the message's own length is the frame's,
/// and the envelope is version 1.
///
/// A pure value type: decoding is strict — any deviation, a key written twice in one object
/// included, is an ``IMEnvelopeError`` carrying the IM status code a binary frame with the same fault
/// would get, so both encodings fail alike.
public enum IMJSONEnvelope {
    /// The envelope's keys; any other key is refused.
    static let keys: Set<String> = ["command", "serial", "code", "body"]

    /// The frame as one JSON text. Bodies the command's message cannot decode (a server bug) are
    /// sent as an empty object rather than failing the connection.
    public static func encode(_ frame: IMFrame) -> String {
        let name = frame.command.map { "\"\($0)\"" } ?? String(frame.header.command)
        var body = "{}"
        if let type = frame.command?.bodyType, let message = try? type.init(serializedBytes: frame.body),
            let json = try? message.jsonString()
        {
            body = json
        }
        return "{\"command\":\(name),\"serial\":\(frame.serial),\"code\":\(frame.header.code),\"body\":\(body)}"
    }

    /// The frame a JSON text stands for, its body re-encoded as the binary message the session decodes.
    /// - Throws: ``IMEnvelopeError``: not a JSON object, an unknown, missing or repeated key (at the
    ///   top level or in the body), a wrong type, an unknown command (`unknownCommand`), a body that is
    ///   not the command's message (`badRequest`).
    public static func decode(_ text: String) throws(IMEnvelopeError) -> IMFrame {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                throw IMEnvelopeError(.badRequest, "the envelope must be a JSON object")
            }
            object = parsed
        } catch let error as IMEnvelopeError {
            throw error
        } catch {
            throw IMEnvelopeError(.badRequest, "not JSON: \(error.localizedDescription)")
        }
        // The serial first, so every later refusal can echo it.
        let serial = try number(object["serial"], "serial", required: true, serial: 0)
        if let duplicate = JSONDuplicateKeys.first(in: text) {
            // Two serials: neither is the one to echo.
            let echoed = duplicate == .init(key: "serial", depth: 1) ? 0 : serial
            throw IMEnvelopeError(.badRequest, "key \"\(duplicate.key)\" twice in one object", serial: echoed)
        }
        if let extra = Set(object.keys).subtracting(keys).sorted().first {
            throw IMEnvelopeError(.badRequest, "unknown key \"\(extra)\"", serial: serial)
        }
        guard let name = object["command"] as? String else {
            throw IMEnvelopeError(.badRequest, "\"command\" must be a command name such as \"SEND\"", serial: serial)
        }
        guard let command = IMCommand(name: name) else {
            throw IMEnvelopeError(.unknownCommand, "unknown command \"\(name)\"", serial: serial)
        }
        let code = try number(object["code"], "code", required: false, serial: serial)
        let body = try bodyBytes(object["body"], for: command, serial: serial)
        return IMFrame(rawCommand: command.rawValue, serial: serial, code: code, body: body)
    }

    /// A 32-bit unsigned integer field: JSON numbers only (not booleans, strings or fractions).
    private static func number(_ value: Any?, _ key: String, required: Bool, serial: UInt32) throws(IMEnvelopeError) -> UInt32 {
        guard let value else {
            if required { throw IMEnvelopeError(.badRequest, "missing \"\(key)\"", serial: serial) }
            return 0
        }
        // Foundation bridges JSON true/false and 1.5 to NSNumber as well (and `is Bool` holds for 0 and
        // 1): the number's own type tells integers ("i", "q") from booleans ("c") and fractions ("d").
        guard let boxed = value as? NSNumber, ["i", "q", "l", "s"].contains(String(cString: boxed.objCType)),
            let number = value as? UInt32
        else {
            throw IMEnvelopeError(.badRequest, "\"\(key)\" must be an integer 0...4294967295", serial: serial)
        }
        return number
    }

    private static func bodyBytes(_ value: Any?, for command: IMCommand, serial: UInt32) throws(IMEnvelopeError) -> [UInt8] {
        guard let value else { return [] }
        guard let object = value as? [String: Any] else {
            throw IMEnvelopeError(.badRequest, "\"body\" must be a JSON object", serial: serial)
        }
        guard let type = command.bodyType else {
            if object.isEmpty { return [] }
            throw IMEnvelopeError(.badRequest, "\(command) has no body", serial: serial)
        }
        do {
            let json = try JSONSerialization.data(withJSONObject: object)
            return try type.init(jsonUTF8Bytes: json).serializedBytes()
        } catch {
            throw IMEnvelopeError(.badRequest, "body is not a valid \(type.protoMessageName): \(error)", serial: serial)
        }
    }
}

/// Why a JSON text is not a frame: the status code the session answers with (ERROR, then close), the
/// reason for people, and the serial to echo (0 when none could be read).
public struct IMEnvelopeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The status the ERROR frame carries (`badRequest`, `unknownCommand`, `frameTooLarge`, …).
    public var code: IMStatusCode
    /// What was wrong, for people (the ERROR's message and the close reason).
    public var reason: String
    /// The serial to echo: the offending message's, or 0 when it could not be read.
    public var serial: UInt32

    public init(_ code: IMStatusCode, _ reason: String, serial: UInt32 = 0) {
        self.code = code
        self.reason = reason
        self.serial = serial
    }

    public var description: String { "\(code): \(reason)" }
}
