import COpenSSL

/// OpenSSL's thread-local error queue, read once per failure and left empty, so a failure is never
/// blamed on an error an earlier call left behind.
enum OpenSSLErrorQueue {
    /// The first error queued (the cause; later ones are its consequences), then clears the queue.
    static func takeFirst() -> (reason: Int32, text: String) {
        let code = ERR_peek_error()
        ERR_clear_error()
        guard code != 0 else { return (0, "no reason given") }
        let text = ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)"
        return (ERR_GET_REASON(code), text)
    }

    /// Empties the queue before an operation whose failure will be read from it.
    static func clear() {
        ERR_clear_error()
    }
}
