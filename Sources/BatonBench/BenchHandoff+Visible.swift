import BatonClient
import BatonEmbedded

/// The visible path's leg "becomeCurrent → B's nearby table" cut hop by hop by stamps taken inside the app's client
/// and the agents (``HopStamps``, on only while the bench makes activities current), against the floor's same hops:
/// where Baton's excess over the floor goes (issue 26 item 5).
extension HandoffBench {
    /// The points the leg passes, in order, after `becomeCurrent` is called (the leg's start); the bench's observer of
    /// B's nearby table is its end. Where a write returns (the app's hand-off to its connection, A's `sendto`) is not
    /// one of them: the reader may have gone on before the writing thread gets its core back (2 cores), so each is a
    /// figure of its own (``visibleWrites``).
    static let visiblePoints: [HopStamps.Point] = [.agentCurrentReceived, .advertDecided, .advertSealed, .advertReceived, .advertApplied]

    /// What each hop between two of ``visiblePoints`` (from the leg's start to its end) holds.
    static let visibleHops = [
        "app → A: becomeCurrent encoded (IPC property list), the app connection's loop writes, Unix socket, A's loop wakes, reads and decodes",
        "A: broker (becomeCurrent, C2), until discovery is told to advertise",
        "A: advert built and sealed (A1, A2)",
        "A → B: sendto, loopback UDP, B's loop wakes and reads",
        "B: advert opened and checked (A1-A8), nearby table applied",
        "B: the table's observers before the bench's (the watchers told: nearby items built, encoded, written)",
    ]

    /// The writes the leg passes: from the point before until the write returned.
    static let visibleWrites: [(name: String, from: HopStamps.Point?, to: HopStamps.Point)] = [
        ("app: becomeCurrent called until handed to its connection (its notice, the IPC message encoded)", nil, .appCurrentSent),
        ("A: advert sealed until its sendto returned", .advertSealed, .advertSent),
    ]

    /// The leg's points from `start` (becomeCurrent called) to `table` (B's nearby table's observer): the first stamp
    /// of each point after `start`, whichever thread took it; nil when a point is missing (the sample is then left
    /// out of the cut).
    static func visibleSample(_ stamps: [HopStamps.Stamp], start: UInt64, table: UInt64) -> LegCut? {
        let after = stamps.filter { $0.nanoseconds >= start }
        func first(_ point: HopStamps.Point) -> HopStamps.Stamp? { after.first { $0.point == point } }
        var points = [start]
        var threads: [UInt] = []
        for point in visiblePoints {
            guard let stamp = first(point) else { return nil }
            points.append(stamp.nanoseconds)
            threads.append(stamp.thread)
        }
        points.append(max(table, points.last ?? table))
        let writes = visibleWrites.map { write in
            first(write.to).map { to in Double(to.nanoseconds &- (write.from.flatMap(first)?.nanoseconds ?? start)) / 1e9 }
        }
        return LegCut(sample: HopSample(points: points), threads: threads, replyWrite: writes[0], deliverWrite: writes[1])
    }

    /// Each hop's p50 and p99 as figures against the cut leg's p50; and the leg in the floor's three parts (app → A's
    /// read, A's read → B's read, B's read → its table), each against the floor's same part.
    func visibleHopFigures(_ samples: Samples) -> [BenchFigure] {
        let cut = samples.visibleLeg.map(\.sample)
        guard !cut.isEmpty else { return [] }
        var figures = Self.cutFigures("visible", samples.visibleLeg, hops: Self.visibleHops, writes: Self.visibleWrites.map(\.name))
        // The floor's A stamps when it reads the app's frame and B when it reads the datagram. B has no table: its
        // part after the read is the whole way to its watcher, which Baton's B writes to inside the table's observers.
        let parts: [(String, Range<Int>, Range<Int>)] = [
            ("becomeCurrent → A has it (app, Unix socket, A's read)", 0..<1, 0..<1),
            ("A has it → B read the datagram (broker, seal, UDP)", 1..<4, 1..<2),
            ("B read the datagram → B's nearby table (its watchers told on the way; the floor: until its watcher has it)", 4..<6, 2..<3),
        ]
        for (name, batonHops, floorHops) in parts {
            let (baton50, baton99) = percentiles(cut.map { $0.leg(batonHops) })
            let (floor50, floor99) = percentiles(samples.floorVisible.map { $0.leg(floorHops) })
            figures.append(.microseconds("visible part: \(name)", baton50, baseline: "the floor's same part", floor50))
            figures.append(.microseconds("visible part: \(name) (p99)", baton99, baseline: "the floor's same part (p99)", floor99))
        }
        return figures
    }

    /// Where a hop between two stamps changed threads, with how often; and whether A's and B's reads shared one.
    func visibleThreadNotes(_ samples: Samples) -> [String] {
        let threads = samples.visibleLeg.map(\.threads)
        let count = threads.count
        guard count > 0 else { return [] }
        var notes = Self.threadChanges(threads, path: "visible", hops: Self.visibleHops)
        let (aRead, bRead) = (0, 3)
        let shared = threads.filter { $0[aRead] == $0[bRead] }.count
        notes.append("A's and B's loops were one thread in \(shared) of \(count) visible samples")
        return notes
    }
}
