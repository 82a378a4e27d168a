import ObservationCore

/// Request latency histograms per route (`GET /v1/objects/{id}`), for `/metrics`.
///
/// Latency runs from the request's first byte being parsed to its answer being queued,
/// so a write's wait for durability is included. One lock guards all histograms; an
/// observation is an array index (the route's number, `RouteLabel`) and a few additions under it.
final class RequestMetrics: Sendable {
    /// Upper bounds in seconds (Prometheus `le`), then +Inf.
    static let bounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5]

    private struct Histogram {
        var buckets = [Int](repeating: 0, count: RequestMetrics.bounds.count + 1)
        var sum = 0.0
        /// Answers per status (a route has a handful: a list beats hashing).
        var statuses: [(status: Int, count: Int)] = []

        mutating func record(bucket: Int, seconds: Double, status: Int) {
            buckets[bucket] += 1
            sum += seconds
            if let index = statuses.firstIndex(where: { $0.status == status }) {
                statuses[index].count += 1
            } else {
                statuses.append((status, 1))
            }
        }
    }

    /// By route number (`RouteLabel.number`): the routes that answered so far have a histogram.
    private let histograms = Locked<[(route: String, histogram: Histogram)?]>([])

    func record(route: RouteLabel, status: Int, seconds: Double) {
        let bucket = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
        histograms.withLock { histograms in
            if route.number >= histograms.count {
                histograms.append(contentsOf: repeatElement(nil, count: route.number + 1 - histograms.count))
            }
            if histograms[route.number] == nil { histograms[route.number] = (route.name, Histogram()) }
            histograms[route.number]?.histogram.record(bucket: bucket, seconds: seconds, status: status)
        }
    }

    /// The histograms and per-status counts in Prometheus text format.
    func render(into text: inout String) {
        let snapshot = histograms.withLock { $0 }.compactMap { $0 }.sorted { $0.route < $1.route }
        text += "# HELP obs_http_request_duration_seconds Time from request to queued answer, per route.\n"
        text += "# TYPE obs_http_request_duration_seconds histogram\n"
        for (route, histogram) in snapshot {
            let label = Self.escape(route)
            var cumulative = 0
            for (index, count) in histogram.buckets.enumerated() {
                cumulative += count
                let bound = index < Self.bounds.count ? "\(Self.bounds[index])" : "+Inf"
                text += "obs_http_request_duration_seconds_bucket{route=\"\(label)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            text += "obs_http_request_duration_seconds_sum{route=\"\(label)\"} \(histogram.sum)\n"
            text += "obs_http_request_duration_seconds_count{route=\"\(label)\"} \(cumulative)\n"
        }
        text += "# HELP obs_http_responses_total Answers per route and status.\n"
        text += "# TYPE obs_http_responses_total counter\n"
        for (route, histogram) in snapshot {
            for (status, count) in histogram.statuses.sorted(by: { $0.status < $1.status }) {
                text += "obs_http_responses_total{route=\"\(Self.escape(route))\",status=\"\(status)\"} \(count)\n"
            }
        }
    }

    /// Escapes a label value (backslash, quote, newline).
    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
