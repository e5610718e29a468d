import BatonEmbedded
import Foundation

/// Stamps the moment the origin app is asked for its state (its delegate's `userActivityWillSave`, on the main
/// actor): where a continuation turns from asking to answering.
@MainActor
final class SaveStamp: UserActivityDelegate {
    var stamp: UInt64?

    func userActivityWillSave(_ userActivity: UserActivity) {
        stamp = monotonicNanoseconds()
    }
}

/// The figures against the floor pipeline (issue 26 item 5): each path against its floor, p50 judged and p99 shown;
/// the floor hop by hop; and Baton's paths cut where the floor's can be cut too, to show which part holds the excess.
extension HandoffBench {
    static let visibleFloorText = "floor: app → Unix socket → A → one UDP datagram → B → Unix socket → watcher (no Baton)"
    static let warmFloorText = "floor: control → Unix socket → B → fetch on an open mutual TLS 1.3 link → A → Unix socket → app, 3 KB back the same way (no Baton)"
    static let coldFloorText = "warm floor + bare mutual TLS 1.3 handshake (TCP connect included)"

    static let visibleFloorHops = ["app → A: Unix socket", "A → B: one UDP datagram", "B → watcher: Unix socket, then the watching task"]
    static let warmFloorHops = [
        "control → B: Unix socket", "B → A: fetch on the open TLS link", "A → origin app: Unix socket, then its main actor",
        "origin app → A: 3 KB on the Unix socket", "A → B: 3 KB on the TLS link", "B → continuing app: 3 KB on the Unix socket, then its main actor",
    ]
    static let coldFloorHops = [
        "control → B: Unix socket", "B: TCP connect + mutual TLS 1.3 handshake", "B → A: fetch on the new TLS link",
        "A → origin app: Unix socket, then its main actor", "origin app → A: 3 KB on the Unix socket", "A → B: 3 KB on the TLS link",
        "B → continuing app: 3 KB on the Unix socket, then its main actor",
    ]

    func floorFigures(_ samples: Samples) -> [BenchFigure] {
        let floorWarm = samples.floorWarm.filter { $0.hops.count == Self.warmFloorHops.count }
        let floorCold = samples.floorCold.filter { $0.hops.count == Self.coldFloorHops.count }
        let (visible50, visible99) = percentiles(samples.watched.map(\.total))
        let (floorVisible50, floorVisible99) = percentiles(samples.floorVisible.map(\.total))
        let (warm50, warm99) = percentiles(samples.warmOverSocket.map(\.total))
        let (floorWarm50, floorWarm99) = percentiles(floorWarm.map(\.total))
        let (cold50, cold99) = percentiles(samples.coldOverSocket.map(\.total))
        let (handshake50, handshake99) = percentiles(floorCold.map { $0.hops[1] })
        let (coldFloor50, coldFloor99) = (floorWarm50 + handshake50, floorWarm99 + handshake99)
        var figures: [BenchFigure] = [
            .microseconds(
                "becomeCurrent → B's watcher has it, vs floor", visible50, baseline: Self.visibleFloorText, floorVisible50,
                target: "≤ 1.5x", met: visible50 <= 1.5 * floorVisible50
            ),
            .microseconds(
                "continue asked on B's socket → delivered, warm, vs floor", warm50, baseline: Self.warmFloorText, floorWarm50,
                target: "≤ 1.5x", met: warm50 <= 1.5 * floorWarm50
            ),
            .microseconds(
                "continue asked on B's socket → delivered, cold, vs floor", cold50, baseline: Self.coldFloorText, coldFloor50,
                target: "≤ 1.3x", met: cold50 <= 1.3 * coldFloor50
            ),
            .microseconds("becomeCurrent → B's watcher has it, vs floor (p99)", visible99, baseline: Self.visibleFloorText + " (p99)", floorVisible99),
            .microseconds("continue asked on B's socket → delivered, warm, vs floor (p99)", warm99, baseline: Self.warmFloorText + " (p99)", floorWarm99),
            .microseconds("continue asked on B's socket → delivered, cold, vs floor (p99)", cold99, baseline: Self.coldFloorText + " (p99)", coldFloor99),
            .microseconds(
                "floor: cold continue (new TLS link)", percentiles(floorCold.map(\.total)).0, baseline: Self.coldFloorText, coldFloor50
            ),
        ]

        // The floor hop by hop (p50 and p99 of each hop), each as a share of its path's p50.
        for (path, paths, names) in [
            ("visible", samples.floorVisible, Self.visibleFloorHops), ("warm", floorWarm, Self.warmFloorHops), ("cold", floorCold, Self.coldFloorHops),
        ] {
            let whole = percentiles(paths.map(\.total)).0
            for (index, name) in names.enumerated() {
                let (hop50, hop99) = percentiles(paths.map { $0.hops[index] })
                figures.append(.microseconds("floor \(path) hop: \(name)", hop50, baseline: "floor \(path) p50", whole))
                figures.append(.microseconds("floor \(path) hop: \(name) (p99)", hop99, baseline: "floor \(path) p50", whole))
            }
        }

        // Baton's paths cut where the floor's are cut too: which part holds the time above the floor.
        let legs: [(String, [HopSample], Range<Int>, [HopSample], Range<Int>)] = [
            ("visible leg: becomeCurrent → B has the advert (B's nearby table)", samples.watched, 0..<1, samples.floorVisible, 0..<2),
            ("visible leg: B has the advert → the watcher has it", samples.watched, 1..<2, samples.floorVisible, 2..<3),
            ("warm leg: continue asked → the origin app asked for its state", samples.warmOverSocket, 0..<1, floorWarm, 0..<3),
            ("warm leg: the origin app asked → the continuing app has the state", samples.warmOverSocket, 1..<2, floorWarm, 3..<6),
            ("cold leg: continue asked → the origin app asked for its state", samples.coldOverSocket, 0..<1, floorCold, 0..<4),
            ("cold leg: the origin app asked → the continuing app has the state", samples.coldOverSocket, 1..<2, floorCold, 4..<7),
        ]
        for (name, baton, batonHops, floor, floorHops) in legs {
            let (baton50, baton99) = percentiles(baton.map { $0.leg(batonHops) })
            let (floor50, floor99) = percentiles(floor.map { $0.leg(floorHops) })
            figures.append(.microseconds(name, baton50, baseline: "the floor's same leg", floor50))
            figures.append(.microseconds(name + " (p99)", baton99, baseline: "the floor's same leg (p99)", floor99))
        }
        return figures
    }
}
