/// One reading of both clocks: monotonic for deadlines (leases), wall-clock for display.
public struct Moment: Sendable {
    public let instant: ContinuousClock.Instant
    public let wall: Timestamp

    public static func now() -> Moment { Moment(instant: .now, wall: .now()) }

    /// The wall-clock time of a monotonic deadline.
    func wall(at deadline: ContinuousClock.Instant) -> Timestamp {
        let (seconds, attoseconds) = (deadline - instant).components
        return Timestamp(milliseconds: wall.milliseconds + seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

/// Random hex ids and tokens.
enum RandomID {
    static func make(_ prefix: String, bytes: Int = 8) -> String {
        var generator = SystemRandomNumberGenerator()
        var text = prefix
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255, using: &generator)
            text += String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
        }
        return text
    }
}
