/// Where a setting's value came from: what an error names, and what `check-config` shows beside a value.
public enum SettingSource: Equatable, Sendable, CustomStringConvertible {
    /// The config file, and the line when known.
    case file(String, line: Int?)
    /// An environment variable, by name.
    case environment(String)
    /// A command-line flag, by name (`--port`).
    case flag(String)

    public var description: String {
        switch self {
        case .file(let path, let line?): return "\(path):\(line)"
        case .file(let path, nil): return path
        case .environment(let name): return name
        case .flag(let name): return name
        }
    }
}

/// One thing wrong with a node's settings: where, which key, what.
public struct ConfigProblem: Equatable, Sendable, CustomStringConvertible {
    /// Where the value came from; `nil` for a rule between settings.
    public var source: SettingSource?
    public var key: String?
    public var reason: String

    public init(_ source: SettingSource?, key: String?, _ reason: String) {
        self.source = source
        self.key = key
        self.reason = reason
    }

    /// `FILE:LINE: key: reason`, the way compilers name a place, so an editor can jump to it.
    public var description: String {
        [source?.description, key, reason].compactMap { $0 }.joined(separator: ": ")
    }
}

/// Every problem found in a node's settings, so an operator fixes them all in one go.
public struct ConfigErrors: Error, Equatable, Sendable, CustomStringConvertible {
    public var problems: [ConfigProblem]

    public init(_ problems: [ConfigProblem]) {
        self.problems = problems
    }

    /// One problem a line.
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
