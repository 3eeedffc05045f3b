import SwiftProtobuf
import Testing

@testable import RunLoopIMCore

/// A bounded, seeded randomized test of the frame decoder: the in-suite half of issue 9's fuzzing
/// (the long run is the libFuzzer target in `Fuzz/`). Deterministic — a failure names its seed and
/// case, and rerunning reproduces it — and small enough for the debug suite (well under 2 s).
///
/// Each case is a byte stream (valid frames, valid frames mutated, or noise), a body limit (small
/// ones included, so the size check is reached often) and two ways of cutting the stream into reads.
/// The decoder must agree with a one-pass reference parse, whatever the reads.
@Suite("Frame decoder, randomized")
struct FrameDecoderFuzzTests {
    static let seed: UInt64 = 0x5EED_0009
    static let cases = 1_000
    static let limits = [0, 1, 16, 100, 300, 64 * 1024]

    @Test("valid frames round-trip exactly, whatever the read sizes")
    func validStreams() throws {
        var random = FuzzRandom(seed: Self.seed)
        for index in 0..<Self.cases / 3 {
            let frames = (0..<random.int(1...8)).map { _ in FuzzFrames.randomFrame(&random) }
            let stream = frames.flatMap { $0.frame.encoded() }
            let run = Self.decode(stream, limit: 64 * 1024, random: &random)
            #expect(run.error == nil, "case \(index)")
            #expect(run.frames == frames.map(\.frame), "case \(index)")
            #expect(run.buffered == 0, "case \(index)")
            for (decoded, original) in zip(run.frames, frames) {
                #expect(try original.check(decoded), "case \(index): \(decoded)")
            }
        }
    }

    @Test("mutated and random streams: typed errors, bounded buffer, the same frames for any chunking")
    func hostileStreams() {
        var random = FuzzRandom(seed: Self.seed ^ 0xBAD)
        var outcomes: [String: Int] = [:]
        for index in 0..<Self.cases {
            let stream = index % 3 == 0 ? FuzzFrames.noise(&random) : FuzzFrames.mutatedStream(&random)
            let limit = Self.limits[random.int(0...(Self.limits.count - 1))]
            let expected = ReferenceParse(stream, limit: limit)
            let first = Self.decode(stream, limit: limit, random: &random)
            let second = Self.decode(stream, limit: limit, random: &random)
            #expect(
                first.frames == expected.frames && first.error == expected.error && first.buffered == expected.tail,
                "case \(index) limit \(limit): \(first.frames.count) frames, \(String(describing: first.error)); expected \(expected.frames.count), \(String(describing: expected.error))"
            )
            #expect(second.frames == first.frames && second.error == first.error, "case \(index): chunking changed the result")
            #expect(first.maximumBufferedOverBound <= 0, "case \(index): buffer \(first.maximumBufferedOverBound) B over its bound")
            outcomes[Self.outcome(first.error), default: 0] += 1
            outcomes["frames", default: 0] += first.frames.count
            for frame in first.frames { FuzzFrames.decodeAny(frame, into: &outcomes) }
        }
        // The generator reaches every outcome often, or the checks above prove little.
        for outcome in ["clean", "tooLarge", "version", "frames", "decoded", "undecodable"] {
            #expect(outcomes[outcome, default: 0] >= Self.cases / 20, "\(outcome): \(outcomes)")
        }
    }

    static func outcome(_ error: IMFrameError?) -> String {
        switch error {
        case nil: return "clean"
        case .frameTooLarge: return "tooLarge"
        case .unsupportedVersion: return "version"
        case .undecodableBody, .linkEncoding: return "undecodableFrame"  // the stream decoder never throws them
        }
    }

    /// What a decoder made of a stream fed in random reads.
    struct Run {
        var frames: [IMFrame] = []
        var error: IMFrameError?
        var buffered = 0
        /// The largest `bufferedByteCount - (header + limit + last read)` seen: must stay ≤ 0.
        var maximumBufferedOverBound = Int.min
    }

    /// Feeds `stream` in reads of 1...300 bytes (sometimes all at once), draining frames after each.
    static func decode(_ stream: [UInt8], limit: Int, random: inout FuzzRandom) -> Run {
        var decoder = FrameDecoder(maximumBodyLength: limit)
        var run = Run()
        var index = 0
        let whole = random.int(0...7) == 0
        while index < stream.count || index == 0 {
            let chunk = whole ? stream.count : min(stream.count - index, random.int(1...300))
            decoder.append(stream[index..<(index + chunk)])
            index += chunk
            run.maximumBufferedOverBound = max(run.maximumBufferedOverBound, decoder.bufferedByteCount - (FrameHeader.size + limit + chunk))
            do {
                while let frame = try decoder.next() { run.frames.append(frame) }
            } catch {
                run.error = error
                // The error sticks and nothing stays buffered.
                #expect(throws: error) { try decoder.next() }
                #expect(decoder.bufferedByteCount == 0)
                return run
            }
            if stream.isEmpty { break }
        }
        run.buffered = decoder.bufferedByteCount
        return run
    }
}

