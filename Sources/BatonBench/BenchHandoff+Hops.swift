import BatonClient
import BatonEmbedded

/// The leg "origin app asked → continuing app has the state" cut hop by hop by stamps taken inside the app libraries
/// and the agents (``HopStamps``, on only while the bench continues over B's control socket): where Baton works on
/// the 3 KB state, against the floor's same leg, which only relays it (issue 26 item 5).
extension HandoffBench {
    /// The points the leg passes, in order, after the origin app's delegate is asked for its state (the leg's start);
    /// the continuing app's delegate given the activity (``ContinueStamp``) is the last before the leg's end, the
    /// event the bench waits for. Where a write returns (``HopStamps/Point/agentReplySent``) is not one of them: the
    /// writing thread may get its core back only after the reader has gone on (2 cores), so it is a figure of its own.
    static let legPoints: [HopStamps.Point] = [
        .appStateEncoded, .appSavedSent, .frameRead, .frameDecoded, .agentSavedReceived, .agentReplySending, .frameRead,
        .frameDecoded, .peerReplyReceived, .agentDeliverSending, .frameRead, .frameDecoded, .clientDeliverReceived,
        .appDeliverReceived, .appStateDecoded,
    ]

    /// What each hop between two of ``legPoints`` (from the leg's start, to the delegate, to its end) holds.
    static let legHops = [
        "origin app: its delegate, then the state encoded (ActivityPayload)",
        "origin app: saved encoded (IPC property list) and handed to its loop",
        "app → A: the client's loop writes, Unix socket, A's loop wakes and reads",
        "A: saved frame decoded (property list)",
        "A: saved read from the property list (IPCMessage)",
        "A: broker, the state's travel form and credentials check, until the reply is encoded",
        "A → B: reply encoded and written through TLS, B's loop wakes, reads and decrypts",
        "B: reply frame decoded (property list)",
        "B: reply read from the property list (SessionMessage, multiplexer)",
        "B: the fetch completes, arriving (C9), broker, until deliver is encoded",
        "B → app: deliver encoded and written, Unix socket, the app client's loop wakes and reads",
        "app client: deliver frame decoded (property list)",
        "app client: deliver read from the property list (IPCMessage)",
        "app client → app library: a main-actor job, the main actor wakes",
        "continuing app: the state decoded (ActivityPayload, UserActivity)",
        "continuing app: until its delegate has the activity",
        "continuing app: the event, to the bench's task on the main actor",
    ]

    /// The leg's points from `start` (the origin app asked) to `end` (the bench has the continuing app's event),
    /// matched in order in `stamps`, with `delegate` (the continuing app's delegate has the activity) before the end;
    /// nil when a point is missing (the sample is then left out of the cut).
    static func legSample(_ stamps: [HopStamps.Stamp], start: UInt64, delegate: UInt64?, end: UInt64) -> LegCut? {
        guard let delegate else { return nil }
        var points = [start]
        var threads: [UInt] = []
        var rest = stamps.drop { $0.nanoseconds < start }
        for point in legPoints {
            guard let index = rest.firstIndex(where: { $0.point == point }) else { return nil }
            points.append(rest[index].nanoseconds)
            threads.append(rest[index].thread)
            rest = rest[(index + 1)...]
        }
        points += [delegate, end]
        let writes = [(HopStamps.Point.agentReplySending, HopStamps.Point.agentReplySent), (.agentDeliverSending, .agentDeliverSent)].map { from, to in
            stamps.first { $0.point == from }.flatMap { sending in
                stamps.first { $0.point == to }.map { Double($0.nanoseconds &- sending.nanoseconds) / 1e9 }
            }
        }
        return LegCut(sample: HopSample(points: points), threads: threads, replyWrite: writes[0], deliverWrite: writes[1])
    }

    /// One warm sample's leg, cut.
    struct LegCut {
        var sample: HopSample
        /// The thread of each of ``legPoints``.
        var threads: [UInt]
        /// The leg's two writes, until each returned, where stamped: warm, A's reply from its encoding and B's
        /// `deliver` the same; visible, the app's becomeCurrent from its call and A's advert from its sealing.
        var replyWrite: Double?
        var deliverWrite: Double?
        /// The same sample's asking leg: continue asked until the origin app is asked for its state.
        var asking: Double = 0
    }

