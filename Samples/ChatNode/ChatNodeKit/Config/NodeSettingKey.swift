import Logging

/// A value as a source gave it: typed, from the config file, or text still to be read as the key's
/// type, from an environment variable or a flag.
public enum ConfigValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    /// Text from the environment or the command line: read as whatever the key takes.
    case unparsed(String)
    /// A file value of a kind no key takes (a table, an array, a date), by its kind's name.
    case unsupported(String)

    /// The kind's name, as an error tells what it found.
    var kind: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a float"
        case .boolean: return "a boolean"
        case .unparsed(let text): return "\(quotedString(text))"
        case .unsupported(let kind): return kind
        }
    }
}

/// One setting of ``NodeSettings``: its one name, which is the config file's key, the flag
/// (`--NAME`) and the environment variable (`CHAT_NODE_NAME`, upper case, `_` for `-`); the type and
/// range its values must have; whether a running node can take a new value (``ConfigReload``); and
/// whether its value is masked where it is shown.
///
/// Made and read on any thread; ``all`` lists every key in the order `check-config` prints them.
public struct NodeSettingKey {
    public let name: String
    /// A reload applies a change at once; otherwise the node keeps the value until it is restarted.
    public let isLive: Bool
    /// The value may hold a password (a PostgreSQL URL): shown with it masked.
    public let isSecret: Bool
    private let assign: (inout NodeSettings, ConfigValue) throws(ConfigValueError) -> Void
    private let render: (NodeSettings) -> String
    private let copy: (NodeSettings, inout NodeSettings) -> Void

    /// `CHAT_NODE_` and the name in upper case, `-` as `_`.
    public var environmentName: String { "CHAT_NODE_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 }) }

    /// Sets the key's setting in `settings` from `value`.
    /// - Throws: a value of the wrong type or out of range, in words that do not repeat the key.
    public func set(_ value: ConfigValue, in settings: inout NodeSettings) throws(ConfigValueError) {
        try assign(&settings, value)
    }

    /// The setting's value in `settings` as TOML would write it (`unset` for none), a password masked.
    public func shown(in settings: NodeSettings) -> String {
        let text = render(settings)
        return isSecret ? maskingPasswords(text) : text
    }

    /// Whether `one` and `other` hold the same value for this key (passwords compared too).
    func isSame(in one: NodeSettings, as other: NodeSettings) -> Bool {
        render(one) == render(other)
    }

    /// Gives `target` the value `source` has for this key.
    func copyValue(from source: NodeSettings, to target: inout NodeSettings) {
        copy(source, &target)
    }

    private init<Value>(
        _ name: String, _ path: WritableKeyPath<NodeSettings, Value>, _ type: SettingType<Value>, live: Bool = false, secret: Bool = false
    ) {
        self.name = name
        isLive = live
        isSecret = secret
        assign = { (settings: inout NodeSettings, value: ConfigValue) throws(ConfigValueError) in settings[keyPath: path] = try type.read(value) }
        render = { type.show($0[keyPath: path]) }
        copy = { source, target in target[keyPath: path] = source[keyPath: path] }
    }

    /// The key called `name`, if there is one.
    public static func named(_ name: String) -> NodeSettingKey? {
        all.first { $0.name == name }
    }

    /// Every key. The limits, the log level and the certificate files are live; what a node binds,
    /// opens or joins when it starts (ports, storage, cluster) and how it hashes, logs and registers
    /// are read once.
    public static var all: [NodeSettingKey] {
        [
            NodeSettingKey("host", \.host, .string),
            NodeSettingKey("port", \.port, .port),
            NodeSettingKey("http", \.http, .boolean),
            NodeSettingKey("http-port", \.httpPort, .port),
            NodeSettingKey("websocket-ping-seconds", \.webSocketPingSeconds, .number(in: 0.1...3600)),
            NodeSettingKey("database", \.database, .optional(.string)),
            NodeSettingKey("postgres", \.postgres, .optional(.string), secret: true),
            NodeSettingKey("redis", \.redis, .optional(.string)),
            NodeSettingKey("node-id", \.nodeID, .optional(.string)),
            NodeSettingKey("lease-seconds", \.leaseSeconds, .optional(.number(in: 0.1...3600))),
            NodeSettingKey("registration", \.registration, .boolean),
            NodeSettingKey("max-connections", \.maximumConnections, .integer(in: 1...10_000_000), live: true),
            NodeSettingKey("max-sessions-per-user", \.maximumSessionsPerUser, .integer(in: 1...1_000_000), live: true),
            NodeSettingKey("messages-per-second", \.messagesPerSecond, .number(in: 0.001...1_000_000), live: true),
            NodeSettingKey("max-rooms-per-user", \.maximumRoomsPerUser, .integer(in: 0...1_000_000), live: true),
            NodeSettingKey("large-room-members", \.largeRoomMembers, .integer(in: 1...10_000_000)),
            NodeSettingKey("max-frame-bytes", \.maximumFrameBytes, .integer(in: 1024...16 * 1024 * 1024), live: true),
            NodeSettingKey("login-seconds", \.loginSeconds, .integer(in: 1...3600), live: true),
            NodeSettingKey("scrypt-cost", \.scryptCost, .integer(in: 4...20)),
            NodeSettingKey("keep-days", \.keepDays, .optional(.integer(in: 1...1_000_000))),
            NodeSettingKey("log-level", \.logLevel, .choice(Logger.Level.self), live: true),
            NodeSettingKey("log-format", \.logFormat, .choice(NodeSettings.LogFormat.self)),
            NodeSettingKey("tls-cert", \.tlsCertificate, .optional(.string), live: true),
            NodeSettingKey("tls-key", \.tlsKey, .optional(.string), live: true)
        ]
    }
}

/// Why a value does not fit its key.
public struct ConfigValueError: Error, Equatable, Sendable {
    public var reason: String
}

/// How values of one Swift type are read from a source and shown.
private struct SettingType<Value> {
    let read: (ConfigValue) throws(ConfigValueError) -> Value
    let show: (Value) -> String

