/// What became of one message id its sender gave up on (ABANDON): stored after all, with its `seq`,
/// or not stored — and then refused forever after. An ``IMServerStore`` answers one per id.
public struct IMAbandonOutcome: Hashable, Sendable {
    public var id: String
    /// The `seq` it was stored under; `nil`: it was not stored and never will be.
    public var storedSeq: UInt64?

    public init(id: String, storedSeq: UInt64?) {
        self.id = id
        self.storedSeq = storedSeq
    }
}