    /// Each hop's p50 and p99 as figures against the leg's p50, and the floor's same leg beside the whole.
    func legHopFigures(_ samples: Samples) -> [BenchFigure] {
        let cut = samples.warmLeg.map(\.sample)
        guard !cut.isEmpty else { return [] }
        // The same path as the judged warm figure, ended where the continuing app's delegate has the activity: the
        // floor's path ends where its app's main actor has the bytes, with no event handed on after.
        let floorWarm = samples.floorWarm.filter { $0.hops.count == Self.warmFloorHops.count }
        let toDelegate = samples.warmLeg.map { $0.asking + $0.sample.total - ($0.sample.hops.last ?? 0) }
        let figures: [BenchFigure] = [
            .microseconds(
                "continue asked on B's socket → the continuing app's delegate has it, warm, vs floor (\(toDelegate.count) samples)", percentiles(toDelegate).0,
                baseline: Self.warmFloorText, percentiles(floorWarm.map(\.total)).0
            )
        ]
        return figures
            + Self.cutFigures(
                "warm", samples.warmLeg, hops: Self.legHops,
                writes: ["A: reply encoded until its write returned", "B: deliver encoded until its write returned"]
            )
    }

    /// A cut leg's hops (p50 and p99 of each) and its two writes, as figures against the leg's p50: "`path` leg hop:
    /// …", "`path` leg write: …".
    static func cutFigures(_ path: String, _ legs: [LegCut], hops: [String], writes: [String]) -> [BenchFigure] {
        let cut = legs.map(\.sample)
        guard !cut.isEmpty else { return [] }
        let whole = percentiles(cut.map(\.total)).0
        var figures: [BenchFigure] = []
        for (index, name) in hops.enumerated() {
            let (hop50, hop99) = percentiles(cut.map { $0.hops[index] })
            figures.append(.microseconds("\(path) leg hop: \(name)", hop50, baseline: "the cut leg p50 (\(cut.count) samples)", whole))
            figures.append(.microseconds("\(path) leg hop: \(name) (p99)", hop99, baseline: "the cut leg p50", whole))
        }
        for (name, times) in zip(writes, [legs.compactMap(\.replyWrite), legs.compactMap(\.deliverWrite)]) where !times.isEmpty {
            let (write50, write99) = percentiles(times)
            figures.append(.microseconds("\(path) leg write: \(name) (\(times.count) samples; its thread may wait for a core)", write50, baseline: "the cut leg p50", whole))
            figures.append(.microseconds("\(path) leg write: \(name) (p99)", write99, baseline: "the cut leg p50", whole))
        }
        return figures
    }

    /// One note per hop of a cut leg whose end ran on another thread than its start, with how often: `threads` holds
    /// each sample's thread at every stamp, and hop i + 1 runs from stamp i to stamp i + 1 (the warm and visible cuts).
    static func threadChanges(_ threads: [[UInt]], path: String, hops: [String]) -> [String] {
        guard let stamps = threads.first?.count else { return [] }
        var notes: [String] = []
        for index in 0..<(stamps - 1) {
            let changed = threads.filter { $0[index] != $0[index + 1] }.count
            guard changed > 0 else { continue }
            notes.append("\(path) leg hop \"\(hops[index + 1])\": another thread at its end in \(changed) of \(threads.count) samples")
        }
        return notes
    }

    /// Where a hop between two stamps inside one process changed threads (a hand-off between event loops or
    /// executors), with how often: one note per such hop.
    func legThreadNotes(_ samples: Samples) -> [String] {
        let threads = samples.warmLeg.map(\.threads)
        let count = threads.count
        // Hop i + 1 runs from stamp i to stamp i + 1 (hop 0 starts at the leg's start, on the origin app's main actor).
        var notes = Self.threadChanges(threads, path: "warm", hops: Self.legHops)
        // The agents and the apps' connections share this process's event loops (LocalDevices): the continuing app's
        // connection reads on A's loop or on B's, and on A's it waits for A's thread (the floor's nodes have their own).
        let (replying, received, clientRead) = (5, 8, 10)
        let onA = threads.filter { $0[clientRead] == $0[replying] }.count
        let onB = threads.filter { $0[clientRead] == $0[received] }.count
        notes.append("the continuing app's connection read on A's loop thread in \(onA) of \(count) samples, on B's in \(onB)")
        return notes
    }
}

/// Stamps the moment the continuing app's delegate is given the activity (on the main actor): where the app has the
/// state, before the event the bench waits for.
@MainActor
final class ContinueStamp: BatonApplicationDelegate {
    var stamp: UInt64?

    func application(
        _ application: BatonApplication,
        continue userActivity: UserActivity,
        restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void
    ) -> Bool {
        stamp = monotonicNanoseconds()
        return true
    }
}
