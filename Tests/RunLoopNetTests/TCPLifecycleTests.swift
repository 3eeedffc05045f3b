import RunLoopKit
import Testing

@testable import RunLoopNet

/// TCPConnection's life on its own, without a socket: each stage says only what can be true in it,
/// and the peer's end of input leads where the half-close rules say.
@Suite struct TCPLifecycleTests {
    @Test func aConnectionGoesFromIdleThroughResolvingToConnectedAndStaysClosedOnce() {
        var life = TCPLifecycle.idle(shutdownAsked: false)
        #expect(life.state == .idle && life.closeReason == nil)
        life.startConnecting(resolving: true)
        #expect(life.state == .resolving)
        life.resolved()
        #expect(life.state == .connecting)
        life.established()
        #expect(life.state == .connected)
        #expect(!life.isInputClosed && !life.isOutputClosed && !life.isShutdownAsked)
        let closedFirst = life.close(.closed)
        let closedAgain = life.close(.aborted)
        #expect(closedFirst)
        #expect(!closedAgain, "closed once: the first reason stays")
        #expect(life.state == .closed && life.closeReason == .closed)
    }

    @Test func aShutdownAskedBeforeTheHandshakeWaitsForIt() {
        var life = TCPLifecycle.idle(shutdownAsked: false)
        let asked = life.askShutdown()
        let askedAgain = life.askShutdown()
        #expect(asked)
        #expect(!askedAgain, "asked once")
        life.startConnecting(resolving: false)
        #expect(life.state == .connecting && life.isShutdownAsked && !life.isOutputClosed)
        life.established()
        #expect(life.sides.output == .shutdownAsked)
        life.outputShutDown()
        #expect(life.isOutputClosed && life.isShutdownAsked)
    }

    @Test func noShutdownOnceClosingOrClosed() {
        var closing = TCPLifecycle.connected(.init())
        closing.beginClosing(.closed)
        let askedWhileClosing = closing.askShutdown()
        #expect(!askedWhileClosing)
        #expect(closing.gracefulCloseReason == .closed)
        var closed = TCPLifecycle.connected(.init())
        _ = closed.close(.peerClosed)
        let askedWhenClosed = closed.askShutdown()
        #expect(!askedWhenClosed)
        #expect(closed.gracefulCloseReason == nil)
    }

    @Test func endOfInputWithNothingQueuedAndNoHalfClosureFinishes() {
        var life = TCPLifecycle.connected(.init())
        let lifeVerdict = life.inputEnded(allowsHalfClosure: false, outputEmpty: true)
        #expect(lifeVerdict == .finish)
        #expect(life.isInputClosed)
    }

    @Test func endOfInputWithOutputQueuedClosesGracefully() {
        var life = TCPLifecycle.connected(.init())
        let lifeVerdict = life.inputEnded(allowsHalfClosure: false, outputEmpty: false)
        #expect(lifeVerdict == .closeGracefully)
    }

    @Test func endOfInputWithHalfClosureKeepsWritingUnlessOurOutputIsShutAlready() {
        var open = TCPLifecycle.connected(.init())
        let openVerdict = open.inputEnded(allowsHalfClosure: true, outputEmpty: true)
        #expect(openVerdict == .keepWriting)
        var shut = TCPLifecycle.connected(.init(inputEnded: false, output: .shutDown))
        let shutVerdict = shut.inputEnded(allowsHalfClosure: true, outputEmpty: true)
        #expect(shutVerdict == .finish)
    }

    @Test func theSidesOutliveTheClose() {
        var life = TCPLifecycle.connected(.init())
        life.beginClosing(.closed)
        life.outputShutDown()
        life.markInputEnded()
        _ = life.close(.closed)
        #expect(life.isInputClosed && life.isOutputClosed)
        #expect(life.closeReason == .closed)
    }

