import ObservationCore
import Testing

/// Subscriptions as (name, object); nil is "any".
private let subscriptionKinds: [(String?, String?)] = [("N", "o"), ("N", nil), (nil, "o"), (nil, nil)]
/// Postings as (name, object).
private let postingKinds: [(String, String?)] = [("N", "o"), ("N", "p"), ("N", nil), ("M", "o"), ("M", nil)]

@Suite("Notification center")
struct NotificationCenterTests {
    @Test("GNUstep matching: every subscription kind × posting kind", arguments: subscriptionKinds, postingKinds)
    func matching(subscription: (String?, String?), posting: (String, String?)) throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).subscribe(
            observerID: fixture.observerID, name: subscription.0, object: subscription.1)
        _ = fixture.events()
        let outcome = try fixture.store.as(.admin).post(name: posting.0, object: posting.1, userInfo: ["k": 1])
        let expected =
            (subscription.0 == nil || subscription.0 == posting.0)
            && (subscription.1 == nil || subscription.1 == posting.1)
        guard case .delivered(let revision, let count) = outcome else {
            Issue.record("not delivered now")
            return
        }
        #expect(count == (expected ? 1 : 0))
        let events = fixture.events().filter { $0.0 == "notification" }
        #expect(events.count == (expected ? 1 : 0))
        if let event = events.first?.1 {
            #expect(event["name"] == .string(posting.0))
            #expect(event["object"] == (posting.1.map(JSON.string) ?? JSON.null))
            #expect(event["userInfo"] == ["k": 1])
            #expect(event["revision"] == .int(revision))
        }
    }

    @Test(
        "removeObserver:name:object: rules",
        arguments: [
            (nil, nil, ["N/o", "N/*", "*/o", "*/*", "M/o"]),
            ("N", nil, ["N/o", "N/*"]),
            (nil, "o", ["N/o", "*/o", "M/o"]),
            ("N", "o", ["N/o"]),
            ("M", nil, ["M/o"]),
            ("X", nil, []),
        ] as [(String?, String?, [String])])
    func removal(name: String?, object: String?, removed: [String]) throws {
        let fixture = try ObservationFixture()
        for (subscriptionName, subscriptionObject) in [("N", "o"), ("N", nil), (nil, "o"), (nil, nil), ("M", "o")]
            as [(String?, String?)]
        {
            _ = try fixture.store.as(.admin).subscribe(
                observerID: fixture.observerID, name: subscriptionName, object: subscriptionObject)
        }
        func labels() throws -> Set<String> {
            Set(
                try fixture.store.as(.admin).observer(fixture.observerID).subscriptionList.map {
                    "\($0.name ?? "*")/\($0.object ?? "*")"
                })
        }
        let before = try labels()
        let code = errorCode {
            _ = try fixture.store.as(.admin).unsubscribe(observerID: fixture.observerID, name: name, object: object)
        }
        #expect(code == (removed.isEmpty ? .notFound : nil))
        #expect(before.subtracting(try labels()) == Set(removed))
    }

    @Test("subscriptions are deduplicated per (name, object)")
    func dedup() throws {
        let fixture = try ObservationFixture()
        let first = try fixture.store.as(.admin).subscribe(observerID: fixture.observerID, name: "N", object: nil)
        let again = try fixture.store.as(.admin).subscribe(observerID: fixture.observerID, name: "N", object: nil)
        #expect(!first.deduplicated && again.deduplicated && again.revision == nil)
        #expect(again.subscription == first.subscription)
        #expect(fixture.store.subscriptionCount == 1)
    }

    @Test(
        "coalescing removes queued postings that match on the mask, in both queues; the latest wins",
        arguments: [
            ([], 0, ["a1", "a2", "b", "a3"]),
            (["name"], 2, ["b", "a3"]),
            (["object"], 1, ["a2", "b", "a3"]),
            (["name", "object"], 1, ["a2", "b", "a3"]),
        ] as [([String], Int, [String])])
    func coalescing(mask: [String], coalesced: Int, delivered: [String]) throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).subscribe(observerID: fixture.observerID, name: nil, object: nil)
        _ = try fixture.store.as(.admin).post(name: "A", object: "x", userInfo: "a1", style: .asap)
        _ = try fixture.store.as(.admin).post(name: "A", object: "y", userInfo: "a2", style: .idle)
        _ = try fixture.store.as(.admin).post(name: "B", object: "y", userInfo: "b", style: .asap)
        let outcome = try fixture.store.as(.admin).post(
            name: "A", object: "x", userInfo: "a3", style: .idle, coalesce: mask)
        #expect(outcome == .queued(coalesced: coalesced))
        _ = fixture.events()
        fixture.store.flushQueued(.asap)
        fixture.store.flushQueued(.idle)
        let order = fixture.events().filter { $0.0 == "notification" }.map { $0.1["userInfo"] }
        // asap postings go first, then idle ones; within a style, posting order.
        let expected = delivered.sorted { (["a1", "b"].contains($0) ? 0 : 1) < (["a1", "b"].contains($1) ? 0 : 1) }
        #expect(order == expected.map { JSON.string($0) })
    }

    @Test("posting needs a valid name; coalescing applies to queued postings only")
    func validation() throws {
        let store = Store()
        #expect(errorCode { _ = try store.as(.admin).post(name: "", object: nil, userInfo: nil) } == .invalidName)
        #expect(
            errorCode { _ = try store.as(.admin).post(name: "a\u{0}b", object: nil, userInfo: nil) } == .invalidName)
        #expect(errorCode { _ = try store.as(.admin).post(name: "N", object: "bad id", userInfo: nil) } == .invalidName)
        #expect(
            errorCode { _ = try store.as(.admin).post(name: "N", object: nil, userInfo: nil, coalesce: ["name"]) }
                == .invalidRequest)
        #expect(
            errorCode {
                _ = try store.as(.admin).post(name: "N", object: nil, userInfo: nil, style: .asap, coalesce: ["nmae"])
            }
                == .invalidRequest)
    }

    @Test("a posting reaches only its own subscriptions among 100,000 to other names")
    func indexScale() throws {
        let store = Store(limits: StoreLimits(maxRegistrationsPerObserver: 200_000))
        let observer = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        for index in 0..<100_000 {
            _ = try store.as(.admin).subscribe(observerID: observer, name: "name-\(index % 1000)", object: "o\(index)")
        }
        _ = try store.as(.admin).subscribe(observerID: observer, name: "target", object: nil)
        #expect(
            try store.as(.admin).post(name: "name-7", object: "o7", userInfo: nil)
                == .delivered(revision: 100_003, count: 1))
        #expect(
            try store.as(.admin).post(name: "target", object: "o7", userInfo: nil)
                == .delivered(revision: 100_004, count: 1))
        #expect(
            try store.as(.admin).post(name: "name-7", object: nil, userInfo: nil)
                == .delivered(revision: 100_005, count: 0))
    }
}
