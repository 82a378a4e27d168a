import Foundation
import ObservationCore
import Testing

@Suite("Store: concurrent use")
struct StoreConcurrencyTests {
    @Test("4 threads writing, mutating and reading keep revisions unique and lose nothing")
    func concurrentWriters() throws {
        let store = Store()
        _ = try store.as(.admin).createObject(id: "shared", className: nil, values: ["list": []])
        for worker in 0..<4 {
            _ = try store.as(.admin).createObject(id: "w\(worker)", className: nil, values: ["n": 0])
        }
        let revisions = Locked<[Int]>([])
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var mine: [Int] = []
            for step in 1...2500 {
                do {
                    switch step % 4 {
                    case 0: mine.append(try store.as(.admin).setValue(.int(step), of: "w\(worker)", at: "n"))
                    case 1:
                        let insertion = try ArrayMutation(kind: .insertion, indexes: [0], values: [.int(step)])
                        mine.append(try store.as(.admin).mutate("shared", at: "list", insertion))
                    case 2:
                        mine.append(
                            try store.as(.admin).patch("w\(worker)", values: ["a": .int(step), "b": .int(step)]))
                    default:
                        let value = try store.as(.admin).value(of: "w\(worker)", at: "n").value
                        if value != .int(step - 3) && step > 3 {
                            failures.withLock { $0.append("w\(worker) read \(value)") }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(zip(mine, mine.dropFirst()).allSatisfy { $0 < $1 })
            revisions.withLock { $0 += mine }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let all = revisions.withLock { $0 }
        #expect(Set(all).count == all.count)
        #expect(store.stats().revision == 5 + all.count)
        #expect(try store.as(.admin).value(of: "shared", at: "list.@count").value == .int(4 * 625))
        for worker in 0..<4 { #expect(try store.as(.admin).value(of: "w\(worker)", at: "n").value == 2500) }
    }
}
