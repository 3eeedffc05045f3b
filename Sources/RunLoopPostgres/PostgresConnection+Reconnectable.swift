public import RunLoopNet

/// A ``PostgresConnection`` that a `ReconnectingLink` keeps up, ending with a ``PostgresError``.
extension PostgresConnection: ReconnectableConnection {}
