/// Input received but not consumed yet, with a consumed-prefix index compacted lazily. Empty, it
/// holds no storage: arrays come from and go back to the thread's spare (``ReadScratch``).
struct InputBuffer {
    private var storage: [UInt8] = []
    private var start = 0
    private static let recycleLimit = 64 * 1024

    var count: Int { storage.count - start }
    /// The room the buffer holds (0 while empty).
    var capacity: Int { storage.capacity }
    var isEmpty: Bool { storage.count == start }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start * 2 >= storage.count {
            storage.removeFirst(start)
            start = 0
        }
        if storage.capacity == 0 { storage = ReadScratch.takeSpare() }
        // As typed bytes: appended as raw bytes, they took the standard library's byte-by-byte path
        // (~100 instructions for a 16-byte heartbeat; issue 22, IM-RESULTS "idle9").
        bytes.withMemoryRebound(to: UInt8.self) { storage.append(contentsOf: $0) }
    }

    /// The first `length` bytes, removed. All of them hands over the storage itself (no copy).
    mutating func take(_ length: Int) -> [UInt8] {
        if start == 0 && length == storage.count { return takeAll() }
        let bytes = Array(storage[start..<(start + length)])
        start += length
        if start == storage.count {
            ReadScratch.giveBack(&storage)
            start = 0
        }
        return bytes
    }

    /// Everything, removed; hands over the storage itself when nothing was consumed (no copy).
    mutating func takeAll() -> [UInt8] {
        if start == 0 {
            defer { storage = [] }
            return storage
        }
        return take(count)
    }

    /// The offset (from the first unconsumed byte) just past the first `delimiter` found at or after
    /// `from`, or nil.
    func end(of delimiter: [UInt8], from: Int) -> Int? {
        guard let first = delimiter.first, count >= delimiter.count else { return nil }
        let last = storage.count - delimiter.count
        var index = start + max(0, from)
        while index <= last {
            if storage[index] == first {
                var matched = true
                for k in 1..<delimiter.count where storage[index + k] != delimiter[k] {
                    matched = false
                    break
                }
                if matched { return index + delimiter.count - start }
            }
            index += 1
        }
        return nil
    }

    /// Gives the storage of an array handed out by `takeAll()` back to the thread's spare once its
    /// receiver is done with it, so the next arrival on any connection of the thread is appended
    /// without allocating. A receiver that kept the array keeps it intact (copy on write). Buffers
    /// past one default read chunk are let go, so a burst does not leave a large buffer behind.
    func recycle(_ bytes: inout [UInt8]) {
        guard bytes.capacity > 0, bytes.capacity <= Self.recycleLimit else { return }
        ReadScratch.giveBack(&bytes)
    }

    mutating func removeAll() {
        storage = []
        start = 0
    }
}
