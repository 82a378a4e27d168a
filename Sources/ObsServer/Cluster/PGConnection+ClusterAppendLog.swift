/// The appender's log on PostgreSQL (statements in `ClusterSQL`).
extension PGConnection: ClusterAppendLog {
    func append(_ batch: [ClusterState.Queued], as tag: String) throws(PGError) {
        try query(
            ClusterSQL.append,
            [
                "\(batch.count)", tag, Self.arrayLiteral(batch.map(\.origin)),
                Self.arrayLiteral(batch.map(\.command)),
            ])
    }

    func terminateBackend(_ pid: Int32) throws(PGError) {
        try query(ClusterSQL.terminateBackend, ["\(pid)"])
    }

    func backendExists(_ pid: Int32) throws(PGError) -> Bool {
        try integer(ClusterSQL.backendCount, ["\(pid)"]) ?? 0 > 0
    }

    func appendedOrigins(_ origins: [Int], by tag: String) throws(PGError) -> Set<Int> {
        Set(
            try query(ClusterSQL.appendedOrigins, [tag, Self.arrayLiteral(origins)]).compactMap {
                $0[0].flatMap { Int($0) }
            })
    }
}
