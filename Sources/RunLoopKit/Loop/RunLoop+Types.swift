extension RunLoop {
    /// A run-loop mode: a named set of timers, sources and observers. Items are only serviced while
    /// the loop runs one of their modes.
    ///
    /// Modes are compared by name. The names of ``default`` and ``common`` match CFRunLoop's.
    public struct Mode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ name: String) { self.rawValue = name }
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The mode `run()` uses, and the one every new loop starts with.
        public static let `default` = Mode("kCFRunLoopDefaultMode")
        /// The common-modes pseudo-mode. Adding an item to it adds the item to every mode in the loop's
        /// common set, now and later (see ``RunLoop/addCommonMode(_:)``). It cannot be run.
        public static let common = Mode("kCFRunLoopCommonModes")

        public var description: String { rawValue }

        /// `perform`'s default mode list, made once: an array literal as the default argument is a new
        /// array buffer per call, the largest part of a cross-thread `perform`'s allocations.
        @usableFromInline static let defaultOnly: [Mode] = [.default]
    }

    /// What a single activation (``RunLoop/run(_:timeout:returnAfterSourceHandled:)``) ended with.
    /// Raw values are CFRunLoopRunResult's.
    public enum RunResult: Int32, Sendable, CustomStringConvertible {
        /// The mode had nothing to service (no sources, timers or matching blocks): observers alone
        /// do not keep a mode alive.
        case finished = 1
        /// ``RunLoop/stop()`` ended the activation.
        case stopped = 2
        /// The timeout passed (every poll that did not handle a source ends this way).
        case timedOut = 3
        /// `returnAfterSourceHandled` was set and a source was performed. Timers never count.
        case handledSource = 4

        public var description: String {
            switch self {
            case .finished: return "finished"
            case .stopped: return "stopped"
            case .timedOut: return "timedOut"
            case .handledSource: return "handledSource"
            }
        }
    }

    /// The points in an iteration that observers can watch. Bit values are CFRunLoopActivity's.
    public struct Activity: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Once per activation, before anything else.
        public static let entry = Activity(rawValue: 1 << 0)
        /// At the start of every iteration, whether or not a timer is due.
        public static let beforeTimers = Activity(rawValue: 1 << 1)
        /// Right after ``beforeTimers``, every iteration.
        public static let beforeSources = Activity(rawValue: 1 << 2)
        /// Only in iterations that really block.
        public static let beforeWaiting = Activity(rawValue: 1 << 5)
        /// Right after a blocking wait, before its cause (timer, port) is handled.
        public static let afterWaiting = Activity(rawValue: 1 << 6)
        /// Once per activation, whatever its result.
        public static let exit = Activity(rawValue: 1 << 7)
        public static let allActivities = Activity(rawValue: 0x0FFF_FFFF)

        public var description: String {
            let names: [(Activity, String)] = [
                (.entry, "entry"), (.beforeTimers, "beforeTimers"), (.beforeSources, "beforeSources"),
                (.beforeWaiting, "beforeWaiting"), (.afterWaiting, "afterWaiting"), (.exit, "exit")
            ]
            if self == .allActivities { return "allActivities" }
            let parts = names.filter { contains($0.0) }.map(\.1)
            return parts.isEmpty ? "[]" : parts.joined(separator: "|")
        }
    }
}

/// Which readiness a port source waits for, and which readiness woke it.
public struct PortEvents: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// Data to read, a pending accept, end of file, or an error (epoll reports errors as readable).
    public static let readable = PortEvents(rawValue: 0x02)
    /// Room to write, or an error.
    public static let writable = PortEvents(rawValue: 0x04)

    public var description: String {
        switch self {
        case [.readable, .writable]: return "readable|writable"
        case .readable: return "readable"
        case .writable: return "writable"
        default: return "[]"
        }
    }
}
