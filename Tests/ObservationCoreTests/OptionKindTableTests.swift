import ObservationCore
import Testing

/// Every subset of the four options.
private let allOptionSets: [ObservationOptions] = (0..<16).map { ObservationOptions(rawValue: UInt8($0)) }

/// The four kinds: a setting (nil) and the three to-many mutations.
private let allKinds: [ArrayMutation.Kind?] = [nil, .insertion, .removal, .replacement]

@Suite("Observation: option × kind table")
struct OptionKindTableTests {
    @Test("each option set and change kind yields exactly KVO's records and fields", arguments: allOptionSets, allKinds)
    func table(options: ObservationOptions, kind: ArrayMutation.Kind?) throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: ["list": [1, 2, 3]])
        try fixture.observe("a", "list", options)
        let initial = fixture.changes()
        #expect(initial.count == (options.contains(.initial) ? 1 : 0))
        if let record = initial.first {
            #expect(record["initial"] == true && record["kind"] == "setting")
            #expect(record["new"] == (options.contains(.new) ? [1, 2, 3] : nil))
            #expect(record["old"] == nil, "initial never carries old")
        }

        let revision: Int
        let expectedOld: JSON?
        let expectedNew: JSON?
        switch kind {
        case nil:
            revision = try fixture.store.as(.admin).setValue([9], of: "a", at: "list")
            (expectedOld, expectedNew) = ([1, 2, 3], [9])
        case .insertion?:
            revision = try fixture.store.as(.admin).mutate(
                "a", at: "list", try ArrayMutation(kind: .insertion, indexes: [1], values: [7]))
            (expectedOld, expectedNew) = (nil, [7])
        case .removal?:
            revision = try fixture.store.as(.admin).mutate(
                "a", at: "list", try ArrayMutation(kind: .removal, indexes: [0, 2], values: []))
            (expectedOld, expectedNew) = ([1, 3], nil)
        case .replacement?:
            revision = try fixture.store.as(.admin).mutate(
                "a", at: "list", try ArrayMutation(kind: .replacement, indexes: [2], values: [8]))
            (expectedOld, expectedNew) = ([3], [8])
        }
        let records = fixture.changes()
        #expect(records.count == (options.contains(.prior) ? 2 : 1))
        #expect(
            records.allSatisfy {
                $0["revision"] == .int(revision) && $0["kind"] == .string(kind?.rawValue ?? "setting")
            })
        #expect(records.allSatisfy { ($0["indexes"] != nil) == (kind != nil) })
        let wantsOld = options.contains(.old) && kind != .insertion
        if options.contains(.prior), let prior = records.first {
            #expect(prior["prior"] == true)
            #expect(prior["new"] == nil, "prior never carries new")
            #expect(prior["old"] == (wantsOld ? expectedOld : nil))
        }
        let post = try #require(records.last)
        #expect(post["prior"] == nil && post["initial"] == nil)
        #expect(post["old"] == (wantsOld ? expectedOld : nil))
        #expect(post["new"] == (options.contains(.new) && kind != .removal ? expectedNew : nil))
    }
}
