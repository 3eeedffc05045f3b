import ArgumentParser
import ChatNodeKit
import Glibc

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A node and three clients chat while the node crashes and a link goes silent; ends with a count (about 25 s).")

    @Option(help: "Write the loops' activity during the demo as an HTML timeline to this file (and as Chrome-trace JSON beside it, NAME.trace.json).")
    var timeline: String = "chat-node-demo.html"

    @Flag(help: "Do not write the timeline.")
    var noTimeline = false

    func run() throws {
        let summary = try ChatDemo.run(
            ChatDemo.Options(timelinePath: noTimeline ? nil : timeline) { line in
                print(line)
                fflush(nil)
            })
        print("")
        print("== Summary")
        print(summary)
        if !summary.isClean { throw ExitCode(1) }
    }
}