/// The frames of a stream read in one pass, straight from the header layout in `docs/PROTOCOL.md`:
/// what the streaming decoder must produce.
struct ReferenceParse {
    var frames: [IMFrame] = []
    var error: IMFrameError?
    var tail = 0

    init(_ stream: [UInt8], limit: Int) {
        var offset = 0
        func field(_ at: Int, _ size: Int) -> UInt32 {
            stream[(offset + at)..<(offset + at + size)].reduce(0) { $0 << 8 | UInt32($1) }
        }
        while stream.count - offset >= 16 {
            let length = field(0, 4), version = UInt16(field(4, 2))
            if version != 1 { error = .unsupportedVersion(version); return }
            if Int(length) > limit { error = .frameTooLarge(length: length, limit: limit); return }
            guard stream.count - offset - 16 >= Int(length) else { break }
            let body = Array(stream[(offset + 16)..<(offset + 16 + Int(length))])
            frames.append(IMFrame(rawCommand: UInt16(field(6, 2)), serial: field(8, 4), code: field(12, 4), body: body))
            offset += 16 + Int(length)
        }
        tail = stream.count - offset
    }
}

/// A generated frame and how to check its body: decode it as the message it was made from.
struct FuzzFrame {
    var frame: IMFrame
    var check: (IMFrame) throws -> Bool
}

enum FuzzFrames {
    static func message<M: SwiftProtobuf.Message & Equatable>(_ command: IMCommand, _ message: M, _ random: inout FuzzRandom) -> FuzzFrame {
        let frame = IMFrame(command: command, serial: random.uint32(), message: message)
        return FuzzFrame(frame: frame) { try $0.decode(M.self) == message }
    }

    /// A frame of a random known command with a random body of the right type (or none).
    static func randomFrame(_ random: inout FuzzRandom) -> FuzzFrame {
        let command = IMCommand.allCases[random.int(0...(IMCommand.allCases.count - 1))]
        switch command {
        case .heartbeat, .heartbeatAck, .logout, .logoutAck:
            let frame = IMFrame(command: command, serial: random.uint32(), code: random.int(0...3) == 0 ? .rateLimited : .ok)
            return FuzzFrame(frame: frame) { $0.body.isEmpty }
        case .login:
            var login = IMLoginRequest()
            login.user = random.text(12)
            login.password = random.text(12)
            login.keepaliveSeconds = random.uint32()
            return message(command, login, &random)
        case .loginAck:
            var response = IMLoginResponse()
            response.user = random.text(12)
            response.sessionID = random.text(20)
            response.serverTimeMs = random.next()
            return message(command, response, &random)
        case .send, .deliver:
            var chat = IMChatMessage()
            chat.id = random.text(36)
            chat.from = random.text(10)
            if random.int(0...1) == 0 { chat.user = random.text(10) } else { chat.room = random.text(10) }
            chat.text = random.text(200)
            chat.seq = random.next()
            return message(command, chat, &random)
        case .sendAck:
            var ack = IMSendAck()
            ack.id = random.text(36)
            ack.seq = random.next()
            return message(command, ack, &random)
        case .deliverAck:
            var ack = IMDeliverAck()
            ack.seqs = (0..<random.int(0...20)).map { _ in random.next() >> random.int(0...63) }
            return message(command, ack, &random)
        case .abandon:
            var request = IMAbandonRequest()
            request.ids = (0..<random.int(0...5)).map { _ in random.text(36) }
            return message(command, request, &random)
        case .abandonAck:
            var response = IMAbandonResponse()
            response.results = (0..<random.int(0...5)).map { _ in
                var result = IMAbandonResult()
                result.id = random.text(36)
                result.accepted = random.int(0...1) == 1
                return result
            }
            return message(command, response, &random)
        case .error:
            var notice = IMErrorNotice()
            notice.message = random.text(40)
            notice.retryAfterMs = random.uint32()
            return message(command, notice, &random)
        case .join, .leave:
            var request = IMRoomRequest()
            request.room = random.text(20)
            return message(command, request, &random)
        case .joinAck, .leaveAck:
            var room = IMRoomInfo()
            room.name = random.text(20)
            room.members = UInt32(random.int(0...100))
            room.joined = random.int(0...1) == 1
            return message(command, room, &random)
        case .listRooms:
            return FuzzFrame(frame: IMFrame(command: command, serial: random.uint32())) { $0.body.isEmpty }
        case .roomList:
            var list = IMRoomList()
            list.rooms = (0..<random.int(0...5)).map { _ in
                var room = IMRoomInfo()
                room.name = random.text(20)
                room.members = UInt32(random.int(0...9))
                return room
            }
            return message(command, list, &random)
        case .history:
            var request = IMHistoryRequest()
            if random.int(0...1) == 0 { request.room = random.text(12) } else { request.user = random.text(12) }
            request.beforeSeq = random.next()
            request.limit = random.uint32()
            return message(command, request, &random)
        case .historyPage:
            var page = IMHistoryPage()
            page.messages = (0..<random.int(0...3)).map { _ in
                var chat = IMChatMessage()
                chat.id = random.text(36)
                chat.text = random.text(50)
                chat.seq = random.next()
                return chat
            }
            page.moreAvailable = random.int(0...1) == 1
            return message(command, page, &random)
        case .presence:
            var notice = IMPresenceNotice()
            notice.user = random.text(10)
            notice.online = random.int(0...1) == 1
            return message(command, notice, &random)
        case .membership:
            var notice = IMMembershipNotice()
            notice.room = random.text(12)
            notice.user = random.text(10)
            notice.joined = random.int(0...1) == 1
            notice.members = random.uint32()
            return message(command, notice, &random)
        case .presenceBatch:
            var batch = IMPresenceBatch()
            batch.notices = (0..<random.int(0...4)).map { _ in
                var notice = IMPresenceNotice()
                notice.user = random.text(10)
                notice.online = random.int(0...1) == 1
                return notice
            }
            return message(command, batch, &random)
        }
    }

