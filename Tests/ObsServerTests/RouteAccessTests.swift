import ObservationCore
import Testing

@testable import ObsServer

/// `RouteAccess.refusal` does not work out the admin's route family: this holds it to
/// `Authorization`, which lets the admin use every route.
@Suite("Route access: the admin's routes")
struct RouteAccessTests {
    static let families: [RouteFamily] = [
        .classes(changing: false), .classes(changing: true), .objects(changing: false), .objects(changing: true),
        .query, .notifications, .transactions, .observers, .observer(id: "o", maker: nil, exists: true),
        .observer(id: "o", maker: "t", exists: false), .admin, .open,
    ]

    @Test("Authorization lets the admin use every route family", arguments: families)
    func adminMayUseEveryRoute(family: RouteFamily) {
        let admin = Caller.admin
        #expect(Authorization.decide(.route(family), by: admin.principal, access: admin.access) == .allowed)
    }
}
