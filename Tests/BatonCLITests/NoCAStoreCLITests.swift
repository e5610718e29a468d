import BatonTestSupport
import Foundation
import Testing

/// Issue 24: the account's devices are pinned, so pairing and sessions need no CA store. In a Debian root without
/// ca-certificates `baton pair` failed with "unknownError([])" (NIOSSL's default trust roots load the system file).
@Suite("Sessions without a system CA store")
struct NoCAStoreCLITests {
    @Test(
        "with no /etc/ssl/certs (an empty /etc/ssl in a private mount namespace) two devices pair over TLS 1.3 and hold one roster",
        .requires(.root)
    )
    func pairsWithoutCAStore() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let laptop = root.appendingPathComponent("laptop").path
            let desktop = root.appendingPathComponent("desktop").path
            #expect(try Baton.run("init", "--name", "laptop", "--state", laptop).status == 0)
            #expect(try Baton.run("init", "--name", "desktop", "--state", desktop).status == 0)
            // Both sides run in one mount namespace where /etc/ssl is an empty tmpfs: no CA file, no CA folder.
            let script = """
                set -u
                mount -t tmpfs none /etc/ssl || exit 90
                [ ! -e /etc/ssl/certs ] && [ ! -e /etc/pki ] || exit 91
                "$1" pair --host 127.0.0.1 --port 0 --yes --state "$2" > "$2.log" 2>&1 &
                port=""
                for _ in $(seq 100); do
                    port=$(grep -o 'on port [0-9]*' "$2.log" | grep -o '[0-9]*$' || true)
                    [ -n "$port" ] && break
                    sleep 0.1
                done
                [ -n "$port" ] || { cat "$2.log"; exit 92; }
                "$1" pair "127.0.0.1:$port" --yes --state "$3"
                status=$?
                wait
                cat "$2.log"
                exit $status
                """
            let result = try Baton.run(
                ["unshare", "--mount", "--propagation", "private", "bash", "-c", script, "_", Baton.executable.path, laptop, desktop],
                executable: URL(fileURLWithPath: "/usr/bin/env")
            )
            #expect(result.status == 0, "\(result.output)")
            #expect(!result.output.contains("unknownError"), "\(result.output)")
            let devices = try Baton.run("devices", "--offline", "--state", laptop)
            #expect(devices.stdout.contains("desktop") && devices.stdout.contains("laptop"), "\(devices.output)")
        }
    }
}
