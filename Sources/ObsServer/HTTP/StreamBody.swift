/// A response body produced over time: an event stream.
///
/// The daemon asks for bytes whenever the connection can take them. `.wait`
/// parks the connection (no thread, no CPU) until `StreamControl.wake` is
/// called; then it asks again.
protocol StreamBody: AnyObject, Sendable {
    /// Called once, before the first read, with what un-parks or ends the connection.
    func start(_ control: StreamControl)
    /// Copies the next bytes into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> StreamRead
    /// `read`, and whether a read right after would only wait (`drained`): the body is woken
    /// when it has more, so a direct writer parks without looking again.
    func readDirectly(into buffer: UnsafeMutableRawBufferPointer) -> (read: StreamRead, drained: Bool)
    /// Called once when the connection ends, whatever the reason.
    func finish()
}

extension StreamBody {
    func readDirectly(into buffer: UnsafeMutableRawBufferPointer) -> (read: StreamRead, drained: Bool) {
        (read(into: buffer), false)
    }
}

/// What a stream body can do to its connection, from any thread, any number of times.
struct StreamControl: Sendable {
    /// Un-parks the connection so that it reads again.
    let wake: @Sendable () -> Void
    /// Ends the connection now, dropping whatever is pending (a reader that fell behind).
    let abort: @Sendable () -> Void
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
