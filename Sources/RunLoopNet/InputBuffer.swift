/// Input received but not consumed yet, with a consumed-prefix index compacted lazily.
struct InputBuffer {
    private var storage: [UInt8] = []
    private var start = 0

    var count: Int { storage.count - start }
    var isEmpty: Bool { storage.count == start }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start * 2 >= storage.count {
            storage.removeFirst(start)
            start = 0
        }
        storage.append(contentsOf: bytes)
    }

    /// The first `length` bytes, removed.
    mutating func take(_ length: Int) -> [UInt8] {
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

    mutating func removeAll() {
        storage = []
        start = 0
    }
}
