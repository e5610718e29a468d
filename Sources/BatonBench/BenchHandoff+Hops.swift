import BatonClient

/// The leg "origin app asked → continuing app has the state" cut hop by hop by stamps taken inside the app libraries
/// and the agents (``HopStamps``, on only while the bench continues over B's control socket): where Baton works on
/// the 3 KB state, against the floor's same leg, which only relays it (issue 26 item 5).
extension HandoffBench {
    /// The points the leg passes, in order, after the origin app's delegate is asked for its state (the leg's start).
    static let legPoints: [HopStamps.Point] = [
        .appStateEncoded, .appSavedSent, .frameRead, .frameDecoded, .agentSavedReceived, .agentReplySending, .agentReplySent,
        .frameRead, .frameDecoded, .peerReplyReceived, .agentDeliverSending, .agentDeliverSent, .frameRead, .frameDecoded,
        .clientDeliverReceived, .appDeliverReceived, .appStateDecoded,
    ]

    /// What each hop between two of ``legPoints`` (from the leg's start, to its end) holds.
    static let legHops = [
        "origin app: its delegate, then the state encoded (ActivityPayload)",
        "origin app: saved encoded (IPC property list) and written",
        "app → A: Unix socket, A's loop wakes and reads",
        "A: saved frame decoded (property list)",
        "A: saved read from the property list (IPCMessage)",
        "A: broker, the state's travel form and credentials check, until the reply is written",
        "A: reply encoded (session property list) and written through TLS",
        "A → B: TLS link, B's loop wakes, reads and decrypts",
        "B: reply frame decoded (property list)",
        "B: reply read from the property list (SessionMessage, multiplexer)",
        "B: the fetch completes, arriving (C9), broker, until deliver is written",
        "B: deliver encoded (IPC property list) and written",
        "B → app: Unix socket, the app client's loop wakes and reads",
        "app client: deliver frame decoded (property list)",
        "app client: deliver read from the property list (IPCMessage)",
        "app client → app library: async stream, main actor wakes",
        "continuing app: the state decoded (ActivityPayload)",
        "continuing app: its delegate, then the event to the bench",
    ]

    /// The leg's points from `start` (the origin app asked) to `end` (the continuing app has the state), matched in
    /// order in `stamps`; nil when a point is missing (the sample is then left out of the cut).
    static func legSample(_ stamps: [HopStamps.Stamp], start: UInt64, end: UInt64) -> (sample: HopSample, threads: [UInt])? {
        var points = [start]
        var threads: [UInt] = []
        var rest = stamps.drop { $0.nanoseconds < start }
        for point in legPoints {
            guard let index = rest.firstIndex(where: { $0.point == point }) else { return nil }
            points.append(rest[index].nanoseconds)
            threads.append(rest[index].thread)
            rest = rest[(index + 1)...]
        }
        points.append(end)
        return (HopSample(points: points), threads)
    }

    /// Each hop's p50 and p99 as figures against the leg's p50, and the floor's same leg beside the whole.
    func legHopFigures(_ samples: Samples) -> [BenchFigure] {
        let cut = samples.warmLeg
        guard !cut.isEmpty else { return [] }
        let whole = percentiles(cut.map(\.total)).0
        var figures: [BenchFigure] = []
        for (index, name) in Self.legHops.enumerated() {
            let (hop50, hop99) = percentiles(cut.map { $0.hops[index] })
            figures.append(.microseconds("warm leg hop: \(name)", hop50, baseline: "the cut leg p50 (\(cut.count) samples)", whole))
            figures.append(.microseconds("warm leg hop: \(name) (p99)", hop99, baseline: "the cut leg p50", whole))
        }
        return figures
    }

    /// Where a hop between two stamps inside one process changed threads (a hand-off between event loops or
    /// executors), with how often: one note per such hop.
    func legThreadNotes(_ samples: Samples) -> [String] {
        let count = samples.warmLegThreads.count
        var notes: [String] = []
        // Hop i + 1 runs from stamp i to stamp i + 1 (hop 0 starts at the leg's start, on the origin app's main actor).
        for index in 0..<(Self.legPoints.count - 1) {
            let changed = samples.warmLegThreads.filter { $0[index] != $0[index + 1] }.count
            guard changed > 0 else { continue }
            notes.append("warm leg hop \"\(Self.legHops[index + 1])\": another thread at its end in \(changed) of \(count) samples")
        }
        return notes
    }
}
