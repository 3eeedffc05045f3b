#if canImport(Glibc)
import Glibc
#endif

/// One receive buffer per thread, shared by every connection whose loop runs there, one spare
/// array for the bytes a read hands on, and one for what a reader above makes of them (an IM link's
/// frame bodies).
///
/// A read pass needs `readChunkSize` bytes (64 KiB by default) only while it copies from the socket
/// into the connection's input, and `withUnsafeTemporaryAllocation` puts a buffer that large on the
/// heap: a `malloc` and a `free` per read. A thread runs one read pass at a time and nothing calls out
/// of one (the bytes are delivered after the buffer is let go), so the buffer is never in use twice.
/// It is freed when the thread ends.
package enum ReadScratch {
    static func withBuffer<Result>(byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
        let holder: ScratchBuffer
        if let pointer = pthread_getspecific(scratchKey) {
            holder = Unmanaged<ScratchBuffer>.fromOpaque(pointer).takeUnretainedValue()
        } else {
            holder = ScratchBuffer()
            pthread_setspecific(scratchKey, Unmanaged.passRetained(holder).toOpaque())
        }
        return body(holder.buffer(byteCount))
    }

    /// An empty array for a connection's input, with the room of the last one given back on this
    /// thread (none if none was).
    ///
    /// A connection used to keep the array its owner handed back after each delivery, so the next read
    /// appended without allocating: an idle connection kept a buffer for ever. One spare per thread
    /// keeps the next read free of allocations just as well, and no idle connection holds any.
    static func takeSpare() -> [UInt8] {
        guard let holder = existingHolder else { return [] }
        var spare: [UInt8] = []
        swap(&spare, &holder.spare)
        return spare
    }

    /// Keeps `bytes`' storage, emptied, as the thread's spare (if it has more room than the spare
    /// kept); `bytes` is left empty. A shared array is copied on the emptying, not changed.
    static func giveBack(_ bytes: inout [UInt8]) {
        guard let holder = existingHolder, bytes.capacity > holder.spare.capacity else {
            bytes = []
            return
        }
        bytes.removeAll(keepingCapacity: true)
        swap(&bytes, &holder.spare)
        bytes = []
    }

    /// Bodies kept between frames at most: a larger one (a burst's history page) goes, and one
    /// still shared when the next frame empties it is copied at no more than this size.
    private static let bodyLimit = 4 * 1024

    /// The thread's spare frame body (empty, with the room of the last one kept), for
    /// `FrameDecoder.nextEvent(bodyStorage:)`; an empty array on a thread that never read.
    ///
    /// A frame's body used to be a new array per frame, freed once the frame was handled: some 400
    /// instructions of a presence notice's frame (issue 22, IM-RESULTS "cread"). One spare per
    /// thread, like the input's, and none per connection: an idle connection holds no body.
    package static func takeSpareBody() -> [UInt8] {
        guard let holder = existingHolder else { return [] }
        var body: [UInt8] = []
        swap(&body, &holder.spareBody)
        return body
    }

    /// Keeps `body`'s storage as the thread's spare body (up to ``bodyLimit`` of room); `body` is
    /// left empty. Not emptied here: the next frame empties it, so a body its receiver kept is
    /// copied only if another frame comes.
    package static func keepSpareBody(_ body: inout [UInt8]) {
        guard body.capacity > 0, body.capacity <= bodyLimit, let holder = existingHolder else {
            body = []
            return
        }
        swap(&body, &holder.spareBody)
        body = []
    }

    /// The thread's holder, if a read made it (threads that never read keep no spare).
    private static var existingHolder: ScratchBuffer? {
        pthread_getspecific(scratchKey).map { Unmanaged<ScratchBuffer>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// The thread's buffer, grown to the largest chunk asked for.
private final class ScratchBuffer {
    private var storage = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    var spare: [UInt8] = []
    var spareBody: [UInt8] = []

    func buffer(_ byteCount: Int) -> UnsafeMutableRawBufferPointer {
        if storage.count < byteCount {
            storage.deallocate()
            storage = .allocate(byteCount: byteCount, alignment: 16)
        }
        return UnsafeMutableRawBufferPointer(rebasing: storage[..<byteCount])
    }

    deinit { storage.deallocate() }
}

private let scratchKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { pointer in
        guard let pointer else { return }
        Unmanaged<ScratchBuffer>.fromOpaque(pointer).release()
    }
    precondition(status == 0, "RunLoopNet: pthread_key_create failed")
    return key
}()
