/// What a reload (SIGHUP) does with the settings read again: which changes a running node takes at
/// once, which wait for a restart (it keeps the running value), and what is wrong with the new
/// settings, in which case nothing changes. A pure decision: the node applies ``settings``.
public struct ConfigReload: Equatable, Sendable {
    /// One setting whose value differs, as shown (a password masked).
    public struct Change: Equatable, Sendable, CustomStringConvertible {
        public var key: String
        public var old: String
        public var new: String

        public var description: String { "\(key): \(old) → \(new)" }
    }

    /// The settings the node runs with after the reload: the running ones with the live changes.
    public var settings: NodeSettings
    /// Changes applied now.
    public var applied: [Change] = []
    /// Changes the node ignores until it is restarted.
    public var needsRestart: [Change] = []
    /// Why the new settings were refused as a whole; empty when they were read.
    public var errors: [ConfigProblem] = []

    /// Compares `running` with what the sources hold now (`loaded`, or why they could not be read).
    /// Turning TLS on or off needs a restart (the port's protocol changes); other certificate files
    /// are live.
    public static func decide(running: NodeSettings, loaded: Result<NodeSettings, ConfigErrors>) -> ConfigReload {
        var reload = ConfigReload(settings: running)
        let new: NodeSettings
        switch loaded {
        case .failure(let errors):
            reload.errors = errors.problems
            return reload
        case .success(let settings): new = settings
        }
        let tlsSwitched = (running.tlsCertificate == nil) != (new.tlsCertificate == nil)
        for key in NodeSettingKey.all {
            guard !key.isSame(in: running, as: new) else { continue }
            let change = Change(key: key.name, old: key.shown(in: running), new: key.shown(in: new))
            if key.isLive, !(tlsSwitched && key.name.hasPrefix("tls-")) {
                key.copyValue(from: new, to: &reload.settings)
                reload.applied.append(change)
            } else {
                reload.needsRestart.append(change)
            }
        }
        return reload
    }

    /// What the node logs about the reload, one line each: every change and whether it was applied,
    /// or why the file was refused.
    public var report: [String] {
        if !errors.isEmpty {
            return ["configuration reload refused, keeping every setting as it was:"] + errors.map { "  \($0)" }
        }
        if applied.isEmpty, needsRestart.isEmpty { return ["configuration reloaded: no setting changed"] }
        return applied.map { "configuration reloaded: \($0)" }
            + needsRestart.map { "configuration: \($0) needs a restart; keeping \($0.old)" }
    }
}
