import Glibc

extension Duration {
    /// The duration in seconds, as a `Double` (timeouts, latency figures).
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// Nanoseconds on `ContinuousClock`'s clock (`CLOCK_BOOTTIME`), as one integer: what every
/// request reads (its latency, the last request's time). `ContinuousClock.now` minus an
/// instant is a `Duration`, whose `components` cost 128-bit divisions, four times a request.
enum BootClock {
    static var nanoseconds: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Seconds from `start` (a `nanoseconds` reading) to now.
    static func seconds(since start: Int64) -> Double { Double(nanoseconds - start) / 1e9 }
}

/// Sleeps the calling thread (the cluster's threads and the committer, never an HTTP worker).
func sleepThread(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    nanosleep(&time, nil)
}
