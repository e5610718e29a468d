import Foundation
import Testing

@Suite("baton bench handoff")
struct BenchHandoffCLITests {
    @Test("bench handoff --json judges each path against a floor pipeline measured in the same run, hop by hop (issue 26 item 5)")
    func floorFigures() async throws {
        try await startingProcesses {
            let result = try Baton.run("bench", "handoff", "--count", "8", "--launches", "0", "--json")
            #expect(result.status == 0, "\(result.output)")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let figures = try #require(json?["figures"] as? [[String: Any]], "\(result.output)")
            for figure in figures {
                #expect(Set(figure.keys) == ["name", "value", "unit", "baseline", "baselineValue", "ratio", "target", "met"], "\(figure)")
                #expect(figure["met"] is Bool)
            }
            func figure(_ name: String) -> [String: Any]? {
                figures.first { $0["name"] as? String == name }
            }
            func microseconds(_ figure: [String: Any], _ key: String) -> Double {
                (figure[key] as? Double) ?? Double(figure[key] as? Int ?? 0)
            }
            // The three paths, p50 judged against their floors and p99 shown beside them.
            for (name, target, floor) in [
                ("becomeCurrent → B's watcher has it, vs floor", "≤ 1.5x", "floor: app → Unix socket → A → one UDP datagram → B"),
                ("continue asked on B's socket → delivered, warm, vs floor", "≤ 1.5x", "floor: control → Unix socket → B"),
                ("continue asked on B's socket → delivered, cold, vs floor", "≤ 1.3x", "warm floor + bare mutual TLS 1.3 handshake"),
            ] {
                let judged = try #require(figure(name), "\(result.stdout)")
                #expect(judged["target"] as? String == target)
                #expect((judged["baseline"] as? String)?.hasPrefix(floor) == true, "\(judged)")
                #expect(microseconds(judged, "value") > 0 && microseconds(judged, "baselineValue") > 0, "\(judged)")
                let tail = try #require(figure(name + " (p99)"), "\(result.stdout)")
                #expect(microseconds(tail, "value") >= microseconds(judged, "value"))
            }
            // The floor hop by hop: every hop took time, and the hops of a path add up to about its whole.
            let visibleHops = ["app → A: Unix socket", "A → B: one UDP datagram", "B → watcher: Unix socket, then the watching task"]
            for hop in visibleHops {
                let measured = try #require(figure("floor visible hop: " + hop), "\(result.stdout)")
                #expect(microseconds(measured, "value") > 0)
            }
            let handshake = try #require(figure("floor cold hop: B: TCP connect + mutual TLS 1.3 handshake"), "\(result.stdout)")
            #expect(microseconds(handshake, "value") > 0)
            #expect(figure("floor warm hop: A → B: 3 KB on the TLS link") != nil)
            // Baton's paths cut where the floor's are, to show which part holds the time above it.
            for leg in ["visible leg: B has the advert → the watcher has it", "warm leg: the origin app asked → the continuing app has the state"] {
                let cut = try #require(figure(leg), "\(result.stdout)")
                #expect(cut["baseline"] as? String == "the floor's same leg")
            }
            // The figures from before the floor stay.
            #expect(figure("becomeCurrent → visible in nearby")?["target"] as? String == "≤ 5x")
            #expect(figure("continue → delivered, warm session") != nil)
        }
    }
}
