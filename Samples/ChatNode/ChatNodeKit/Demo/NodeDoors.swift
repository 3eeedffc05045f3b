import RunLoopIM
import RunLoopKit
import RunLoopNet

/// The node's doors in the demo: a listener per person on the node's loop, whose connections the
/// node's server adopts as it does its own listener's — after naming each for its person ("node ↔
/// alice") and marking its frames on the node's recorder. The node cannot know who a connection is
/// before the login; a door can, so the node's lane names whose message it handled.
///
/// Loop thread only (the node's ``HostedLoop``).
final class NodeDoors {
    private var listeners: [(person: String, listener: TCPListener)] = []

    /// Opens a door for each of `people` (port 0: any free one; the same one again after a restart)
    /// into `server`, marking on `recorder`.
    init(people: [(name: String, port: UInt16)], server: IMServer, recorder: ActivityRecorder) throws(NetError) {
        for (person, port) in people {
            let listener = TCPListener(loop: server.loop, modes: server.modes)
            let label = "node ↔ \(person)"  // once per door, shared by its connections
            listener.onAccept = { [weak server] _, connection in
                guard let server else { return connection.close(immediately: true) }
                connection.label = label
                let settings = server.settings
                let link = TCPFrameLink(
                    connection: connection, maximumBodyLength: settings.maximumFrameBody, skippableSendLength: settings.maximumSkippedSendBody)
                server.adopt(MarkingLink.tapped(link, client: person, end: .node, marking: recorder))
            }
            try listener.listen(host: "127.0.0.1", port: port)
            listeners.append((person, listener))
        }
    }

    /// Each person's door's port.
    var ports: [String: UInt16] { Dictionary(uniqueKeysWithValues: listeners.map { ($0.person, $0.listener.port) }) }

    /// Closes the doors (their connections are the server's).
    func close() {
        for (_, listener) in listeners { listener.close() }
    }
}
