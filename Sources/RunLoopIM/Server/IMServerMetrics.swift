import CoreMetrics
import RunLoopIMCore
import RunLoopKit

/// What an ``IMServer`` counts, through swift-metrics only (the process picks the backend): the
/// metric objects are made once, when the server is, so counting an event allocates nothing.
///
/// | metric | kind | labels |
/// | --- | --- | --- |
/// | `im_sessions` | gauge (meter) | `transport`: tcp, websocket, other — logged-in sessions |
/// | `im_logins_total` | counter | `result`: ok, failed, limited, other |
/// | `im_messages_stored_total` | counter | — (new messages; a resend is not counted again) |
/// | `im_messages_delivered_total` | counter | — (DELIVER frames written, live and from inboxes) |
/// | `im_messages_refused_total` | counter | `reason`: the SEND_ACK's status code |
/// | `im_deliveries_unacknowledged` | gauge (meter) | — DELIVERs written and not yet acknowledged |
/// | `im_store_call_duration_seconds` | timer | `call`: store, inbox, login, abandon, admission, audience |
///
/// Loop thread only, like its server.
final class IMServerMetrics {
    /// How a LOGIN ended, for `im_logins_total`.
    enum LoginResult: String, CaseIterable {
        case ok
        /// Unknown user or wrong password.
        case failed
        /// Refused by a limit: too many logins in progress, too many sessions of the user.
        case limited
        /// Refused for another reason: a bad request, a storage failure, the server stopping.
        case other

        init(refusal code: IMStatusCode) {
            switch code {
            case .authenticationFailed: self = .failed
            case .rateLimited, .tooManyConnections: self = .limited
            default: self = .other
            }
        }
    }

    /// What a store call asked, for `im_store_call_duration_seconds`.
    enum StoreCall: String, CaseIterable {
        case store, inbox, login, abandon, admission, audience
    }

    private let factory: any MetricsFactory
    private let sessions: [IMLinkTransport: Meter]
    private let logins: [LoginResult: Counter]
    private let messagesStored: Counter
    private let messagesDelivered: Counter
    private let unacknowledged: Meter
    private let storeCalls: [StoreCall: CoreMetrics.Timer]
    /// Made at a code's first refusal: most codes never refuse a SEND.
    private var refused: [IMStatusCode: Counter] = [:]

    init(factory: any MetricsFactory) {
        self.factory = factory
        sessions = Dictionary(
            uniqueKeysWithValues: IMLinkTransport.allCases.map {
                ($0, Meter(label: "im_sessions", dimensions: [("transport", $0.rawValue)], factory: factory))
            })
        logins = Dictionary(
            uniqueKeysWithValues: LoginResult.allCases.map {
                ($0, Counter(label: "im_logins_total", dimensions: [("result", $0.rawValue)], factory: factory))
            })
        messagesStored = Counter(label: "im_messages_stored_total", dimensions: [], factory: factory)
        messagesDelivered = Counter(label: "im_messages_delivered_total", dimensions: [], factory: factory)
        unacknowledged = Meter(label: "im_deliveries_unacknowledged", dimensions: [], factory: factory)
        storeCalls = Dictionary(
            uniqueKeysWithValues: StoreCall.allCases.map {
                ($0, CoreMetrics.Timer(label: "im_store_call_duration_seconds", dimensions: [("call", $0.rawValue)], factory: factory))
            })
    }

    func sessionOnline(on transport: IMLinkTransport) {
        sessions[transport]?.increment()
        logins[.ok]?.increment()
    }

    func sessionOffline(on transport: IMLinkTransport) { sessions[transport]?.decrement() }

    func loginRefused(_ code: IMStatusCode) { logins[LoginResult(refusal: code)]?.increment() }

    func messageStored() { messagesStored.increment() }

    func sendRefused(_ code: IMStatusCode) {
        if let counter = refused[code] { return counter.increment() }
        let counter = Counter(label: "im_messages_refused_total", dimensions: [("reason", code.metricLabel)], factory: factory)
        refused[code] = counter
        counter.increment()
    }

    func messageDelivered() { messagesDelivered.increment() }

    /// DELIVERs awaiting acknowledgement changed by `delta`: sent (a resend of one already out adds
    /// nothing), acknowledged, or dropped with their session (they stay in the inbox).
    func unacknowledgedChanged(by delta: Int) {
        if delta > 0 { unacknowledged.increment(by: Double(delta)) } else if delta < 0 { unacknowledged.decrement(by: Double(-delta)) }
    }

    func storeCallAnswered(_ call: StoreCall, after duration: Duration) {
        storeCalls[call]?.recordSeconds(duration.secondsDouble)
    }
}

extension IMStatusCode {
    /// The code's name as a label value: `rate_limited`, `unknown_recipient`, …
    var metricLabel: String {
        description.replacingSpaces(with: "_")
    }
}

extension String {
    fileprivate func replacingSpaces(with replacement: Character) -> String {
        String(map { $0 == " " ? replacement : $0 })
    }
}