    /// Valid frames, then a few edits a broken or hostile peer could make: flipped bytes, a rewritten
    /// length or version, bytes inserted, removed or repeated, the end cut off.
    static func mutatedStream(_ random: inout FuzzRandom) -> [UInt8] {
        var stream = (0..<random.int(1...6)).flatMap { _ in randomFrame(&random).frame.encoded() }
        for _ in 0..<random.int(1...4) {
            let at = random.int(0...(stream.count - 1))
            switch random.int(0...6) {
            case 0: stream[at] ^= UInt8(truncatingIfNeeded: random.int(1...255))
            case 1: stream[at] = [0x00, 0x01, 0x7F, 0x80, 0xFF][random.int(0...4)]
            case 2: stream.insert(contentsOf: random.bytes(random.int(1...20)), at: at)
            case 3: stream.removeSubrange(at..<min(stream.count, at + random.int(1...20)))
            case 4: stream.append(contentsOf: stream[at...].prefix(random.int(1...64)))
            case 5: stream.removeLast(random.int(0...min(stream.count - 1, 40)))
            default:
                // A length field rewritten: small (often shorter or longer than the body) or huge.
                guard stream.count >= 4 else { continue }
                let header = min(at, stream.count - 4)
                let length = random.int(0...1) == 0 ? UInt32.max - UInt32(random.int(0...3)) : UInt32(random.int(0...400))
                withUnsafeBytes(of: length.bigEndian) { stream.replaceSubrange(header..<(header + 4), with: $0) }
            }
            if stream.isEmpty { stream = [0] }
        }
        return stream
    }

    /// Random bytes; half the time behind plausible headers (version 1, small lengths), so noise gets
    /// past the header checks into bodies.
    static func noise(_ random: inout FuzzRandom) -> [UInt8] {
        var stream: [UInt8] = []
        for _ in 0..<random.int(0...5) {
            if random.int(0...1) == 0 {
                let body = random.bytes(random.int(0...120))
                stream += IMFrame(rawCommand: UInt16(random.int(0...15)), serial: random.uint32(), body: body).encoded()
            } else {
                stream += random.bytes(random.int(0...60))
            }
        }
        return stream
    }

    /// Decodes a body as every message type: either a message that re-encodes to the same message,
    /// or a typed `undecodableBody` naming the frame's command.
    static func decodeAny(_ frame: IMFrame, into outcomes: inout [String: Int]) {
        let results = [
            roundTrip(frame, IMLoginRequest.self),
            roundTrip(frame, IMLoginResponse.self),
            roundTrip(frame, IMChatMessage.self),
            roundTrip(frame, IMSendAck.self),
            roundTrip(frame, IMDeliverAck.self),
            roundTrip(frame, IMAbandonRequest.self),
            roundTrip(frame, IMAbandonResponse.self),
            roundTrip(frame, IMErrorNotice.self)
        ]
        guard !frame.body.isEmpty else { return }
        for decoded in results { outcomes[decoded ? "decoded" : "undecodable", default: 0] += 1 }
    }

    /// - Returns: whether the body decoded as `type`.
    static func roundTrip<M: SwiftProtobuf.Message & Equatable>(_ frame: IMFrame, _ type: M.Type) -> Bool {
        do throws(IMFrameError) {
            let message = try frame.decode(type)
            let again = IMFrame(rawCommand: frame.header.command, serial: 0, body: try! message.serializedBytes())
            #expect(try again.decode(type) == message, "\(M.self) changed across a re-encode")
            return true
        } catch {
            guard case .undecodableBody(let command, _) = error else {
                Issue.record("\(error) from decoding a body")
                return false
            }
            #expect(command == frame.header.command)
            return false
        }
    }
}

/// SplitMix64: deterministic for a seed, so every case can be replayed.
struct FuzzRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    mutating func uint32() -> UInt32 { UInt32(truncatingIfNeeded: next()) }

    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }

    /// Up to `maximumLength` characters, some of them multi-byte (the text fields carry any language).
    mutating func text(_ maximumLength: Int) -> String {
        let alphabet: [Character] = ["a", "z", "0", " ", "-", "é", "ß", "中", "😀", "\u{0}"]
        return String((0..<int(0...maximumLength)).map { _ in alphabet[int(0...(alphabet.count - 1))] })
    }
}
