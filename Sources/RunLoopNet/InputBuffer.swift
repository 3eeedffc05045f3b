/// Input received but not consumed yet, with a consumed-prefix index compacted lazily.
struct InputBuffer {
    private var storage: [UInt8] = []
    private var start = 0
    private static let recycleLimit = 64 * 1024

    var count: Int { storage.count - start }
    var isEmpty: Bool { storage.count == start }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start * 2 >= storage.count {
            storage.removeFirst(start)
            start = 0
        }
        storage.append(contentsOf: bytes)
    }

    /// The first `length` bytes, removed. All of them hands over the storage itself (no copy).
    mutating func take(_ length: Int) -> [UInt8] {
        if start == 0 && length == storage.count { return takeAll() }
        let bytes = Array(storage[start..<(start + length)])
        start += length
        if start == storage.count {
            storage.removeAll(keepingCapacity: true)
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

    /// Takes back the storage of an array handed out by `takeAll()` once its receiver is done with it,
    /// so the next arrival is appended without allocating. A receiver that kept the array keeps it
    /// intact: emptying a shared array gives this buffer a fresh one instead (copy on write). Buffers
    /// past one default read chunk are let go, so a burst does not leave a large buffer behind.
    mutating func recycle(_ bytes: inout [UInt8]) {
        guard storage.capacity == 0, bytes.capacity > 0, bytes.capacity <= Self.recycleLimit else { return }
        // Swapped, not copied: a second reference would make the emptying below copy.
        swap(&storage, &bytes)
        storage.removeAll(keepingCapacity: true)
        start = 0
    }

    mutating func removeAll() {
        storage = []
        start = 0
    }
}
