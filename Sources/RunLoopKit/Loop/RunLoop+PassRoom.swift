extension RunLoop {
    /// The room, in port sources, of the loop's table of those added to ``Mode/common``: a crowd's
    /// connections' (19,000) goes back once they have gone. For tests; any thread.
    package var commonPortRoom: Int {
        lock.withLock { commonItems.ports.capacity }
    }

    /// The room, in blocks, that the loop keeps between passes for queued blocks (its queue and its
    /// spare list): at most what a busy pass needs, not a crowd's burst. For tests; any thread.
    package var blockRoom: Int {
        lock.withLock { blocks.capacity + blockScratch.capacity }
    }
}
