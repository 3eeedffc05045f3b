/// The fixed 16-byte header in front of every frame, all fields big-endian (network byte order):
///
/// | offset | size | field        |
/// |-------:|-----:|--------------|
/// |      0 |    4 | body length  |
/// |      4 |    2 | version      |
/// |      6 |    2 | command      |
/// |      8 |    4 | serial       |
/// |     12 |    4 | code         |
///
/// The length comes first so a reader in any language reassembles the stream by length prefix alone
/// (never by read size). A heartbeat is a header with an empty body: 16 bytes, the smallest frame.
/// `docs/PROTOCOL.md` is the normative description.
public struct FrameHeader: Hashable, Sendable, CustomStringConvertible {
    /// Bytes in a header.
    public static let size = 16
    /// The only protocol version this implementation speaks.
    public static let currentVersion: UInt16 = 1

    /// Bytes of body after the header.
    public var bodyLength: UInt32
    /// Protocol version of the sender.
    public var version: UInt16
    /// What the frame is (``IMCommand``'s raw value; unknown numbers are kept, not rejected).
    public var command: UInt16
    /// Request number chosen by the sender of a request; a response echoes it.
    public var serial: UInt32
    /// 0 for success; otherwise an ``IMStatusCode`` raw value.
    public var code: UInt32

    public init(bodyLength: UInt32, version: UInt16 = FrameHeader.currentVersion, command: UInt16, serial: UInt32, code: UInt32 = 0) {
        self.bodyLength = bodyLength
        self.version = version
        self.command = command
        self.serial = serial
        self.code = code
    }

    /// Reads a header from the first ``size`` bytes at `offset`. The caller checks there are enough.
    init(reading bytes: UnsafeRawBufferPointer, at offset: Int) {
        bodyLength = Self.load(bytes, offset, as: UInt32.self)
        version = Self.load(bytes, offset + 4, as: UInt16.self)
        command = Self.load(bytes, offset + 6, as: UInt16.self)
        serial = Self.load(bytes, offset + 8, as: UInt32.self)
        code = Self.load(bytes, offset + 12, as: UInt32.self)
    }

    /// Appends the header's 16 bytes to `buffer`.
    func append(to buffer: inout [UInt8]) {
        // Appended at once as typed bytes: each field appended as raw bytes took the standard library's
        // byte-by-byte path, some 100 instructions a field — 570 of a heartbeat's answer (issue 22,
        // IM-RESULTS "idle9").
        withEncodedBytes { raw in
            raw.withMemoryRebound(to: UInt8.self) { buffer.append(contentsOf: $0) }
        }
    }

    /// Calls `body` with the header's 16 bytes on the wire, laid out on the stack: a frame with no body
    /// (a heartbeat's answer) is written from them without an array.
    package func withEncodedBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        var bytes: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw.storeBytes(of: bodyLength.bigEndian, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: version.bigEndian, toByteOffset: 4, as: UInt16.self)
            raw.storeBytes(of: command.bigEndian, toByteOffset: 6, as: UInt16.self)
            raw.storeBytes(of: serial.bigEndian, toByteOffset: 8, as: UInt32.self)
            raw.storeBytes(of: code.bigEndian, toByteOffset: 12, as: UInt32.self)
        }
        return withUnsafeBytes(of: &bytes) { raw in body(UnsafeRawBufferPointer(rebasing: raw[..<FrameHeader.size])) }
    }

    public var description: String {
        "\(IMCommand(rawValue: command).map { "\($0)" } ?? "command \(command)") v\(version) serial \(serial) code \(code) body \(bodyLength) B"
    }

    private static func load<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, _ offset: Int, as: T.Type) -> T {
        T(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
