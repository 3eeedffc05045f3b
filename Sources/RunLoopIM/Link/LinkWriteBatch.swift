package import RunLoopKit

/// A link whose frames wait for the end of the loop pass (``LinkWriteBatch``).
package protocol BatchedFrameWriter: AnyObject {
    /// Hands what the link gathered in this pass to its stream, in one write.
    func writeGatheredFrames()
}

/// The output of a server's links, gathered over one loop pass and written once per link when the
/// pass's work is done: a room's fan-out sends each member every DELIVER of the SENDs one read
/// brought, and the SEND_ACKs go to the sender together, so a link writes once per pass instead of
/// once per frame — one `send()` and, on loopback or a LAN, one TCP segment for many frames, and the
/// peer reads them in one go (and answers them with one DELIVER_ACK).
///
/// Nothing waits longer than the pass: the write is a block queued on the loop's thread, which runs
/// at the pass's next block point — after the callouts of this pass, before the loop sleeps again.
///
/// Loop thread only, like the server that owns it.
package final class LinkWriteBatch {
    package let loop: RunLoop
    package let modes: [RunLoop.Mode]
    /// Links with frames waiting, in the order they first gathered one in this pass.
    private var waiting: [any BatchedFrameWriter] = []
    /// The list the last pass wrote, emptied with its room kept: the two take turns, so a pass that
    /// writes does not allocate a list (an idle server's passes each answer a heartbeat or two).
    private var written: [any BatchedFrameWriter] = []

    /// Must be called on the loop's thread.
    package init(loop: RunLoop, modes: [RunLoop.Mode]) {
        self.loop = loop
        self.modes = modes
    }

    /// How many links have frames waiting for the end of this pass.
    package var waitingLinks: Int { waiting.count }

    /// How many links the lists hold room for between passes (for tests).
    package var listRoom: Int { waiting.capacity + written.capacity }

    /// `link` gathered its first frame of this pass: it writes when the pass's work is done.
    package func enlist(_ link: any BatchedFrameWriter) {
        waiting.append(link)
        guard waiting.count == 1 else { return }
        do {
            // The loop's own thread by construction: every link is confined to it.
            try loop.performFromLoopThread(inModes: modes, label: "im.link writes") { [self] in writeAll() }
        } catch {
            // A loop torn down runs no block: the frames go now, or never would.
            writeAll()
        }
    }

    /// Each waiting link writes; a link that gathers again meanwhile (a write that ended a session and
    /// told another) waits for the next pass.
    private func writeAll() {
        var links = waiting
        waiting = written
        written = []
        for link in links { link.writeGatheredFrames() }
        // A crowd's pass (thousands of links) gives its room back. Not RunLoopKit's
        // `removeAll(keepingCapacityUpTo:)`: unspecialized across the module, it cost 5,000
        // instructions a pass here.
        if links.capacity > Self.keptRoom { links = [] } else { links.removeAll(keepingCapacity: true) }
        written = links
    }

    /// The most links a list keeps room for between passes.
    package static let keptRoom = 1_024
}
