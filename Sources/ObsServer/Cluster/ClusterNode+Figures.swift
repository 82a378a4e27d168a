/// What `/v1/stats` shows of a cluster node.
extension ClusterNode {
    /// The node's `cluster` member in `/v1/stats`.
    struct Figures: Sendable {
        let node: String
        let nodes: Int
        let applied: Int
        let head: Int
        /// The digest of what the node applied, as of `digestPosition`.
        let digest: String
        let digestPosition: Int
        /// How often the node found its replica outvoted and rebuilt it.
        let rebuilds: Int
    }

    var figures: Figures {
        let applied = shared.applied.load(ordering: .acquiring)
        return shared.state.withLock {
            Figures(
                node: settings.nodeID, nodes: $0.nodes, applied: applied, head: max($0.head, applied),
                digest: $0.digest.hex, digestPosition: $0.digestPosition, rebuilds: $0.rebuilds)
        }
    }
}
