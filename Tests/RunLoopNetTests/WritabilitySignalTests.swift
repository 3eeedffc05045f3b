import Testing

@testable import RunLoopNet

/// Backpressure's hysteresis on its own: lost above the high water mark, back at or below the low
/// one, each change told once.
@Suite struct WritabilitySignalTests {
    let limits = TCPBufferLimits(writeHighWaterMark: 100, writeLowWaterMark: 10)

    @Test func writabilityIsLostAboveTheHighMarkAndComesBackAtTheLowMark() {
        var signal = WritabilitySignal()
        let atHigh = signal.update(queuedBytes: 100, limits: limits)
        #expect(!atHigh && signal.isWritable, "at the mark is not past it")
        let pastHigh = signal.update(queuedBytes: 101, limits: limits)
        #expect(pastHigh && !signal.isWritable)
        #expect(signal.nextReport() == false)
        let between = signal.update(queuedBytes: 11, limits: limits)
        #expect(!between && !signal.isWritable, "between the marks nothing changes")
        let atLow = signal.update(queuedBytes: 10, limits: limits)
        #expect(atLow && signal.isWritable)
        #expect(signal.nextReport() == true)
        #expect(signal.nextReport() == nil, "told once")
    }

    @Test func aChangeUndoneBeforeItWasToldIsNeverTold() {
        var signal = WritabilitySignal()
        _ = signal.update(queuedBytes: 500, limits: limits)
        let drained = signal.update(queuedBytes: 0, limits: limits)
        #expect(!drained)
        #expect(signal.nextReport() == nil)
    }
}
