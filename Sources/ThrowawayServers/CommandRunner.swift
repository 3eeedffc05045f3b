import Glibc

/// What a finished command printed and how it ended.
public struct CommandResult: Sendable {
    /// The exit status, or 128 + signal number if a signal ended it.
    public var status: Int32
    /// What it wrote to its standard output.
    public var output: String
    /// What it wrote to its standard error.
    public var errorOutput: String
}

/// A command that could not be started, or that failed.
public struct CommandError: Error, CustomStringConvertible {
    /// The command and its arguments.
    public var command: [String]
    /// What went wrong, for people.
    public var detail: String

    /// A failure of `command` (or of a step that stands in for one), with `detail` for people.
    public init(command: [String], detail: String) {
        self.command = command
        self.detail = detail
    }

    public var description: String { "`\(command.joined(separator: " "))` \(detail)" }
}

/// Runs `arguments[0]` (an absolute path) with posix_spawn and waits for it, collecting stdout and
/// stderr. No shell, no Foundation: nothing here spins a run loop or touches signal handlers, so it is
/// safe on a RunLoopKit loop thread (the loop just does not run meanwhile).
///
/// The child starts with no signal blocked and default dispositions: the caller may be a Swift
/// concurrency thread, which blocks every signal, and children inherit the mask.
public func runCommand(_ arguments: [String]) throws(CommandError) -> CommandResult {
    var outputPipe: [Int32] = [-1, -1]
    var errorPipe: [Int32] = [-1, -1]
    // Glibc's Swift module has no pipe2: pipe, then close-on-exec, under a lock so that no concurrent
    // spawn of ours inherits the write ends in between (a child holding them would keep our reads open).
    spawnLock.lock()
    guard pipe(&outputPipe) == 0 else {
        spawnLock.unlock()
        throw CommandError(command: arguments, detail: "pipe: \(errnoText())")
    }
    guard pipe(&errorPipe) == 0 else {
        spawnLock.unlock()
        close(outputPipe[0]); close(outputPipe[1])
        throw CommandError(command: arguments, detail: "pipe: \(errnoText())")
    }
    for fd in outputPipe + errorPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
    posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
    // Whatever else this process has open (other tests' pipes and sockets) stays out of the child.
    closeInheritedDescriptors(from: 3, in: &actions)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var environment: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), strdup("LC_ALL=C"), nil]
    defer { for pointer in environment { free(pointer) } }

    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, &environment)
    spawnLock.unlock()
    close(outputPipe[1])
    close(errorPipe[1])
    defer { close(outputPipe[0]); close(errorPipe[0]) }
    guard spawned == 0 else {
        throw CommandError(command: arguments, detail: "could not start: \(String(cString: strerror(spawned)))")
    }

    // Drain both pipes together: a child blocked on a full stderr pipe would never exit.
    var output: [UInt8] = []
    var errorOutput: [UInt8] = []
    var open = [true, true]
    var buffer = [UInt8](repeating: 0, count: 4096)
    while open[0] || open[1] {
        var fds = [
            pollfd(fd: open[0] ? outputPipe[0] : -1, events: Int16(POLLIN), revents: 0),
            pollfd(fd: open[1] ? errorPipe[0] : -1, events: Int16(POLLIN), revents: 0)
        ]
        if poll(&fds, 2, -1) < 0 {
            if errno == EINTR { continue }
            break
        }
        for index in 0..<2 where open[index] && fds[index].revents != 0 {
            let count = read(fds[index].fd, &buffer, buffer.count)
            if count > 0 {
                if index == 0 { output += buffer[0..<count] } else { errorOutput += buffer[0..<count] }
            } else if count == 0 || errno != EINTR {
                open[index] = false
            }
        }
    }

    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw CommandError(command: arguments, detail: "waitpid: \(errnoText())") }
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
    let signal = status & 0x7F
    let exitStatus = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    return CommandResult(
        status: exitStatus,
        output: String(decoding: output, as: UTF8.self),
        errorOutput: String(decoding: errorOutput, as: UTF8.self))
}

private let spawnLock = SpawnLock()

private final class SpawnLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    func lock() { pthread_mutex_lock(&mutex) }
    func unlock() { pthread_mutex_unlock(&mutex) }
}

private func errnoText() -> String { String(cString: strerror(errno)) }
