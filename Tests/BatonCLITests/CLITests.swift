import Foundation
import Testing

/// Runs the `baton` executable built beside this test bundle, as a person would from a shell.
enum Baton {
    static let executable: URL = {
        // The test runner lives in the products folder, next to the `baton` executable it depends on.
        let runner = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return runner.deletingLastPathComponent().appendingPathComponent("baton")
    }()

    /// `baton-debug`, the test-only commands (roster churn, sealing), built beside `baton`.
    static let debugExecutable = executable.deletingLastPathComponent().appendingPathComponent("baton-debug")

    static func debug(_ arguments: String...) throws -> Result {
        try run(arguments, executable: debugExecutable)
    }

    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    static let realWorld = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/realworld")

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        var output: String { stdout + stderr }
    }

    static func run(_ arguments: String...) throws -> Result {
        try run(arguments)
    }

    static func run(_ arguments: [String], environment: [String: String] = [:], executable: URL = Baton.executable) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.standardInput = FileHandle.nullDevice
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes before waiting, so a chatty command cannot block on a full pipe.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("baton-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

@Suite("baton command line")
struct CLITests {
    @Test("--help explains the commands")
    func help() async throws {
        try await startingProcesses {
            let result = try Baton.run("--help")
            #expect(result.status == 0)
            for command in ["demo", "plist", "bench"] { #expect(result.stdout.contains(command)) }
            let plist = try Baton.run("plist", "--help")
            for command in ["lint", "convert", "print"] { #expect(plist.stdout.contains(command)) }
        }
    }

    @Test("demo: two devices pair, and the ShopSnap list and edit go from laptop to desktop over the network (C2-C5, A6, A8, A9)")
    func demo() async throws {
        try await startingProcesses {
            let result = try Baton.run("demo")
            #expect(result.status == 0, "\(result.output)")
            #expect(result.stdout.contains("paired over TLS 1.3"))
            #expect(result.stdout.contains("desktop nearby: Shopping list (3 items) from laptop, would open in com.razeware.ShopSnap"))
            #expect(result.stdout.contains("desktop ShopSnap: will continue com.razeware.shopsnap.view"))
            #expect(result.stdout.contains("desktop ShopSnap: continued list: Ice cream, Apple, Nuts"))
            #expect(result.stdout.contains("desktop ShopSnap: continued editing: Cheese (aged)"))
            #expect(result.stdout.contains("laptop  ShopSnap: com.razeware.shopsnap.edit was continued on another device (A8)"))
            #expect(result.stdout.contains("the state was asked for 1 time(s) for 7 keystrokes"), "A6: keystrokes coalesce")
            #expect(result.stdout.contains("desktop ShopSnap: received the photo of “Cheese (aged)” over a continuation stream: 4194304 bytes"), "F1-F3")
            #expect(result.stdout.contains("the photo went laptop → desktop over the continuation stream"))
            #expect(result.stdout.contains("it is gone from the nearby list"))
            #expect(result.stdout.contains("nothing nearby to continue [notFound]"))
            #expect(result.stdout.contains("[unsupportedURLScheme]"))
            #expect(result.stdout.contains("[payloadTooLarge]"))
            #expect(result.stdout.contains("[unsupportedPayloadVersion]"))
        }
    }

    @Test("plist lint passes every real-world Info.plist and entitlements file")
    func lintRealWorld() async throws {
        try await startingProcesses {
            let folders = ["infoplists", "entitlements"].map { Baton.realWorld.appendingPathComponent($0) }
            var files: [String] = []
            for folder in folders {
                let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                files += names.map { folder.appendingPathComponent($0).path }
            }
            let process = try Baton.run(["plist", "lint"] + files)
            #expect(process.status == 0, "\(process.output)")
            #expect(process.stdout.split(separator: "\n").filter { $0.hasSuffix("values)") }.count == files.count)
        }
    }

    @Test("plist lint names the file and line of a broken file, and exits 1")
    func lintBroken() async throws {
        try await startingProcesses {
            let directory = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let broken = directory.appendingPathComponent("Info.plist")
            try Data("<plist>\n<dict>\n<key>A</key>\n<string>unclosed\n</dict>\n</plist>\n".utf8).write(to: broken)
            let good = directory.appendingPathComponent("Good.plist")
            try Data("<plist><true/></plist>".utf8).write(to: good)
            let result = try Baton.run("plist", "lint", good.path, broken.path, directory.appendingPathComponent("missing").path)
            #expect(result.status == 1)
            #expect(result.stdout.contains("\(good.path): OK (xml, 1 values)"))
            #expect(result.stdout.contains("\(broken.path): line 5, byte"))
            #expect(result.stdout.contains("[invalidXML]"))
            #expect(result.stdout.contains("missing: no such file"))
            let quiet = try Baton.run("plist", "lint", "--quiet", good.path)
            #expect(quiet.status == 0 && quiet.stdout.isEmpty)
        }
    }

    @Test("plist convert: XML to binary to XML gives the same value; JSON refuses dates with the key path")
    func convert() async throws {
        try await startingProcesses {
            let directory = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let source = Baton.realWorld.appendingPathComponent("entitlements/insidegui__WWDC__WWDCRelease_iCloud.entitlements")
            let binary = directory.appendingPathComponent("e.bplist")
            let xml = directory.appendingPathComponent("e.xml")
            #expect(try Baton.run("plist", "convert", "--format", "binary", source.path, "-o", binary.path).status == 0)
            #expect(try Data(contentsOf: binary).starts(with: Array("bplist00".utf8)))
            #expect(try Baton.run("plist", "convert", "--format", "xml", binary.path, "-o", xml.path).status == 0)
            #expect(try Baton.run("plist", "print", source.path).stdout == Baton.run("plist", "print", xml.path).stdout)

            let json = try Baton.run("plist", "convert", "--format", "json", source.path, "-o", "-")
            #expect(json.status == 0)
            #expect(json.stdout.contains("\"com.apple.developer.associated-domains\": ["))

            // In place, as plutil does, when -o is not given.
            #expect(try Baton.run("plist", "convert", "--format", "binary", xml.path).status == 0)
            #expect(try Data(contentsOf: xml).starts(with: Array("bplist00".utf8)))

            let dated = directory.appendingPathComponent("dated.plist")
            try Data("<plist><dict><key>when</key><date>2020-01-01T00:00:00Z</date></dict></plist>".utf8).write(to: dated)
            let refused = try Baton.run("plist", "convert", "--format", "json", dated.path, "-o", "-")
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("when: a date value has no JSON form"))
        }
    }

    @Test("plist print shows types and sorted keys")
    func printing() async throws {
        try await startingProcesses {
            let directory = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("p.plist")
            try Data("<plist><dict><key>b</key><integer>2</integer><key>a</key><array><string>x</string></array></dict></plist>".utf8)
                .write(to: file)
            let result = try Baton.run("plist", "print", file.path)
            #expect(result.stdout == "{\n  \"a\" => [\n    0 => \"x\"\n  ]\n  \"b\" => 2\n}\n")
        }
    }

    @Test("bench plist reports Baton against Foundation in the same run")
    func bench() async throws {
        try await startingProcesses {
            let result = try Baton.run("bench", "plist", "--samples", "3", "--sample-milliseconds", "1", "--json")
            #expect(result.status == 0, "\(result.output)")
            #expect(result.stdout.hasPrefix("{\"figures\": ["))
            #expect(result.stdout.components(separatedBy: "\"ratio\"").count - 1 == 4)
            #expect(result.stdout.contains("\"name\": \"decode 256 KB"))
        }
    }

    @Test("bench search reports each query against raw FTS5, its recall@10 against the exact ranking, and every keystroke of a typed word (issue 29)")
    func benchSearch() async throws {
        try await startingProcesses {
            let result = try Baton.run("bench", "search", "--entries", "2000", "--samples", "10", "--json")
            #expect(result.status == 0, "\(result.output)")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let figures = try #require(json?["figures"] as? [[String: Any]])
            for figure in figures {
                #expect(Set(figure.keys) == ["name", "value", "unit", "baseline", "baselineValue", "ratio", "target", "met"], "\(figure)")
            }
            let names = figures.compactMap { $0["name"] as? String }
            #expect(names.contains { $0.hasPrefix("index 2000 entries") })
            #expect(names.filter { $0.hasSuffix("recall@10") }.count == 4)
            #expect(names.filter { $0.hasPrefix("typing \"") && $0.hasSuffix(" p99") }.count == 8)
            // The planner's results are the exact ranking's for one word (SearchPlan): recall 1 there.
            let recall = figures.first { ($0["name"] as? String) == "one word, common \"notes\" recall@10" }
            #expect(recall?["value"] as? Double == 1)
        }
    }

    @Test("bench stream reports both stream paths against bare TCP and TLS copies, the first byte, and memory against its bounds (issues 13, 30)")
    func benchStream() async throws {
        try await startingProcesses {
            let result = try Baton.run("bench", "stream", "--bytes", "16777216", "--opens", "3", "--json")
            #expect(result.status == 0, "\(result.output)")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let figures = try #require(json?["figures"] as? [[String: Any]])
            for figure in figures {
                #expect(Set(figure.keys) == ["name", "value", "unit", "baseline", "baselineValue", "ratio", "target", "met"], "\(figure)")
                #expect(figure["met"] is Bool)
                for key in ["value", "baselineValue", "ratio"] { #expect(figure[key] is Double || figure[key] is Int, "\(key) in \(figure)") }
            }
            func figure(_ prefix: String) -> [String: Any]? {
                figures.first { ($0["name"] as? String)?.hasPrefix(prefix) == true }
            }
            // Both directions through the apps' streams on each path, against the bare TLS copy of as many bytes:
            // judged on the direct path (issue 30), reported on the relayed one.
            for (path, target) in [("direct", "≥ 0.9x"), ("relayed", "report only")] {
                for way in ["continuing app → originating app, 16 MiB", "originating app → continuing app, 16 MiB"] {
                    let stream = try #require(figure("\(path) stream: \(way)"), "\(result.stdout)")
                    #expect(stream["unit"] as? String == "MB/s")
                    #expect(stream["target"] as? String == target)
                    #expect((stream["value"] as? Double ?? 0) > 0)
                    #expect((stream["baseline"] as? String)?.contains("TLS 1.3") == true)
                }
                #expect(figure("\(path) stream: both ways at once")?["target"] as? String == target)
                #expect(figure("resident memory growth, slow reader (16 MiB, 10 ms pauses), \(path) stream")?["unit"] as? String == "KiB")
                #expect(figure("written, not yet read (most), slow reader (16 MiB, 10 ms pauses), \(path) stream") != nil)
            }
            // CPU per byte is judged as less is better: met at 1.2x the TLS copy's or less.
            let cpu = try #require(figure("CPU time per GiB: direct stream, continuing app → originating app"), "\(result.stdout)")
            #expect(cpu["unit"] as? String == "s/GiB")
            #expect(cpu["target"] as? String == "≤ 1.2x")
            #expect(cpu["met"] as? Bool == ((cpu["ratio"] as? Double ?? 0) <= 1.2))
            #expect(figure("CPU time per GiB: relayed stream, continuing app → originating app")?["target"] as? String == "report only")
            let firstByte = try #require(figure("time to the first byte of a new stream, direct (median of 3)"), "\(result.stdout)")
            #expect(firstByte["unit"] as? String == "µs")
            #expect((firstByte["value"] as? Double ?? 0) > 0)
            #expect((firstByte["baselineValue"] as? Double ?? 0) > 0)
            #expect(figure("bare TLS 1.3 copy, 16 MiB one way")?["baseline"] as? String == "16 MiB one way over plain TCP")
            let memory = try #require(figure("resident memory growth"), "\(result.stdout)")
            #expect((memory["target"] as? String)?.hasPrefix("≤ ") == true)
        }
    }
}
