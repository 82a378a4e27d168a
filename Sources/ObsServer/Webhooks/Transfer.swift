private import CCurl
import Foundation

/// One easy handle and what it points at (the body, the header list), kept alive until it ends.
///
/// `@unchecked Sendable`: made, used and released on the client's thread only; libcurl's
/// callbacks reach it through the pointer it was given, on that thread too.
final class Transfer: @unchecked Sendable {
    let easy: UnsafeMutableRawPointer
    let completion: @Sendable (OutboundResult) -> Void
    private let permits: @Sendable (String, Int) -> Bool
    private let body: UnsafeMutableBufferPointer<UInt8>
    private var headers: UnsafeMutablePointer<curl_slist>?
    /// Why no socket was opened (an address `permits` refused), if none was.
    private var failure: String?

    init(
        easy: UnsafeMutableRawPointer, request: OutboundRequest,
        completion: @escaping @Sendable (OutboundResult) -> Void
    ) {
        self.easy = easy
        self.completion = completion
        permits = request.permits
        body = .allocate(capacity: max(1, request.body.count))
        _ = body.initialize(from: request.body)
        var list: UnsafeMutablePointer<curl_slist>? = nil
        let lines = ["Content-Type: application/json", "Expect:"] + request.headers.map { "\($0.name): \($0.value)" }
        for line in lines { list = curl_slist_append(list, line) }
        headers = list
        let context = Unmanaged.passUnretained(self).toOpaque()
        let timeout = Int(request.timeout.milliseconds)
        ccurl_easy_setopt_string(easy, CURLOPT_URL, request.url)
        ccurl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeout)
        ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout)
        ccurl_easy_setopt_long(easy, CURLOPT_POST, 1)
        ccurl_easy_setopt_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
        ccurl_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(body.baseAddress))
        ccurl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        ccurl_easy_setopt_string(easy, CURLOPT_USERAGENT, "obs-server")
        ccurl_easy_setopt_write(easy) { _, size, count, _ in size * count }  // the answer's body is not read
        ccurl_easy_setopt_opensocket(easy) { context, purpose, address in
            guard let context, let address else { return CURL_SOCKET_BAD }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().openSocket(purpose, address)
        }
        ccurl_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, context)
        ccurl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, context)
    }

    /// Before each connection: the address it resolved to must be permitted.
    private func openSocket(_ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        var host = [CChar](repeating: 0, count: 64)
        var port = [CChar](repeating: 0, count: 16)
        let named = ccurl_address_text(address, &host, host.count, &port, port.count)
        guard named == 0 else {
            failure = "cannot read the address (getnameinfo \(named))"
            return CURL_SOCKET_BAD
        }
        let (hostText, portNumber) = (Self.text(host), Int(Self.text(port)) ?? 0)
        guard permits(hostText, portNumber) else {
            let address = hostText.contains(":") ? "[\(hostText)]:\(portNumber)" : "\(hostText):\(portNumber)"
            failure = "address \(address) is not allowed by --webhook-hosts"
            return CURL_SOCKET_BAD
        }
        let opened = socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
        if opened < 0 { failure = "socket() failed (errno \(errno))" }
        return opened
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// How it ended, from libcurl's result code (`CURLcode`'s raw value).
    func result(_ raw: UInt32) -> OutboundResult {
        let code = CURLcode(rawValue: raw)
        if let failure { return .failed(failure) }
        guard code == CURLE_OK else {
            if code == CURLE_OPERATION_TIMEDOUT { return .failed("timeout") }
            return .failed(String(cString: curl_easy_strerror(code)))
        }
        return .status(Int(ccurl_easy_response_code(easy)))
    }

    /// Frees the handle, its header list and body (the handle is out of the multi handle).
    func release() {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headers)
        headers = nil
        body.deallocate()
    }
}
