import ArgumentParser
import ChatNodeKit

/// `chat-node check-config`: the settings `serve` would run with, or everything wrong with them.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Print the settings serve would run with (file, environment, flags; passwords masked), or what is wrong with them.",
        discussion:
            "Exits 0 when serve would start with them, 78 (EX_CONFIG) with one line per problem on standard error when not, 64 on a usage error."
    )

    @OptionGroup var options: ServeOptions

    func run() throws {
        do throws(ConfigErrors) {
            let resolved = try options.resolve()
            // The certificate files are read too: serve would refuse to start on them.
            do {
                _ = try resolved.settings.tlsContext()
            } catch {
                throw ConfigErrors([ConfigProblem(resolved.sources["tls-cert"], key: "tls-cert", "\(error)")])
            }
            print(resolved.summary)
        } catch {
            error.problems.forEach { printError("chat-node: \($0)") }
            throw configurationErrorExit
        }
    }
}
