extension Duration {
    /// The duration in seconds, as a `Double` (timeouts, latency figures).
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
