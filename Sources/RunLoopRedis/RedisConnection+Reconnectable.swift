public import RunLoopNet

/// A ``RedisConnection`` that a `ReconnectingLink` keeps up, ending with a ``RedisError``.
extension RedisConnection: ReconnectableConnection {}
