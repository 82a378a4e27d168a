/// A response body produced over time: an event stream.
///
/// The daemon asks for bytes whenever the connection can take them. `.wait`
/// parks the connection (no thread, no CPU) until the waker handed to `start`
/// is called; then it asks again.
protocol StreamBody: AnyObject, Sendable {
    /// Called once, before the first read, with the function that un-parks the connection.
    /// It may be called from any thread, any number of times.
    func start(wake: @escaping @Sendable () -> Void)
    /// Copies the next bytes into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> StreamRead
    /// Called once when the connection ends, whatever the reason.
    func finish()
}

/// What a `StreamBody` has for the connection.
enum StreamRead {
    /// This many bytes were written into the buffer.
    case bytes(Int)
    /// Nothing now: park until woken.
    case wait
    /// The stream is over: close the response.
    case end
}
