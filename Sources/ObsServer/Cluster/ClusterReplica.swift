import Foundation
import ObservationCore

/// A cluster node (`--cluster`): a write goes to the cluster's log and is answered with the
/// outcome of applying it when it comes back; a read waits until the node has applied
/// everything committed when it arrived (read-your-writes across nodes). Both are answered
/// within `--commit-timeout`: a write by its command's deadline (`ClusterShared.expire`), a
/// read that could not catch up by then with 503.
struct ClusterReplica: Replica {
    let store: Store
    let node: ClusterNode
    /// This node's open streams and waiting polls (a node counts and limits its own).
    let hub: StreamHub
    /// This node's stream limit (`--max-streams`).
    let maxStreams: Int

    func submit(_ command: Command, render: @escaping @Sendable (Outcome) -> HTTPResponse) throws(CoreError) -> Reply {
        let answer = DeferredAnswer()
        node.submit(command) { result in
            answer.resolve {
                switch result {
                case .success(let outcome): .now(render(outcome))
                case .failure(let error): .now(APIError(error).response)
                }
            }
        }
        return .later(answer)
    }

    var hasReadBarrier: Bool { true }

    func barrier(_ read: @escaping @Sendable () -> Reply) -> Reply {
        let answer = DeferredAnswer()
        let timeout = node.settings.commitTimeout
        node.afterCatchingUp { caughtUp in
            guard caughtUp else {
                let reason = "this node could not catch up with the cluster's log within --commit-timeout"
                return answer.resolve(
                    with: .now(APIError(ClusterNode.unavailable("\(reason) (\(timeout.inSeconds) s)")).response))
            }
            answer.resolve(read)
        }
        return .later(answer)
    }

    /// The node checks its own stream limit, and an observer's stream opening and closing go
    /// through the log (they hold the lease cluster-wide), named by this node's incarnation.
    /// The stream starts at once (the read barrier has run).
    func openStream(of observerID: String?) throws(CoreError) -> (log: EventLog, close: @Sendable () -> Void) {
        guard node.isHealthy, let holder = node.tag else {
            throw ClusterNode.unavailable("the node is not connected to the cluster's database now")
        }
        guard hub.count < maxStreams else {
            throw CoreError(
                .limitExceeded, "this node holds its limit of \(maxStreams) event streams",
                details: ["limit": .int(maxStreams)])
        }
        let log = try store.eventLog(of: observerID)
        guard let observerID else { return (log, {}) }
        node.submit(Command(time: .now(), .openStream(observer: observerID, holder: holder), as: .server)) { _ in }
        return (
            log,
            { [node] in
                node.submit(Command(time: .now(), .closeStream(observer: observerID, holder: holder), as: .server)) {
                    _ in
                }
            }
        )
    }

    var unavailability: CoreError? {
        guard !node.isHealthy else { return nil }
        return CoreError(
            .unavailable, "this node has not caught up with the cluster, or cannot reach its database",
            details: ["retryAfter": 1])
    }

    var isWritable: Bool { node.isHealthy }
    var streamCount: Int { hub.count }

    /// This node, the live nodes, what it has applied and the log's head (section 11), and the
    /// digest of what it applied (equal on every node at the same position).
    func addFigures(to figures: inout JSONObject) {
        let node = node.figures
        figures["cluster"] = [
            "node": .string(node.node), "nodes": .int(node.nodes), "applied": .int(node.applied),
            "head": .int(node.head), "digest": .string(node.digest), "digestPosition": .int(node.digestPosition),
            "rebuilds": .int(node.rebuilds),
        ]
    }

    func start() throws { try node.start() }
    func stop() { node.stop() }
}
