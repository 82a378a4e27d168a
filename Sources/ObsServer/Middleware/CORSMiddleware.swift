/// Cross-origin access (`--cors-origins`, section 9): answers preflights before anything else
/// (they carry no token and read nothing), and gives every other answer its CORS headers.
struct CORSMiddleware: Middleware {
    let policy: CORSPolicy

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        context.answerHeaders += policy.answerHeaders(origin: request.headers.origin)
        if let preflight = policy.preflight(request) {
            context.route = .preflight
            return .now(preflight)
        }
        return next(request, context)
    }
}
