import RunLoopChatCluster
import Testing

@Suite("Cluster keyspace")
struct ClusterKeyspaceTests {
    @Test("keys start with the prefix and join their parts with colons")
    func keys() {
        #expect(ClusterKeyspace().key("node", "7") == "chat:node:7")
        #expect(ClusterKeyspace(prefix: "test-42:").key("stream", "3") == "test-42:stream:3")
        #expect(ClusterKeyspace(prefix: "t:").everyKeyPattern == "t:*")
    }
}