    static var string: SettingType<String> {
        SettingType<String>(
            read: { (value: ConfigValue) throws(ConfigValueError) in
                switch value {
                case .string(let text), .unparsed(let text):
                    // An empty value would stand for a default it does not name: say which instead.
                    guard !text.isEmpty else { throw ConfigValueError(reason: "must not be empty") }
                    return text
                default: throw mismatch("a string", value)
                }
            }, show: quotedString)
    }

    static func integer(in range: ClosedRange<Int>) -> SettingType<Int> {
        ranged("an integer", in: range) { value in
            guard case .integer(let number) = value else { return nil }
            return number
        }
    }

    static var port: SettingType<UInt16> {
        let integer = SettingType<Int>.integer(in: 0...Int(UInt16.max))
        return SettingType<UInt16>(read: { (value: ConfigValue) throws(ConfigValueError) in UInt16(try integer.read(value)) }, show: { String($0) })
    }

    /// Integers count: `rate = 5` is as good as `rate = 5.0`.
    static func number(in range: ClosedRange<Double>) -> SettingType<Double> {
        ranged("a number", in: range) { value in
            switch value {
            case .float(let number): return number
            case .integer(let number): return Double(number)
            default: return nil
            }
        }
    }

    static var boolean: SettingType<Bool> {
        SettingType<Bool>(
            read: { (value: ConfigValue) throws(ConfigValueError) in
                switch value {
                case .boolean(let given): return given
                case .unparsed("true"), .unparsed("1"): return true
                case .unparsed("false"), .unparsed("0"): return false
                default: throw mismatch("a boolean (true or false)", value)
                }
            }, show: { String($0) })
    }

    static func choice<Choice: RawRepresentable & CaseIterable>(_: Choice.Type) -> SettingType<Choice> where Choice.RawValue == String {
        let names = Choice.allCases.map(\.rawValue).joined(separator: ", ")
        return SettingType<Choice>(
            read: { (value: ConfigValue) throws(ConfigValueError) in
                switch value {
                case .string(let text), .unparsed(let text):
                    guard let choice = Choice(rawValue: text) else { throw ConfigValueError(reason: "\(quotedString(text)) is not one of \(names)") }
                    return choice
                default: throw mismatch("one of \(names)", value)
                }
            }, show: { quotedString($0.rawValue) })
    }

    static func optional<Wrapped>(_ wrapped: SettingType<Wrapped>) -> SettingType<Wrapped?> {
        SettingType<Wrapped?>(
            read: { (value: ConfigValue) throws(ConfigValueError) in try wrapped.read(value) }, show: { $0.map(wrapped.show) ?? "unset" })
    }
}

/// Numbers of one type within `range`: `typed` takes the file's values of a fitting kind, and text
/// (a variable, a flag) is parsed.
private func ranged<Number: Comparable & LosslessStringConvertible>(
    _ kind: String, in range: ClosedRange<Number>, typed: @escaping (ConfigValue) -> Number?
) -> SettingType<Number> {
    SettingType<Number>(
        read: { (value: ConfigValue) throws(ConfigValueError) in
            let parsed: Number?
            if case .unparsed(let text) = value { parsed = Number(text) } else { parsed = typed(value) }
            guard let number = parsed else { throw mismatch(kind, value) }
            guard range.contains(number) else { throw ConfigValueError(reason: "\(number) is outside \(range.lowerBound)...\(range.upperBound)") }
            return number
        }, show: { String($0) })
}

private func mismatch(_ expected: String, _ found: ConfigValue) -> ConfigValueError {
    ConfigValueError(reason: "expected \(expected), found \(found.kind)")
}

/// `text` with any password replaced by `***`: the one in a URL's `user:password@` and any
/// `password=` (libpq's key=value form and URL parameters).
func maskingPasswords(_ text: String) -> String {
    var rest = Substring(text)
    var masked = ""
    if let scheme = rest.firstRange(of: "://") {
        let authority = rest[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
        if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
            masked = rest[...colon] + "***"
            rest = rest[at...]
        }
    }
    while let key = rest.firstRange(of: "password=") {
        masked += rest[..<key.upperBound] + "***"
        rest = rest[key.upperBound...].drop { $0 != "&" && $0 != " " && $0 != "\"" }
    }
    return masked + rest
}
