import Glibc
import RunLoopTesting
import Testing

/// `descriptor(in:sharingFileWith:)`: what `ServerProcess` uses to tell a stolen standard error
/// from a server that printed the wrong line.
@Suite struct StandardDescriptorCheckTests {
    private func makePipe() -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    @Test("a pipe's other end, or a copy of it, is found; another pipe and closed numbers are not")
    func findsTheSameFile() {
        let first = makePipe()
        let second = makePipe()
        let copy = dup(first.read)
        defer { for fd in [first.read, first.write, second.read, second.write, copy] { close(fd) } }
        #expect(descriptor(in: [second.read, second.write, first.write], sharingFileWith: first.read) == first.write)
        #expect(descriptor(in: [copy], sharingFileWith: first.write) == copy)
        #expect(descriptor(in: [second.read, second.write], sharingFileWith: first.read) == nil)
        #expect(descriptor(in: [first.read], sharingFileWith: first.read) == nil, "a descriptor is not its own culprit")
        let closed = makePipe()
        close(closed.read)
        close(closed.write)
        #expect(descriptor(in: [closed.read], sharingFileWith: first.read) == nil)
        #expect(descriptor(in: [first.read], sharingFileWith: closed.write) == nil)
    }

    @Test("this test process's standard descriptors are none of a fresh pipe's ends")
    func standardDescriptorsAreIntact() {
        let fresh = makePipe()
        defer { close(fresh.read); close(fresh.write) }
        #expect(fresh.read > 2 && fresh.write > 2)
        #expect(descriptor(in: 0...2, sharingFileWith: fresh.read) == nil)
    }
}