    @Test func aDrainedQueueSendsTheHalfCloseAskedForAndClosesIfThePeerIsDoneToo() {
        var open = TCPLifecycle.connected(.init())
        #expect(open.outputDrained() == .init(), "nothing asked: nothing to do")
        var asked = TCPLifecycle.connected(.init(inputEnded: false, output: .shutdownAsked))
        #expect(asked.outputDrained() == .init(shutDownOutput: true))
        #expect(asked.isOutputClosed)
        #expect(asked.outputDrained() == .init(), "shut down once")
        var peerDone = TCPLifecycle.connected(.init(inputEnded: true, output: .shutdownAsked))
        #expect(peerDone.outputDrained() == .init(shutDownOutput: true, finish: .closed))
    }

    @Test func aDrainedQueueMovesAGracefulCloseToTheLingerOrTheEnd() {
        var closing = TCPLifecycle.connected(.init())
        closing.beginClosing(.peerClosed)
        #expect(closing.outputDrained() == .init(shutDownOutput: true, linger: true))
        #expect(closing.outputDrained() == .init(linger: true), "lingering again, no second FIN")
        closing.markInputEnded()
        #expect(closing.outputDrained() == .init(finish: .peerClosed), "the close's own reason")
    }

    @Test func inputIsWatchedWhileReadingAndWhileAGracefulCloseWaitsForThePeer() {
        let connected = TCPLifecycle.connected(.init())
        #expect(connected.watchesInput(ownerPaused: false, bufferFull: false))
        #expect(!connected.watchesInput(ownerPaused: true, bufferFull: false))
        #expect(!connected.watchesInput(ownerPaused: false, bufferFull: true))
        #expect(!TCPLifecycle.connected(.init(inputEnded: true)).watchesInput(ownerPaused: false, bufferFull: false))
        var closing = connected
        closing.beginClosing(.closed)
        #expect(closing.watchesInput(ownerPaused: true, bufferFull: true), "the owner's pause does not hold a close")
        closing.markInputEnded()
        #expect(!closing.watchesInput(ownerPaused: false, bufferFull: false))
        #expect(!TCPLifecycle.connecting(shutdownAsked: false).watchesInput(ownerPaused: false, bufferFull: false))
    }

    @Test func writabilityIsWatchedDuringTheHandshakeAndWhileOutputWaits() {
        #expect(TCPLifecycle.connecting(shutdownAsked: false).watchesOutput(outputWaiting: false))
        #expect(!TCPLifecycle.resolving(shutdownAsked: false).watchesOutput(outputWaiting: true))
        #expect(!TCPLifecycle.connected(.init()).watchesOutput(outputWaiting: false))
        #expect(TCPLifecycle.connected(.init()).watchesOutput(outputWaiting: true))
        #expect(TCPLifecycle.closing(.closed, .init()).watchesOutput(outputWaiting: true))
        #expect(!TCPLifecycle.closed(.closed, .init()).watchesOutput(outputWaiting: true))
    }

    @Test func aCloseAbandonsAnUnopenedConnectionClosesAnOpenOneGracefullyAndMayUpgradeToAReset() {
        #expect(TCPLifecycle.connecting(shutdownAsked: false).closeAsked(immediately: false) == .finish(.closed))
        #expect(TCPLifecycle.idle(shutdownAsked: false).closeAsked(immediately: true) == .finish(.aborted))
        #expect(TCPLifecycle.connected(.init()).closeAsked(immediately: false) == .closeGracefully)
        #expect(TCPLifecycle.connected(.init()).closeAsked(immediately: true) == .finish(.aborted))
        #expect(TCPLifecycle.closing(.closed, .init()).closeAsked(immediately: false) == .nothing)
        #expect(TCPLifecycle.closing(.closed, .init()).closeAsked(immediately: true) == .finish(.aborted))
        #expect(TCPLifecycle.closed(.closed, .init()).closeAsked(immediately: true) == .nothing)
    }
}
