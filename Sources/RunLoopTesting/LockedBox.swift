import Glibc

/// A value shared between a loop thread and helper threads, behind a mutex.
public final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var value: Value
    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(&mutex, nil)
    }
    public func set(_ newValue: Value) {
        pthread_mutex_lock(&mutex)
        value = newValue
        pthread_mutex_unlock(&mutex)
    }
    public func update(_ change: (inout Value) -> Void) {
        pthread_mutex_lock(&mutex)
        change(&value)
        pthread_mutex_unlock(&mutex)
    }
    public func get() -> Value {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return value
    }
}
