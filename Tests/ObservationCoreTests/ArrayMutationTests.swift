import ObservationCore
import Testing

@Suite("To-many mutations")
struct ArrayMutationTests {
    @Test(
        "mutations apply as NSMutableArray's indexed methods do",
        arguments: [
            (.insertion, [0, 3], ["a", "b"], ["a", 1, 2, "b", 3]),
            (.insertion, [3, 4], ["a", "b"], [1, 2, 3, "a", "b"]),
            (.insertion, [0, 1, 2], ["a", "b", "c"], ["a", "b", "c", 1, 2, 3]),
            (.removal, [0, 1, 2], [], []),
            (.removal, [1], [], [1, 3]),
            (.replacement, [0, 2], ["x", "z"], ["x", 2, "z"]),
        ] as [(ArrayMutation.Kind, [Int], [JSON], [JSON])])
    func applies(kind: ArrayMutation.Kind, indexes: [Int], values: [JSON], expected: [JSON]) throws {
        let mutation = try ArrayMutation(kind: kind, indexes: indexes, values: values)
        #expect(try mutation.applied(to: [1, 2, 3]) == expected)
    }

    @Test(
        "malformed mutations are refused",
        arguments: [
            (.insertion, [], [], CoreError.Code.invalidRequest),
            (.insertion, [1, 0], ["a", "b"], .invalidRequest),
            (.insertion, [0, 0], ["a", "b"], .invalidRequest),
            (.insertion, [0], [], .invalidRequest),
            (.removal, [0], ["a"], .invalidRequest),
            (.replacement, [0, 1], ["a"], .invalidRequest),
            (.removal, [-1], [], .indexOutOfRange),
        ] as [(ArrayMutation.Kind, [Int], [JSON], CoreError.Code)])
    func refusesShape(kind: ArrayMutation.Kind, indexes: [Int], values: [JSON], code: CoreError.Code) {
        do {
            _ = try ArrayMutation(kind: kind, indexes: indexes, values: values)
            Issue.record("accepted")
        } catch {
            #expect(error.code == code)
        }
    }

    @Test(
        "indexes past the end are out of range",
        arguments: [
            (.insertion, [4], ["a"]), (.insertion, [3, 5], ["a", "b"]), (.removal, [3], []), (.replacement, [3], ["a"]),
        ] as [(ArrayMutation.Kind, [Int], [JSON])])
    func outOfRange(kind: ArrayMutation.Kind, indexes: [Int], values: [JSON]) throws {
        let mutation = try ArrayMutation(kind: kind, indexes: indexes, values: values)
        do {
            _ = try mutation.applied(to: [1, 2, 3])
            Issue.record("accepted")
        } catch {
            #expect(error.code == .indexOutOfRange)
        }
    }
}
