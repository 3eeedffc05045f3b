// The throw-away servers moved to a target of their own so that `chat-node demo --cluster` can start
// them without linking Testing and XCTest; re-exported, every test that found them here still does.
@_exported public import ThrowawayServers
