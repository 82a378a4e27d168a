@testable import ObsServer

/// Runs `StreamConnectionState` against a model of libmicrohttpd and of the threads that
/// touch a stream (its reader, wakers, a stop, aborts, the room watcher), in a random
/// interleaving: each thread takes the lock for one transition, then does what it returned
/// in later steps, while the others go on. Records every step that would be wrong on a real
/// socket: a resume of a connection not suspended, a suspend of one suspended, a direct write
/// while libmicrohttpd has the connection or from two threads, anything done to a connection
/// after libmicrohttpd freed it, and a state that disagrees with libmicrohttpd once all is done.
struct InterleavingModel {
    private typealias Event = StreamConnectionStateTests.Event

    private enum Op {
        case transition(Event)
        case suspend, resume, shutdown, send, watch, unwatch(UInt64)
        /// libmicrohttpd ends the response and frees the connection.
        case free
    }

    private struct Job {
        var ops: [Op]
        var unsent: [UInt8] = []
        var isWriter = false
        var isReader = false
    }

    private var state: StreamConnectionState
    private var random: SplitMix
    private var jobs: [Job] = []
    private var suspendedInDaemon = false
    private var freed = false
    private var watched: [UInt64] = []
    private var nextToken: UInt64 = 1
    private var spawned = 0
    private(set) var violations: [String] = []

    init(seed: UInt64, directWrites: Bool) {
        state = StreamConnectionState(directWrites: directWrites)
        random = SplitMix(seed: seed)
    }

    /// `steps` random steps (new threads and steps of running ones), then every thread to its end.
    mutating func run(steps: Int) {
        for _ in 0..<steps where violations.isEmpty { step(spawning: true) }
        var guardSteps = 10_000
        while violations.isEmpty, !jobs.isEmpty || !watched.isEmpty, guardSteps > 0 {
            step(spawning: false)
            guardSteps -= 1
        }
        guard violations.isEmpty else { return }
        let parkedPhase =
            switch state.phase {
            case .parked, .waitingForRoom: true
            default: false
            }
        if !freed, parkedPhase != suspendedInDaemon {
            violations.append("at rest: \(state) while libmicrohttpd suspended: \(suspendedInDaemon)")
        }
    }

    private mutating func step(spawning: Bool) {
        let readerRuns = jobs.contains { $0.isReader }
        if spawning, random.below(3) == 0, spawned < 12 {
            spawned += 1
            let event: Event = [.wake, .wake, .wake, .stop, .abort][random.below(5)]
            jobs.append(Job(ops: [.transition(event)]))
            return
        }
        if !freed, !suspendedInDaemon, !readerRuns, random.below(2) == 0 {
            // libmicrohttpd asks the reader for bytes, or (rarely) ends the connection itself.
            let ops: [Op] = random.below(8) == 0 && spawning ? [.free] : [.transition(.readerLooks)]
            jobs.append(Job(ops: ops, isReader: true))
            return
        }
        if !watched.isEmpty, random.below(3) == 0 {
            watched.removeFirst()  // the watcher takes the handler out, then runs it
            jobs.append(Job(ops: [.transition(.roomCame)]))
            return
        }
        guard !jobs.isEmpty else { return }
        let index = random.below(jobs.count)
        let op = jobs[index].ops.removeFirst()
        perform(op, in: index)
        if jobs[index].ops.isEmpty { jobs.remove(at: index) }
    }

    private mutating func perform(_ op: Op, in index: Int) {
        if freed {
            if case .transition = op {} else { return violations.append("\(op) after the free") }
        }
        switch op {
        case .transition(let event): transition(event, in: index)
        case .suspend:
            if suspendedInDaemon { violations.append("suspended twice") }
            suspendedInDaemon = true
        case .resume:
            if !suspendedInDaemon { violations.append("resumed a connection not suspended") }
            if jobs.contains(where: { $0.isWriter }) { violations.append("resumed while a writer writes") }
            suspendedInDaemon = false
        case .shutdown: break
        case .send:
            if !suspendedInDaemon { violations.append("a direct write while libmicrohttpd has the connection") }
            if jobs.filter({ $0.isWriter }).count != 1 { violations.append("two writers") }
            let outcome = random.below(10)
            let next: Event =
                switch outcome {
                case 0: .bodyEnded
                case 1: .writeFailed
                case 2, 3: .writeCutShort
                case 4, 5: .writerLooks
                default: .writerFoundNothing
                }
            jobs[index].unsent = outcome == 2 || outcome == 3 ? [1] : []
            jobs[index].ops.insert(.transition(next), at: 0)
        case .watch:
            if !suspendedInDaemon { violations.append("watched for room while libmicrohttpd has it") }
            let token = nextToken
            nextToken += 1
            watched.append(token)
            jobs[index].ops.insert(.transition(.watching(token: token, unsent: jobs[index].unsent)), at: 0)
        case .unwatch(let token):
            watched.removeAll { $0 == token }
        case .free:
            if suspendedInDaemon { violations.append("libmicrohttpd freed a suspended connection") }
            freed = true
            _ = state.freed()
        }
    }

    private mutating func transition(_ event: Event, in index: Int) {
        var follow: [Op] = []
        switch state.apply(event) {
        case .step(.read):
            // The body: bytes (the reader returns), nothing (it may park), or its end.
            switch event == .readerLooks ? random.below(3) : 1 {
            case 0: break
            case 1: follow = event == .readerLooks ? [.transition(.readerFoundNothing)] : [.transition(.readerLooks)]
            default: follow = [.free]
            }
        case .step(.suspend): follow = [.suspend, .transition(.suspended)]
        case .step(.end): follow = [.free]
        case .action(.write) where event == .writerLooks: follow = [.send]  // the writer goes on
        case .action(let action): follow = ops(for: action, in: index)
        case .first: break
        }
        jobs[index].ops.insert(contentsOf: follow, at: 0)
    }

    private mutating func ops(for action: StreamConnectionState.Action, in index: Int) -> [Op] {
        let writer = jobs[index].isWriter
        jobs[index].isWriter = false
        switch action {
        case .none: return []
        case .write:
            if !writer, jobs.contains(where: { $0.isWriter }) { violations.append("a second writer") }
            jobs[index].isWriter = true
            return [.transition(.writerLooks)]
        case .watchWritable:
            jobs[index].isWriter = true  // still the writer while it registers
            return [.watch]
        case .unwatchAndWrite(let token, let unsent):
            if !writer, jobs.contains(where: { $0.isWriter }) { violations.append("a second writer") }
            jobs[index].isWriter = true
            jobs[index].unsent = unsent
            return [.unwatch(token), .transition(.writerLooks)]
        case .resume: return [.resume]
        case .shutdownAndResume: return [.shutdown, .resume]
        case .unwatchShutdownAndResume(let token): return [.unwatch(token), .shutdown, .resume]
        case .shutdownSocket:
            if freed { violations.append("shut down a freed connection") }
            return []  // done under the lock, at once
        }
    }
}

/// SplitMix64: the same interleavings for the same seed.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func below(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
