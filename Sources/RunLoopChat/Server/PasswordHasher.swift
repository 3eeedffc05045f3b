import COpenSSL

/// Passwords kept only as salted scrypt hashes, in a self-describing text form:
/// `scrypt$N=<rounds>,r=<block>,p=<parallel>$<salt hex>$<hash hex>`.
///
/// scrypt is memory-hard (N × r × 128 bytes per hash: 16 MiB at the default N = 2¹⁴, r = 8), which is
/// what makes a stolen table expensive to attack with GPUs — unlike a bare SHA. A hash takes tens of
/// milliseconds: never on the loop's thread (the chat node hashes on one of its password workers and
/// hands the verdict back).
public struct PasswordHasher: Sendable, Equatable {
    /// CPU/memory cost (a power of two).
    public var rounds: Int
    public var blockSize: Int
    public var parallelism: Int

    /// The defaults: N = 2¹⁴, r = 8, p = 1 — the scrypt paper's interactive-login setting.
    public init(rounds: Int = 1 << 14, blockSize: Int = 8, parallelism: Int = 1) {
        precondition(rounds > 1 && rounds & (rounds - 1) == 0, "scrypt rounds must be a power of two")
        self.rounds = rounds
        self.blockSize = blockSize
        self.parallelism = parallelism
    }

    /// A cheap setting for tests, where hundreds of logins must not take seconds.
    public static let forTests = PasswordHasher(rounds: 1 << 4, blockSize: 8, parallelism: 1)

    /// Checks that OpenSSL here derives scrypt correctly: RFC 7914's first test vector (N = 16, so it
    /// costs microseconds). Call it before serving: with an OpenSSL configuration that loads no
    /// provider with scrypt (`OPENSSL_CONF` enabling only a FIPS or null provider), every derivation
    /// fails, and every password — right or wrong — would be refused as wrong. Any thread.
    ///
    /// It also loads OpenSSL's provider and its algorithm tables (≈ 2 MiB of libcrypto's pages) at
    /// start, where the first login would otherwise.
    /// - Throws: ``PasswordHashingUnavailable`` with OpenSSL's reason.
    public static func checkAvailable() throws(PasswordHashingUnavailable) {
        let vector = PasswordHasher(rounds: 16, blockSize: 1, parallelism: 1)
        switch vector.deriveKey("", salt: [], length: 64) {
        case .failure(let unavailable):
            throw unavailable
        case .success(let key) where hex(key) != rfc7914FirstVector:
            throw PasswordHashingUnavailable(reason: "scrypt gave a wrong result for RFC 7914's first test vector")
        case .success:
            return
        }
    }

    /// scrypt(P = "", S = "", N = 16, r = 1, p = 1, dkLen = 64), RFC 7914 section 12.
    private static let rfc7914FirstVector =
        "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"

    /// Hashes `password` with a fresh 16-byte salt.
    public func hash(_ password: String) -> String {
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        return encode(salt: salt, hash: derive(password, salt: salt))
    }

    /// Whether `password` matches `stored` (in constant time once derived). A malformed `stored`
    /// never matches.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$").map(String.init)
        guard parts.count == 4, parts[0] == "scrypt", let salt = fromHex(parts[2]), let expected = fromHex(parts[3]) else { return false }
        var settings: [String: Int] = [:]
        for item in parts[1].split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            if pair.count == 2, let value = Int(pair[1]) { settings[String(pair[0])] = value }
        }
        guard let rounds = settings["N"], let block = settings["r"], let parallel = settings["p"],
            rounds > 1, rounds & (rounds - 1) == 0, rounds <= 1 << 20, (1...32).contains(block), (1...16).contains(parallel)
        else { return false }
        let hasher = PasswordHasher(rounds: rounds, blockSize: block, parallelism: parallel)
        let actual = hasher.derive(password, salt: salt, length: expected.count)
        guard actual.count == expected.count else { return false }
        return zip(actual, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    func derive(_ password: String, salt: [UInt8], length: Int = 32) -> [UInt8] {
        // An empty result never matches a stored hash; checkAvailable() tells the operator at start.
        (try? deriveKey(password, salt: salt, length: length).get()) ?? []
    }

    /// The key, or OpenSSL's reason for not deriving it.
    private func deriveKey(_ password: String, salt: [UInt8], length: Int) -> Result<[UInt8], PasswordHashingUnavailable> {
        // The parameters are checked in verify and in init; a failure here is a memory limit or an
        // OpenSSL without scrypt. The limit is exactly what these parameters need (OpenSSL's own
        // check: 128·r·p for B plus 128·r·(N + 2) for V): OpenSSL's default of 32 MiB would refuse
        // hashes a deployment made with a higher cost.
        let passwordBytes = Array(password.utf8CString)  // NUL-terminated: never a nil pointer
        let saltBytes = salt + [0]  // likewise; the length passed leaves the NUL out
        let cost = UInt64(rounds)
        let block = UInt64(blockSize)
        let lanes = UInt64(parallelism)
        let memory = 128 * block * lanes + 128 * block * (cost + 2)
        var key = [UInt8](repeating: 0, count: length)
        let status = passwordBytes.withUnsafeBufferPointer { password in
            saltBytes.withUnsafeBufferPointer { salt in
                EVP_PBE_scrypt(
                    password.baseAddress, password.count - 1, salt.baseAddress, salt.count - 1,
                    cost, block, lanes, memory, &key, length)
            }
        }
        guard status == 1 else {
            var reason = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(ERR_peek_last_error(), &reason, reason.count)
            ERR_clear_error()  // the failure's entries would otherwise stay queued on this thread
            let text = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(PasswordHashingUnavailable(reason: "EVP_PBE_scrypt: \(text)"))
        }
        return .success(key)
    }

    private func encode(salt: [UInt8], hash: [UInt8]) -> String {
        "scrypt$N=\(rounds),r=\(blockSize),p=\(parallelism)$\(Self.hex(salt))$\(Self.hex(hash))"
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }

    static func fromHex(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0, !characters.isEmpty else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

/// OpenSSL here cannot derive scrypt hashes, so no password can be checked or stored
/// (``PasswordHasher/checkAvailable()``).
public struct PasswordHashingUnavailable: Error, Equatable, CustomStringConvertible {
    /// OpenSSL's error, or what was wrong with its result.
    public var reason: String

    public var description: String {
        "scrypt is not available from OpenSSL (\(reason)): no password could be checked. Is OPENSSL_CONF "
            + "loading a provider without scrypt (FIPS, null)? The default provider has it."
    }
}
