import Glibc
import RunLoopKit
import RunLoopTesting

/// Records what a loop did, as the short tokens docs/BEHAVIOUR.md uses: E BT BS BW AW X for activities,
/// and whatever callouts append ("T:a", "S:b", "B:c", "P:d").
final class Trace: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var storage: [String] = []

    init() { pthread_mutex_init(&mutex, nil) }

    func append(_ token: String) {
        pthread_mutex_lock(&mutex)
        storage.append(token)
        pthread_mutex_unlock(&mutex)
    }

    var events: [String] {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return storage
    }

    func reset() {
        pthread_mutex_lock(&mutex)
        storage.removeAll()
        pthread_mutex_unlock(&mutex)
    }

    /// An observer that records activities, optionally prefixed ("out:E").
    func observer(
        _ activities: RunLoop.Activity = .allActivities, prefix: String = "", order: Int = 0
    ) -> RunLoopObserver {
        RunLoopObserver(activities: activities, order: order) { [self] _, activity in
            append(prefix + Trace.token(activity))
        }
    }

    static func token(_ activity: RunLoop.Activity) -> String {
        ActivityRecorder.Event.token(for: activity)
    }
}

/// Splits a trace literal: "E BT BS X" → ["E", "BT", "BS", "X"].
func tokens(_ text: String) -> [String] {
    text.split(separator: " ").map(String.init)
}
