import ObservationCore

/// Buffers for direct writes, kept for the next: a fresh 16 KiB buffer per write was an
/// aligned `malloc` and a `free` that consolidates glibc's heap, on every event of every
/// stream. A writer takes one for the length of its write; at most `kept` idle ones stay
/// (a few threads write at once: the workers making a request's wakes, and the committer).
///
/// Thread-safety: any thread; a buffer belongs to the one `with` call that took it.
final class ScratchBuffers: Sendable {
    let byteCount: Int
    private let kept: Int
    /// The idle buffers' addresses (each `byteCount` bytes).
    private let idle = Locked<[UInt]>([])

    init(byteCount: Int, kept: Int) {
        self.byteCount = byteCount
        self.kept = kept
    }

    func with<Result>(_ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
        let buffer: UnsafeMutableRawBufferPointer
        if let address = idle.withLock({ $0.popLast() }), let start = UnsafeMutableRawPointer(bitPattern: address) {
            buffer = UnsafeMutableRawBufferPointer(start: start, count: byteCount)
        } else {
            buffer = .allocate(byteCount: byteCount, alignment: 16)
        }
        defer { giveBack(buffer) }
        return body(buffer)
    }

    private func giveBack(_ buffer: UnsafeMutableRawBufferPointer) {
        let address = UInt(bitPattern: buffer.baseAddress)
        let kept = idle.withLock { idle -> Bool in
            guard idle.count < self.kept else { return false }
            idle.append(address)
            return true
        }
        if !kept { buffer.deallocate() }
    }
}
