import ObservationCore
import Testing

extension TestClient {
    /// Creates an observer and returns its id.
    func createObserver(_ body: JSON = [:]) throws -> String {
        let response = try send("POST", "/v1/observers", json: body)
        #expect(response.status == 201, "\(response.text)")
        guard case .string(let id) = response["id"] else { throw TestClientError("no observer id: \(response.text)") }
        return id
    }

    /// Registers and returns the registration id.
    @discardableResult
    func observe(_ observer: String, _ object: String, _ keyPath: String, options: [String] = ["new", "old"]) throws
        -> String
    {
        let response = try send(
            "POST", "/v1/observers/\(observer)/observations",
            json: [
                "object": .string(object), "keyPath": .string(keyPath), "options": .array(options.map(JSON.string)),
            ])
        #expect(response.status == 201 || response.status == 200, "\(response.text)")
        guard case .array(let list) = response["observations"], case .object(let first)? = list.first,
            case .string(let id)? = first["id"]
        else { throw TestClientError("no registration: \(response.text)") }
        return id
    }

    func set(_ object: String, _ keyPath: String, _ value: JSON) throws {
        let response = try send("PUT", "/v1/objects/\(object)/values/\(keyPath)", json: ["value": value])
        #expect(response.status == 200, "\(response.text)")
    }
}

extension TestServer {
    /// An SSE stream of an observer (or the admin stream when `observer` is nil).
    func stream(_ observer: String?, headers: [String: String] = [:], query: String = "") throws -> SSEClient {
        let path = observer.map { "/v1/observers/\($0)/events" } ?? "/v1/events"
        let stream = try SSEClient(port: port, path: path + query, headers: headers)
        #expect(stream.status == 200)
        return stream
    }
}
