public import Glibc
public import RunLoopKit

/// Standard input and output for ``TerminalClient``: lines in, lines out.
///
/// Two modes:
/// - **line mode** (input or output is not a terminal: a pipe, a file, a test): input is split into
///   lines; each output line is written as is with a newline. No prompt, no escape codes.
/// - **interactive** (both are terminals): the terminal is put in non-canonical mode without echo and
///   a ``TerminalLineEditor`` keeps the line being typed under a prompt; an output line is written
///   above it and the prompt and half-typed line are drawn again. ``restore()`` puts the terminal back
///   as it was (call it before exiting, also after a signal).
///
/// Threads: the loop's thread only.
public final class TerminalConsole {
    public let isInteractive: Bool
    public let inputDescriptor: Int32
    public let outputDescriptor: Int32
    /// The prompt to draw (interactive only); read at every redraw.
    public var prompt: () -> String = { "> " }

    private var input: TerminalInput?
    private var splitter = LineSplitter()
    private var editor = TerminalLineEditor()
    private var savedTerminal: termios?

    /// - Parameter interactive: `nil` decides by `isatty` on both descriptors.
    public init(input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO, interactive: Bool? = nil) {
        inputDescriptor = input
        outputDescriptor = output
        isInteractive = interactive ?? (isatty(input) == 1 && isatty(output) == 1)
    }

    deinit { restore() }

    /// Starts reading on `loop`: complete lines go to `onLine`, the end of input (end of file, or Ctrl-D
    /// on an empty line) to `onEnd` once, Ctrl-C read as a byte to `onInterrupt`.
    /// - Throws: ``RunLoopError`` when the input descriptor cannot be watched.
    public func start(
        loop: RunLoop = .current, onLine: @escaping (String) -> Void, onEnd: @escaping () -> Void,
        onInterrupt: @escaping () -> Void
    ) throws(RunLoopError) {
        if isInteractive { enterRawMode() }
        var ended = false
        let end = {
            guard !ended else { return }
            ended = true
            onEnd()
        }
        input = try TerminalInput(
            fileDescriptor: inputDescriptor, loop: loop,
            onBytes: { [weak self] bytes in
                guard let self else { return }
                if self.isInteractive {
                    self.typed(bytes, onLine: onLine, onEnd: end, onInterrupt: onInterrupt)
                } else {
                    for line in self.splitter.append(bytes) { onLine(line) }
                }
            },
            onEnd: { [weak self] in
                if let last = self?.splitter.finish() { onLine(last) }
                end()
            })
        if isInteractive { write(editor.render(prompt: prompt())) }
    }

    /// Shows one line of output (above the line being typed, in interactive mode).
    public func show(_ line: String) {
        if isInteractive {
            write(TerminalLineEditor.clearRow + line + "\n" + editor.render(prompt: prompt()))
        } else {
            write(line + "\n")
        }
    }

    /// Stops reading input and, in interactive mode, clears the prompt row.
    public func stopReading() {
        input?.invalidate()
        input = nil
        if isInteractive, savedTerminal != nil { write(TerminalLineEditor.clearRow) }
    }

    /// Puts the terminal back in the mode it had before ``start(loop:onLine:onEnd:onInterrupt:)``. Idempotent.
    public func restore() {
        guard var saved = savedTerminal else { return }
        savedTerminal = nil
        tcsetattr(inputDescriptor, TCSADRAIN, &saved)
    }

    private func typed(_ bytes: [UInt8], onLine: (String) -> Void, onEnd: () -> Void, onInterrupt: () -> Void) {
        for event in editor.feed(bytes) {
            switch event {
            case .changed:
                write(editor.render(prompt: prompt()))
            case .line(let line):
                // The typed line stays on screen as the record of what was entered. Drawn once more:
                // its last keys may have come in the same read as Enter, and were never drawn.
                write(TerminalLineEditor.clearRow + prompt() + TerminalClient.visible(Substring(line)) + "\n")
                onLine(line)
                write(editor.render(prompt: prompt()))
            case .endOfInput:
                write("\n")
                onEnd()
            case .interrupt:
                onInterrupt()
            }
        }
    }

    private func enterRawMode() {
        var current = termios()
        guard tcgetattr(inputDescriptor, &current) == 0 else { return }
        savedTerminal = current
        // Keys arrive one by one without echo; ISIG stays on so Ctrl-C is still SIGINT (handled as
        // /quit by the command) and Ctrl-Z still suspends. Output processing (\n → \r\n) stays on.
        current.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &current.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(inputDescriptor, TCSADRAIN, &current)
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(outputDescriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return  // the reader is gone (EPIPE): nothing useful left to do with output
            }
            offset += written
        }
    }

    /// Reads a password from the terminal `descriptor` with echo off, after writing `prompt` to
    /// standard error. Returns `nil` when `descriptor` is not a terminal or the input ended.
    /// Blocking: call it before the loop runs, or while the session waits on the person alone (a new
    /// account's password, typed again).
    public static func readPassword(prompt: String, from descriptor: Int32 = STDIN_FILENO) -> String? {
        guard isatty(descriptor) == 1 else { return nil }
        var saved = termios()
        guard tcgetattr(descriptor, &saved) == 0 else { return nil }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        _ = Array(prompt.utf8).withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
        tcsetattr(descriptor, TCSAFLUSH, &quiet)
        defer { tcsetattr(descriptor, TCSAFLUSH, &saved) }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(descriptor, &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
