import Foundation
import Testing

/// scripts/soak.py's own options (issue 25 item 7): a load turned off with rate 0 is off, not a thread that dies; and how
/// it judges memory (issue 25 item 0): by its slope against the continuations after the warm-up.
@Suite("soak.py options and its memory judgment (issue 25 items 7 and 0)")
struct SoakScriptTests {
    @Test("issue 25 item 7: --flood-rate 0 and --churn-rate 0 turn that load off; a negative rate is refused")
    func zeroRatesAreOff() throws {
        let scripts = Baton.packageRoot.appendingPathComponent("scripts").path
        // The two load threads run with rate 0 and return at once (before: ZeroDivisionError in the thread).
        let threads = try Baton.run(
            ["-c", """
            import sys, types
            sys.path.insert(0, sys.argv[1])
            import soak
            run = soak.Soak(types.SimpleNamespace(agents={}, ports={}), types.SimpleNamespace(flood_rate=0, churn_rate=0))
            run.flood()
            run.churn()
            print("off")
            """, scripts],
            executable: URL(fileURLWithPath: "/usr/bin/python3")
        )
        #expect(threads.status == 0 && threads.stdout == "off\n", "\(threads.stderr)")
        let negative = try Baton.run(
            ["\(scripts)/soak.py", "--flood-rate", "-1", "--minutes", "0"],
            executable: URL(fileURLWithPath: "/usr/bin/python3")
        )
        #expect(negative.status == 2 && negative.stderr.contains("a rate is 0 (off) or more"), "\(negative.stderr)")
    }

    @Test("issue 25 item 0: memory is judged by its slope after the warm-up, so one minute catches 2.2 KB per continuation")
    func memorySlope() throws {
        let scripts = Baton.packageRoot.appendingPathComponent("scripts").path
        // One minute sampled every second at 5 continuations a second (the debug build in CI): a warm-up that grows
        // 600 KiB over the first 150 continuations, then either the leak of the release soak (2.2 KiB each) or
        // nothing but page-sized noise.
        let fitted = try Baton.run(
            ["-c", """
            import sys
            sys.path.insert(0, sys.argv[1])
            import soak
            def run(leak):
                samples = []
                for second in range(61):
                    n = 5 * second
                    rss = 50000 + min(n, 150) * 4 + max(0, n - 150) * leak + 4 * (second % 2)
                    samples.append({"t": second, "n": n, "rssKiB": int(rss)})
                return soak.memory_slope(samples, soak.warmup_seconds(1))
            leaking, flat = run(2.2), run(0)
            print(leaking["kibPer1000"] > soak.MAX_SLOPE_KIB_PER_1000, flat["kibPer1000"] <= soak.MAX_SLOPE_KIB_PER_1000,
                  leaking["samples"] >= soak.MIN_FIT_SAMPLES, round(leaking["kibPer1000"] / 100))
            """, scripts],
            executable: URL(fileURLWithPath: "/usr/bin/python3")
        )
        #expect(fitted.status == 0 && fitted.stdout == "True True True 22\n", "\(fitted.stdout) \(fitted.stderr)")
    }
}
