/// A change record before encoding (section 6.1), with `old`/`new` already filtered by the options.
struct ChangeRecord {
    enum Flag { case prior, initial }

    var kind = "setting"
    var indexes: [Int]?
    var flag: Flag?
    var old: JSON?
    var new: JSON?
    let revision: Int
    /// The client whose write caused it (section 7.3).
    var by: String?
    /// The transaction that caused it (section 15).
    var tx: String?

    /// The shared part: `"kind":…,…,"revision":n` (the same for every registration on the same value).
    func encodedTail() -> [UInt8] {
        JSONWriter.encode { writeTail(to: &$0) }
    }

    private func writeTail(to writer: inout JSONWriter) {
        writer.raw("\"kind\":")
        writer.write(kind)
        if let indexes {
            writer.raw(",\"indexes\":")
            writer.write(.array(indexes.map(JSON.int)))
        }
        switch flag {
        case .prior: writer.raw(",\"prior\":true")
        case .initial: writer.raw(",\"initial\":true")
        case nil: break
        }
        if let old {
            writer.raw(",\"old\":")
            writer.write(old)
        }
        if let new {
            writer.raw(",\"new\":")
            writer.write(new)
        }
        writer.raw(",\"revision\":")
        writer.write(revision)
        writer.writeCause(by: by, tx: tx)
    }

    /// The whole record for `registration`, its tail written in place (a tail nobody shares
    /// is not made apart and copied).
    static func encode(_ registration: Registration, record: ChangeRecord) -> [UInt8] {
        let (prefix, suffix) = registration.recordFraming
        assert(!prefix.isEmpty, "a registration makes records once it is bound (`bind` frames them)")
        return JSONWriter.encode { writer in
            writer.raw(prefix)
            record.writeTail(to: &writer)
            writer.raw(suffix)
        }
    }

    /// The record for `registration` as parts: its own fields (kept by the registration) around
    /// the shared tail, not joined (no copy per registration).
    static func parts(_ registration: Registration, tail: [UInt8]) -> RecordParts {
        let (prefix, suffix) = registration.recordFraming
        assert(!prefix.isEmpty, "a registration makes records once it is bound (`bind` frames them)")
        return RecordParts(prefix: prefix, tail: tail, suffix: suffix)
    }

    /// A registration's part of its records: `{"observation":…,"object":…,"keyPath":…,` before
    /// the tail, `,"context":…}` (or `}`) after it.
    static func framing(of registration: Registration) -> (prefix: [UInt8], suffix: [UInt8]) {
        let prefix = JSONWriter.encode { writer in
            writer.raw("{\"observation\":")
            writer.write(registration.id)
            writer.raw(",\"object\":")
            writer.write(registration.objectID)
            writer.raw(",\"keyPath\":")
            writer.write(registration.keyPath.description)
            writer.raw(",")
        }
        let suffix = JSONWriter.encode { suffix in
            if let context = registration.context {
                suffix.raw(",\"context\":")
                suffix.write(context)
            }
            suffix.raw("}")
        }
        return (prefix, suffix)
    }
}

extension JSONWriter {
    /// `,"by":…` (the client, section 7.3) and `,"tx":…` (the transaction, section 15), each
    /// when known: the last members of every record, notification and admin event a write causes.
    mutating func writeCause(by: String?, tx: String?) {
        if let by {
            raw(",\"by\":")
            write(by)
        }
        if let tx {
            raw(",\"tx\":")
            write(tx)
        }
    }
}

/// A record's bytes as three parts, joined when read: a registration's own fields and a tail
/// shared with other registrations (`prefix` and `suffix` empty: `tail` is the whole record).
/// An object, so that an event holding it is copied with one reference (every copy of an event
/// holding three arrays retained and released three).
final class RecordParts: Sendable {
    let prefix: [UInt8]
    let tail: [UInt8]
    let suffix: [UInt8]
    /// The bytes of the three.
    let count: Int

    init(prefix: [UInt8] = [], tail: [UInt8], suffix: [UInt8] = []) {
        self.prefix = prefix
        self.tail = tail
        self.suffix = suffix
        count = prefix.count + tail.count + suffix.count
    }
}
