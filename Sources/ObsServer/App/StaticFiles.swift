import Foundation
import ObservationCore

/// Serves the dashboard's files from `--public-dir` (`/` is `index.html`).
///
/// Only plain names below the root are served: no `..`, no hidden files, no empty segment,
/// and no decoded segment holding `/`, NUL or another control character.
struct StaticFiles: Sendable {
    let root: String

    func serve(_ request: HTTPRequest) throws -> HTTPResponse {
        let parts = request.segments.isEmpty ? ["index.html"] : Array(request.segments)
        guard parts.allSatisfy(Self.isPlainName) else { throw APIError.routeNotFound(request.path) }
        let relative = parts.joined(separator: "/")
        guard let data = FileManager.default.contents(atPath: root + "/" + relative),
            !isDirectory(root + "/" + relative)
        else { throw APIError.routeNotFound(request.path) }
        var response = HTTPResponse(status: 200, contentType: Self.contentType(of: relative), body: Array(data))
        response.headers.append(("Cache-Control", "no-cache"))
        return response
    }

    private static func isPlainName(_ segment: String) -> Bool {
        !segment.isEmpty && !segment.hasPrefix(".")
            && segment.unicodeScalars.allSatisfy { $0 != "/" && $0.properties.generalCategory != .control }
    }

    private func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last?.lowercased() {
        case "html": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "ts": "application/typescript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "json": "application/json; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        case "txt": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }
}
