import ObservationCore

/// Divergence detection: every node publishes its `ApplyDigest` at sampled log positions
/// (`obs_digests`), and judges itself against the others' at the same positions.
///
/// A node samples its digest at every multiple of `every`, at every checkpoint position and,
/// each presence round, at the position it has applied (in a quiet cluster every node stands
/// at the same one). A sample
/// is judged once every other live node has reported that position: the node has diverged
/// when some other digest has at least as many votes as its own (itself included). A single
/// deviant among three nodes is outvoted; two nodes that disagree both rebuild, from the state
/// of record (the checkpoint and the log), which leaves them equal again. Positions up to a
/// divergence already acted on are not judged again (the reports there stay as they were).
/// The keeper writes a checkpoint only once a later or equal position was judged in agreement
/// (`confirms`), so a diverged keeper cannot make its state the state of record.
struct DivergenceCheck {
    /// Sampled log positions: every multiple of this.
    static let every = 128
    /// Samples kept waiting for the other nodes' reports.
    static let kept = 64

    /// Samples not yet judged, by position (ascending).
    private(set) var pending: [(position: Int, digest: ApplyDigest)] = []
    /// Samples not yet written to `obs_digests`.
    private(set) var unpublished: [(position: Int, digest: ApplyDigest)] = []
    /// The position of the last divergence acted on: nothing at or before it is judged again.
    private(set) var settledThrough = 0
    /// The latest position sampled.
    private var lastSampled = 0
    /// The latest position judged in agreement with the other nodes.
    private(set) var confirmedThrough = 0
    /// Bumped by every rebuild: a round that took its samples before it must not publish or judge.
    private(set) var generation = 0

    /// Records the digest at `position` (a sampled one, or the node's current position).
    mutating func sample(_ position: Int, _ digest: ApplyDigest) {
        guard position > settledThrough, position > lastSampled else { return }
        lastSampled = position
        pending.append((position, digest))
        unpublished.append((position, digest))
        if pending.count > Self.kept { pending.removeFirst(pending.count - Self.kept) }
        if unpublished.count > Self.kept { unpublished.removeFirst(unpublished.count - Self.kept) }
    }

    /// The samples up to `position`, taken in `generation`, are in `obs_digests`.
    mutating func published(through position: Int, generation: Int) {
        guard generation == self.generation else { return }
        unpublished.removeAll { $0.position <= position }
    }

    /// Whether the state at `position` may be written as the cluster's checkpoint.
    func confirms(_ position: Int, peers: Int) -> Bool { peers == 0 || confirmedThrough >= position }

    /// Judges the pending samples against the other nodes' reports (`reports[position][node]`,
    /// hex digests) given how many other nodes are live. Returns the first position where this
    /// node is outvoted (and settles everything up to it), or nil; judged samples are dropped.
    mutating func judge(reports: [Int: [String: String]], peers: Int, generation: Int) -> Divergence? {
        guard peers > 0, generation == self.generation else { return nil }
        var remaining: [(position: Int, digest: ApplyDigest)] = []
        defer { pending = remaining }
        for sample in pending {
            guard let others = reports[sample.position], others.count >= peers else {
                remaining.append(sample)
                continue
            }
            let mine = sample.digest.hex
            var votes: [String: Int] = [:]
            for digest in others.values { votes[digest, default: 0] += 1 }
            let own = 1 + (votes.removeValue(forKey: mine) ?? 0)
            // Ties between digests are broken by the digest, so the verdict is the same for any order.
            guard let (theirs, count) = votes.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }), count >= own else {
                confirmedThrough = max(confirmedThrough, sample.position)
                continue
            }
            settledThrough = sample.position
            remaining = []
            unpublished.removeAll { $0.position <= sample.position }
            return Divergence(position: sample.position, mine: mine, theirs: theirs, votes: (own, count))
        }
        return nil
    }

    /// Starts over after a rebuild (the samples were of the state that was thrown away).
    mutating func rebuilt() {
        pending = []
        unpublished = []
        lastSampled = 0
        confirmedThrough = 0
        generation += 1
    }
}

/// Where a node found itself outvoted.
struct Divergence: Sendable, CustomStringConvertible {
    let position: Int
    let mine: String
    let theirs: String
    let votes: (mine: Int, theirs: Int)

    var description: String {
        "at log position \(position) its digest is \(mine) (\(votes.mine) of the live nodes) where \(votes.theirs) have \(theirs)"
    }
}
