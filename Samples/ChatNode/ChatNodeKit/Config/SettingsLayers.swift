/// The settings a node runs with, from three layers: the config file, then the environment, then
/// the command line, each later one overriding the earlier for the keys it sets.
///
/// A value; resolve on any thread.
public struct ResolvedSettings: Equatable, Sendable {
    public var settings: NodeSettings
    /// Which layer set each key that is not at its default.
    public var sources: [String: SettingSource]

    /// Layers `file`, `environment` (only `CHAT_NODE_` variables of known keys are read; an empty
    /// value counts as unset) and `flags` (key names to what the command line gave) over the defaults.
    /// - Throws: every unknown key in the file, every value of the wrong type or out of range, and
    ///   every broken rule between settings (``NodeSettings/inconsistencies()``), all at once.
    public static func resolve(file: ConfigFile?, environment: [String: String], flags: [String: ConfigValue]) throws(ConfigErrors)
        -> ResolvedSettings
    {
        var resolved = ResolvedSettings(settings: NodeSettings(), sources: [:])
        var problems: [ConfigProblem] = []
        func set(_ key: NodeSettingKey, _ value: ConfigValue, from source: SettingSource) {
            do throws(ConfigValueError) {
                try key.set(value, in: &resolved.settings)
                resolved.sources[key.name] = source
            } catch {
                problems.append(ConfigProblem(source, key: key.name, error.reason))
            }
        }
        for entry in file?.entries ?? [] {
            let source = SettingSource.file(file?.path ?? "", line: entry.line)
            guard let key = NodeSettingKey.named(entry.key) else {
                problems.append(ConfigProblem(source, key: entry.key, "unknown key"))
                continue
            }
            set(key, entry.value, from: source)
        }
        let keys = NodeSettingKey.all
        for key in keys {
            guard let text = environment[key.environmentName], !text.isEmpty else { continue }
            set(key, .unparsed(text), from: .environment(key.environmentName))
        }
        for key in keys {
            guard let value = flags[key.name] else { continue }
            set(key, value, from: .flag("--\(key.name)"))
        }
        problems += resolved.settings.inconsistencies().map { ConfigProblem(nil, key: nil, $0) }
        guard problems.isEmpty else { throw ConfigErrors(problems) }
        return resolved
    }

    /// One `key = value` line per setting, as TOML, a password masked, with where it came from in a
    /// comment when it is not the default: what `chat-node check-config` prints.
    public var summary: String {
        NodeSettingKey.all.map { key in
            let value = key.shown(in: settings)
            // TOML has no null: an unset key is a comment, so the output stays a config file.
            let line = value == "unset" ? "# \(key.name) is unset" : "\(key.name) = \(value)"
            guard let source = sources[key.name] else { return line }
            return "\(line)  # \(source)"
        }.joined(separator: "\n")
    }
}
