public import Glibc

/// Asks a `posix_spawn` child to close every descriptor from `lowest` up before it starts, after the
/// actions already added (so `dup2` onto 0–2 still happens first). Returns false where the C library
/// lacks `posix_spawn_file_actions_addclosefrom_np` (glibc before 2.34).
///
/// Tests run in parallel in one process: a child that inherits another test's pipe or socket without
/// FD_CLOEXEC keeps it open, and that test then waits for an end of file that comes only when the
/// child exits. Glibc's Swift module does not export the function, hence the look-up.
@discardableResult
public func closeInheritedDescriptors(
    from lowest: Int32,
    in actions: UnsafeMutablePointer<posix_spawn_file_actions_t>
) -> Bool {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
        return false
    }
    return unsafeBitCast(symbol, to: CloseFrom.self)(actions, lowest) == 0
}
