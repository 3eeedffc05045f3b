public import RunLoopIM
import RunLoopIMCore

extension IMLoginVerdict {
    /// The right password for a disabled account. `authenticationFailed`, which every client already
    /// takes as final (it does not retry), with a reason people can read; the code stays the one older
    /// clients know.
    public static let accountDisabled = IMLoginVerdict.refused(.authenticationFailed, reason: "account disabled")
}
