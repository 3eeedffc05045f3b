import ArgumentParser
import Glibc

/// Where `account add` and `account passwd` get a password: a line of standard input, or at a
/// terminal typed twice without echo (a typo would otherwise lock the user out).
enum PasswordInput {
    static func read() throws -> String {
        guard isatty(STDIN_FILENO) == 1 else {
            guard let password = readLine(strippingNewline: true), !password.isEmpty else {
                throw ValidationError("no password on standard input")
            }
            return password
        }
        let first = try ask("New password: ")
        guard !first.isEmpty else { throw ValidationError("empty password") }
        guard try ask("Again: ") == first else { throw ValidationError("the passwords differ") }
        return first
    }

    /// One line from the terminal with its echo off, the prompt on standard error.
    private static func ask(_ prompt: String) throws -> String {
        _ = prompt.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            printError("")
        }
        guard let line = readLine(strippingNewline: true) else { throw ValidationError("no password typed") }
        return line
    }
}
