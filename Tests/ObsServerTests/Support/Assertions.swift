import ObservationCore
import Testing

/// The global revision, read from `/v1/stats`.
func currentRevision(_ client: TestClient) throws -> Int {
    guard case .int(let revision) = try client.get("/v1/stats")["revision"] else { return -1 }
    return revision
}

/// Sends a request that must be refused with `status` and `code`, and checks
/// that it changed nothing: same global revision, and `path` reads back the same.
@discardableResult
func expectRefused(
    _ client: TestClient, _ status: Int, _ code: String, readBack path: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ request: () throws -> TestResponse
) throws -> TestResponse {
    let revision = try currentRevision(client)
    let before = try path.map { try client.get($0).text }
    let response = try request()
    #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.errorCode == code, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.headers["content-type"] == "application/json; charset=utf-8", sourceLocation: sourceLocation)
    #expect(
        try currentRevision(client) == revision, "a refused request took a revision", sourceLocation: sourceLocation)
    if let path, let before {
        #expect(
            try client.get(path).text == before, "a refused request changed \(path)", sourceLocation: sourceLocation)
    }
    return response
}

extension TestClient {
    /// Creates an object and requires 201.
    @discardableResult
    func createObject(_ id: String, className: String? = nil, values: JSON = [:]) throws -> TestResponse {
        var body: JSONObject = ["id": .string(id), "values": values]
        if let className { body["class"] = .string(className) }
        let response = try send("POST", "/v1/objects", json: .object(body))
        #expect(response.status == 201, "\(response.text)")
        return response
    }

    /// Defines a class and requires 200 or 201.
    func defineClass(_ name: String, _ properties: JSON) throws {
        let response = try send("PUT", "/v1/classes/\(name)", json: ["properties": properties])
        #expect(response.status == 201 || response.status == 200, "\(response.text)")
    }

    /// Reads `keyPath` of `id` and requires 200.
    func value(_ id: String, _ keyPath: String) throws -> JSON {
        let response = try get("/v1/objects/\(id)/values/\(keyPath)")
        #expect(response.status == 200, "\(response.text)")
        return response["value"]
    }
}
