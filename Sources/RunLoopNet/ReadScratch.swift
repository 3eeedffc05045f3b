#if canImport(Glibc)
import Glibc
#endif

/// One receive buffer per thread, shared by every connection whose loop runs there.
///
/// A read pass needs `readChunkSize` bytes (64 KiB by default) only while it copies from the socket
/// into the connection's input, and `withUnsafeTemporaryAllocation` puts a buffer that large on the
/// heap: a `malloc` and a `free` per read. A thread runs one read pass at a time and nothing calls out
/// of one (the bytes are delivered after the buffer is let go), so the buffer is never in use twice.
/// It is freed when the thread ends.
enum ReadScratch {
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
}

/// The thread's buffer, grown to the largest chunk asked for.
private final class ScratchBuffer {
    private var storage = UnsafeMutableRawBufferPointer(start: nil, count: 0)

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
