extension Dictionary {
    /// Runs `body` on the value stored for `key`, in place; nil when there is none.
    ///
    /// `self[key]?.field` copies the whole value out first, retaining every reference it
    /// holds: that showed in profiles of the paths that look at large records (registrations,
    /// observers) once per observer on every change. This reaches the value where it is
    /// stored instead. It is `mutating` only because in-place access to a dictionary's
    /// storage goes through its modify accessor; callers use it to read.
    @inline(__always)
    mutating func inPlace<T>(_ key: Key, _ body: (inout Value) -> T) -> T? {
        guard let index = index(forKey: key) else { return nil }
        return body(&values[index])
    }
}
