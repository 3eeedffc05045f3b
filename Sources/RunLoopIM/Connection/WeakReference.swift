/// A weak reference held in a `let`: what a callback captures to reach its owner without keeping it
/// alive. A `[weak self]` capture is a mutable box the closure reads with the runtime's exclusivity
/// check on every call; this one is a plain value in the closure's context, read with the weak load
/// alone — the link's callbacks run once per frame read (issue 22).
///
/// Any thread, as a weak reference is; what it refers to keeps its own rules.
package struct WeakReference<Object: AnyObject> {
    package weak var object: Object?

    package init(_ object: Object) {
        self.object = object
    }
}
