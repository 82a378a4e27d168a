import Foundation

/// A point in wall-clock time, kept as milliseconds since 1970 and shown in RFC 3339 UTC.
public struct Timestamp: Sendable, Hashable, Comparable {
    public let milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// The current wall-clock time.
    public static func now() -> Timestamp {
        Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded()))
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// `2026-11-22T05:03:51.123Z`.
    public var rfc3339: String {
        let (days, msOfDay) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let (y, m, d) = Self.civil(fromDays: msOfDay < 0 ? days - 1 : days)
        let ms = msOfDay < 0 ? msOfDay + 86_400_000 : msOfDay
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(ms / 3_600_000, 2)):\(pad(ms / 60_000 % 60, 2)):"
            + "\(pad(ms / 1000 % 60, 2)).\(pad(ms % 1000, 3))Z"
    }

    /// Howard Hinnant's days-from-civil inverse: a day count since 1970-01-01 to (year, month, day).
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
