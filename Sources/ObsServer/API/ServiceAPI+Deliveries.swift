import Foundation
import ObservationCore

extension ServiceAPI {
    /// `delivery` of an observer this server does not deliver now (a cluster node that is not
    /// the keeper, or one just made): no attempt out.
    static let idleDelivery: JSONObject = [
        "state": "idle", "attempts": 0, "lastStatus": nil, "lastError": nil, "nextAttemptAt": nil,
    ]

    /// An observer's view with its `delivery` completed by what this server's deliverer knows now
    /// (state, attempts, errors) over the stored cursor; unchanged for an observer that does not deliver.
    func withLiveDelivery(_ members: JSONObject, of id: String) -> JSONObject {
        guard case .object(var delivery)? = members["delivery"] else { return members }
        for (key, value) in webhooks.status(of: id) ?? Self.idleDelivery { delivery[key] = value }
        var members = members
        members["delivery"] = .object(delivery)
        return members
    }

    /// `deliver` of `POST /v1/observers` (section 16) checked here, where `--webhook-hosts` is
    /// known: an `http` or `https` URL whose host and port the list allows, and a `whsec_` secret
    /// (one is made when none is given). The ranges of `maxBatch` and `timeout` are checked as
    /// the command applies. Returns what the command carries.
    func deliveryRequest(_ json: JSON?) throws -> JSON? {
        guard let json, json != .null else { return nil }
        guard case .object(let members) = json else { throw Self.deliveryError("deliver is an object", "deliver") }
        for key in members.keys where !["url", "secret", "maxBatch", "timeout"].contains(key) {
            throw Self.deliveryError("deliver has no member '\(key)'", "deliver.\(key)")
        }
        guard case .string(let url)? = members["url"] else {
            throw Self.deliveryError("deliver.url is required: an http or https URL", "deliver.url")
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { throw Self.deliveryError("deliver.url must be an http or https URL with a host", "deliver.url") }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        guard webhookHosts.permits(host: host, port: port) else {
            throw Self.deliveryError(
                "deliver.url: \(host):\(port) is not allowed by --webhook-hosts", "deliver.url")
        }
        var target = members
        switch members["secret"] {
        case nil, .null?:
            target["secret"] = .string(WebhookSignature.newSecret())
        case .string(let secret)? where WebhookSignature.key(of: secret) != nil:
            break
        default:
            throw Self.deliveryError(
                "deliver.secret must be whsec_ followed by the base64 of 24 to 64 bytes", "deliver.secret")
        }
        return .object(target)
    }

    private static func deliveryError(_ message: String, _ field: String) -> CoreError {
        CoreError(.invalidRequest, message, details: ["field": .string(field)])
    }
}

extension ServiceAPI {
    /// Section 16's figures in `/metrics`: deliveries by outcome, events acknowledged, the backlog.
    func webhookMetrics(into text: inout String) {
        let figures = webhooks.figures
        text += """
            # HELP obs_webhook_deliveries_total Delivery attempts by outcome: delivered (2xx), rejected (another \
            status), failed (no answer: timeout, refused or closed connection, address not allowed).
            # TYPE obs_webhook_deliveries_total counter
            obs_webhook_deliveries_total{outcome="delivered"} \(figures.delivered)
            obs_webhook_deliveries_total{outcome="rejected"} \(figures.rejected)
            obs_webhook_deliveries_total{outcome="failed"} \(figures.failed)
            # HELP obs_webhook_events_acknowledged_total Events whose batch a receiver acknowledged.
            # TYPE obs_webhook_events_acknowledged_total counter
            obs_webhook_events_acknowledged_total \(figures.eventsAcknowledged)
            # HELP obs_webhook_backlog Events waiting to be acknowledged, over the observers this node delivers.
            # TYPE obs_webhook_backlog gauge
            obs_webhook_backlog \(webhooks.backlog)
            # HELP obs_webhook_observers Delivering observers this node delivers now.
            # TYPE obs_webhook_observers gauge
            obs_webhook_observers \(webhooks.count)
            # HELP obs_webhook_active 1 while this node delivers (always on one server; the keeper on a cluster).
            # TYPE obs_webhook_active gauge
            obs_webhook_active \(webhooks.isActive ? 1 : 0)

            """
    }
}
