import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@Suite("A tapped link shows each frame to its observers and forwards everything (in-memory pair)")
struct TappedFrameLinkTests {
    private func frame(_ serial: UInt32) -> IMFrame { IMFrame(command: .heartbeat, serial: serial) }

    private func events(_ received: @escaping (IMFrame) -> Void) -> IMFrameLinkEvents {
        IMFrameLinkEvents(received: received, failed: { _, _ in }, closed: { _ in })
    }

    @Test("frames sent one at a time and in batches, and frames received, are seen once each and in order; the peer gets them all")
    func seesEveryFrame() async throws {
        try await onManualClockLoop { loop, _ in
            let pair = MemoryLinkPair(loop: loop)
            var sent: [UInt32] = [], seen: [UInt32] = [], delivered: [UInt32] = [], peerGot: [UInt32] = []
            let tapped = TappedFrameLink(pair.client, sent: { sent.append($0.serial) }, received: { seen.append($0.serial) })
            pair.server.open(events { peerGot.append($0.serial) })
            tapped.open(events { delivered.append($0.serial) })
            try tapped.send(frame(1))
            try tapped.send([frame(2), frame(3)])
            try pair.server.send(frame(7))
            try #require(try pair.settle())
            #expect(sent == [1, 2, 3])
            #expect(peerGot == [1, 2, 3])
            #expect(seen == [7] && delivered == [7], "the observer first, then the link's user")
            #expect(tapped.loop === loop && tapped.bufferedOutputBytes == pair.client.bufferedOutputBytes)
        }
    }

    @Test("sending sees each frame before it is handed over (a batch's all before the batch), refused ones too; sent only what was accepted")
    func sendingComesFirst() async throws {
        try await onManualClockLoop { loop, _ in
            let pair = MemoryLinkPair(loop: loop)
            var sending: [UInt32] = [], sent: [UInt32] = [], sentBefore: [Int] = []
            let tapped = TappedFrameLink(
                pair.client,
                sending: { frame in
                    sending.append(frame.serial)
                    sentBefore.append(sent.count)
                }, sent: { sent.append($0.serial) }, received: { _ in })
            pair.server.open(events { _ in })
            tapped.open(events { _ in })
            try tapped.send(frame(1))
            try tapped.send([frame(2), frame(3)])
            #expect(sending == [1, 2, 3] && sent == [1, 2, 3])
            #expect(sentBefore == [0, 1, 1], "the batch's frames are all seen before it is handed over")
            tapped.close()
            #expect(throws: IMLinkFailure.self) { try tapped.send(frame(4)) }
            #expect(sending == [1, 2, 3, 4] && sent == [1, 2, 3])
        }
    }

    @Test("a frame the wrapped link refuses is not reported as sent")
    func refusedIsNotSent() async throws {
        try await onManualClockLoop { loop, _ in
            let pair = MemoryLinkPair(loop: loop)
            var sent = 0
            let tapped = TappedFrameLink(pair.client, sent: { _ in sent += 1 }, received: { _ in })
            tapped.open(events { _ in })
            tapped.close()
            #expect(throws: IMLinkFailure.self) { try tapped.send(frame(1)) }
            #expect(sent == 0)
        }
    }
}
