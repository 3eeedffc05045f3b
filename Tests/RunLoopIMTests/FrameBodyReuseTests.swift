import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// A TCP link makes each frame's body in its thread's spare body and takes it back once the frame
/// was handled (no allocation a frame, issue 22). Receivers may keep frames: what they kept must
/// stay as it arrived while later frames are read — one frame a read and several a read, over
/// real loopback sockets on one loop thread.
@Suite("Frame bodies made in the thread's spare stay intact in the frames receivers keep")
struct FrameBodyReuseTests {
    /// Frame i's body: i + 1 bytes of a pattern of its own (the decoder takes any command).
    private static func frame(_ index: Int) -> IMFrame {
        IMFrame(rawCommand: 0x7001, serial: UInt32(index), body: (0...index).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) })
    }

    @Test("every frame a receiver kept, and every third one another kept, equal what was sent")
    func keptFramesStayIntact() async throws {
        let (kept, someKept, seen) = try await onLoopThread { () throws -> ([IMFrame], [IMFrame], Int) in
            let loop = RunLoop.current
            var kept: [IMFrame] = []
            var someKept: [IMFrame] = []
            var seen = 0
            var serverLinks: [TCPFrameLink] = []
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                let link = TCPFrameLink(connection: connection, maximumBodyLength: 4096)
                // The first link keeps every frame; the second keeps every third and drops the rest.
                let keepsAll = serverLinks.isEmpty
                link.open(
                    IMFrameLinkEvents(
                        received: { frame in
                            seen += 1
                            if keepsAll {
                                kept.append(frame)
                            } else if frame.serial % 3 == 0 {
                                someKept.append(frame)
                            }
                        },
                        failed: { _, _ in }, closed: { _ in }))
                serverLinks.append(link)
            }
            try listener.listen()
            var opened = 0
            let clients = (0..<2).map { _ in TCPFrameLink(host: "127.0.0.1", port: listener.port, loop: loop) }
            for client in clients {
                client.open(IMFrameLinkEvents(opened: { opened += 1 }, received: { _ in }, failed: { _, _ in }, closed: { _ in }))
            }
            #expect(try spin(loop, for: .seconds(10)) { opened == 2 && serverLinks.count == 2 })
            // One frame a read (a loop pass between sends), then 40 in one write (several a read).
            for index in 0..<40 {
                for client in clients { try client.send(Self.frame(index)) }
                #expect(try spin(loop, for: .seconds(10)) { seen == 2 * (index + 1) })
            }
            for client in clients { try client.send((40..<80).map(Self.frame)) }
            #expect(try spin(loop, for: .seconds(10)) { seen == 160 })
            for client in clients { client.close() }
            return (kept, someKept, seen)
        }
        #expect(seen == 160)
        #expect(kept == (0..<80).map(Self.frame))
        #expect(someKept == (0..<80).filter { $0 % 3 == 0 }.map(Self.frame))
    }
}
