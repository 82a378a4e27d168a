/// The configurable count limits the store enforces (`limitExceeded` past them).
public struct StoreLimits: Sendable {
    public var maxObjects: Int

    public init(maxObjects: Int = 1_000_000) {
        self.maxObjects = maxObjects
    }
}
