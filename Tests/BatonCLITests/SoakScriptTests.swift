import Foundation
import Testing

/// scripts/soak.py's own options (issue 25 item 7): a load turned off with rate 0 is off, not a thread that dies.
@Suite("soak.py options (issue 25 item 7)")
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
}
