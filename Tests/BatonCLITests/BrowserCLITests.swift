import BatonTestSupport
import Foundation
import Testing

/// Polls `condition` every 100 ms until it holds or `timeout` seconds pass, sleeping with `Task.sleep`: these tests
/// wait for other processes, and a test that slept on a thread of the cooperative pool (two threads on a two-core
/// machine) would hold up every other test meanwhile.
func settles(timeout: Double = 8, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let end = Date().addingTimeInterval(timeout)
    while Date() < end {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return try await condition()
}

/// A value handed across threads once, by `offPool`, and used by one thread at a time.
struct HandedOver<Value>: @unchecked Sendable {
    let value: Value
}

/// Runs blocking work (starting processes and waiting for them) on a Dispatch thread, not the cooperative pool's.
func offPool<Value>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<HandedOver<Value>, Error>) in
        DispatchQueue.global().async { waiter.resume(with: Result { HandedOver(value: try work()) }) }
    }.value
}

/// The browser as a Handoff app (issue 14): `baton browse`, `baton browser-host` fed as a browser feeds it, and
/// `baton browser install`, against agent processes on loopback.
extension HandoffWorld {
    /// Two paired devices, laptop and desktop, each with its agent; the desktop's opens pages with `browserCommand`.
    /// Set up on a Dispatch thread (it waits for the processes it starts).
    static func browsing(browserCommand: String? = nil) async throws -> HandoffWorld {
        try await offPool { try settingUp(browserCommand: browserCommand) }
    }

    /// A browser's HOME of its own for the real-browser tests, with the XDG folders `baton browser install` writes to.
    func browserHome() -> (home: URL, environment: [String: String]) {
        let home = root.appendingPathComponent("home")
        let environment = [
            "HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
            "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path,
        ]
        return (home, environment)
    }

    /// Serves `pages` (file name: title) over HTTP on loopback with Python's http.server, a background process of
    /// this world; returns the base URL (`http://127.0.0.1:PORT/`).
    func servePages(_ pages: KeyValuePairs<String, String>) async throws -> String {
        let www = root.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        for (file, title) in pages {
            try Data("<html><head><title>\(title)</title></head><body>\(file)</body></html>".utf8).write(to: www.appendingPathComponent(file))
        }
        let server = try Background(
            try Requirement.python3.executable(), ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", www.path],
            log: root.appendingPathComponent("http.log")
        )
        background.append(server)
        try #require(await server.shows("Serving HTTP"), "\(server.output)")
        let serving = try #require(server.lines(containing: "Serving HTTP").first)
        let port = try #require(serving.split(separator: " ").compactMap { Int($0) }.first, "\(serving)")
        return "http://127.0.0.1:\(port)/"
    }

    private static func settingUp(browserCommand: String?) throws -> HandoffWorld {
        let world = try HandoffWorld()
        for name in ["laptop", "desktop"] { try world.device(name) }
        try world.pair("laptop", "desktop")
        try world.agent("laptop", apps: try world.apps("laptop"))
        try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"), extra: browserCommand.map { ["--browser-command", $0] } ?? [])
        return world
    }

    /// `baton browser-host` on `name`, as a browser starts it (the extension's origin as its argument).
    func browserHost(on name: String) async throws -> Background {
        let host = try Background(
            Baton.executable,
            ["browser-host", "--state", state(name), "chrome-extension://lkmiafdnghlcnikjkhphablnjalajmkh/"],
            log: root.appendingPathComponent("browser-host-\(name)-\(background.count).log")
        )
        background.append(host)
        try #require(await host.shows("connected to the agent"), "\(host.output)")
        return host
    }

    /// `baton browse URL --title TITLE` on the laptop, shown by the desktop; then the desktop continues it.
    func browseAndContinue(_ url: String, title: String) async throws -> Baton.Result {
        let browse = try Background(baton: ["browse", url, "--title", title, "--state", state("laptop")], log: root.appendingPathComponent("browse.log"))
        background.append(browse)
        #expect(try await settles(timeout: 8) { try await nearbyShows("desktop", title) }, "\(browse.output)")
        let desktop = state("desktop")
        let continued = try await offPool { try Baton.run("continue", "laptop", "--state", desktop) }
        #expect(continued.status == 0, "\(continued.output)")
        return continued
    }

    /// `name`'s nearby list as `baton nearby` prints it, run off the cooperative pool.
    func nearbyList(_ name: String) async throws -> String {
        let folder = state(name)
        return try await offPool { try Baton.run("nearby", "--state", folder).stdout }
    }

    /// Whether `name`'s nearby list shows `text`.
    func nearbyShows(_ name: String, _ text: String) async throws -> Bool {
        try await nearbyList(name).contains(text)
    }
}

extension Background {
    /// Whether the output comes to contain `text` within `timeout` seconds (false at once when the process ended).
    func shows(_ text: String, timeout: Double = 10) async -> Bool {
        await settles(timeout: timeout) { output.contains(text) || !process.isRunning } && output.contains(text)
    }

    /// Whether the process ends within `timeout` seconds.
    func exits(timeout: Double) async -> Bool {
        await settles(timeout: timeout) { !process.isRunning }
    }

    /// Writes `json` as one native message (4-byte little-endian length, then the bytes), as a browser does.
    func sendNative(_ json: String) {
        let body = Data(json.utf8)
        let length = UInt32(body.count)
        input.fileHandleForWriting.write(Data([UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)]) + body)
    }

    static func tab(_ url: String, _ title: String, incognito: Bool = false) -> String {
        let object: [String: Any] = ["type": "tab", "url": url, "title": title, "incognito": incognito]
        return String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }
}

@Suite("The browser as a Handoff app: baton browse, the host fed as a browser feeds it, install, a real Chromium and a real Firefox (issue 14: E1, E2, E3, A5, A9)", .serialized)
struct BrowserCLITests {
    @Test("E3: baton browse URL --title T is offered to the other device, which shows T; SIGINT resigns it and exits 0")
    func browseOffersAPage() async throws {
        let world = try await HandoffWorld.browsing()
        let refused = try Baton.run("browse", "file:///etc/passwd", "--state", world.state("laptop"))
        #expect(refused.status != 0 && refused.stderr.contains("not an http or https URL"), "\(refused.output)")

        let browse = try Background(baton: ["browse", "https://example.com/recipes/42", "--title", "Lemon tart", "--state", world.state("laptop")], log: world.root.appendingPathComponent("browse.log"))
        world.background.append(browse)
        try #require(await browse.shows("offering https://example.com/recipes/42"), "\(browse.output)")
        let started = Date()
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Lemon tart") }, "\(world.agents.values.map(\.output).joined(separator: "\n"))")
        print("figure: baton browse to the other device's nearby list: \(Int(Date().timeIntervalSince(started) * 1000)) ms")
        #expect(try await world.nearbyList("desktop").contains("(web page)"), "the list names what it is: a web page, for the browser or an approved app")
        browse.signal(SIGINT)
        #expect(await browse.exits(timeout: 5), "baton browse did not stop on SIGINT")
        #expect(browse.process.terminationStatus == 0, "\(browse.output)")
        #expect(browse.output.contains("stopped offering"))
        #expect(try await settles(timeout: 8) { try await !world.nearbyShows("desktop", "Lemon tart") }, "the page was still offered after SIGINT")

        let laptop = world.state("laptop")
        let timed = try await offPool { try Baton.run("browse", "https://example.com/", "--seconds", "0.5", "--state", laptop) }
        #expect(timed.status == 0 && timed.stdout.contains("stopped offering https://example.com/"), "\(timed.output)")
    }

    @Test("the host offers the focused tab, follows switches and titles, never a private window or a file: or chrome: page; none and EOF resign (A5, A9)")
    func hostFollowsTheFocusedTab() async throws {
        let world = try await HandoffWorld.browsing()
        let host = try await world.browserHost(on: "laptop")
        var started = Date()
        host.sendNative(Background.tab("http://127.0.0.1:1/alpha", "Page Alpha"))
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Alpha") }, "\(host.output)")
        print("figure: tab message to the other device's nearby list: \(Int(Date().timeIntervalSince(started) * 1000)) ms")
        started = Date()
        host.sendNative(Background.tab("http://127.0.0.1:1/beta", "Page Beta"))
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Beta") }, "\(host.output)")
        print("figure: tab switch to the other device's nearby list: \(Int(Date().timeIntervalSince(started) * 1000)) ms")

        // A5: a private window's tab hides the page; its own title is never shown.
        host.sendNative(Background.tab("https://bank.example/secret", "Private Secret", incognito: true))
        #expect(try await settles(timeout: 8) { try await !world.nearbyShows("desktop", "Page Beta") }, "\(host.output)")
        host.sendNative(Background.tab("file:///home/me/notes.txt", "Local Notes"))
        host.sendNative(Background.tab("chrome://settings/", "Settings Page"))
        #expect(await host.shows("chrome:"), "\(host.output)")
        let hidden = try await world.nearbyList("desktop")
        #expect(!hidden.contains("Private Secret") && !hidden.contains("Local Notes") && !hidden.contains("Settings Page"), "\(hidden)")

        // Garbage in between: logged, nothing offered, the host keeps going.
        host.sendNative("{not json")
        host.sendNative(#"{"type":"focus"}"#)
        host.sendNative(Background.tab("https://example.com/gamma", "Page Gamma"))
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Gamma") }, "\(host.output)")
        #expect(host.output.contains("nativeMessageNotJSON") && host.output.contains("nativeMessageUnknownType"), "\(host.output)")

        host.sendNative(#"{"type":"none"}"#)
        #expect(try await settles(timeout: 8) { try await !world.nearbyShows("desktop", "Page Gamma") }, "none did not resign: \(host.output)")
        host.sendNative(Background.tab("https://example.com/delta", "Page Delta"))
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Delta") }, "\(host.output)")

        // The browser quits: its end of the pipe closes.
        try host.input.fileHandleForWriting.close()
        #expect(await host.exits(timeout: 5), "the host did not exit at the end of its input")
        #expect(host.process.terminationStatus == 0, "\(host.output)")
        #expect(try await settles(timeout: 8) { try await !world.nearbyShows("desktop", "Page Delta") }, "EOF did not resign")
    }

    @Test("E2: a page continued to a device whose browser extension is connected arrives as an open message on the host's stdout")
    func continuedPageOpensAsATab() async throws {
        let world = try await HandoffWorld.browsing(browserCommand: "/bin/false")
        let host = try await world.browserHost(on: "desktop")
        let continued = try await world.browseAndContinue("https://example.com/recipes/42", title: "Lemon tart")
        #expect(continued.stdout.contains("new tab in the running browser (E2)"), "\(continued.output)")
        #expect(await host.shows(#"{"type":"open","url":"https://example.com/recipes/42"}"#), "\(host.output)")

        // A browser shutting down may SIGTERM its hosts rather than close their input: the host still ends cleanly.
        host.signal(SIGTERM)
        #expect(await host.exits(timeout: 5), "the host did not stop on SIGTERM")
        #expect(host.process.terminationStatus == 0 && host.output.contains("stopped by signal"), "\(host.output)")
    }

    @Test("E1: with no browser extension connected, the page goes to the agent's browser command; never launching the host")
    func continuedPageGoesToTheDefaultBrowser() async throws {
        let record = try Baton.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: record) }
        let script = record.appendingPathComponent("open.sh")
        let opened = record.appendingPathComponent("opened")
        try Data("#!/bin/sh\necho \"$1\" >> '\(opened.path)'\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        let world = try await HandoffWorld.browsing(browserCommand: script.path)
        let continued = try await world.browseAndContinue("https://example.com/recipes/7", title: "Plum cake")
        #expect(continued.stdout.contains("the default browser (E1)"), "\(continued.output)")
        #expect(await settles(timeout: 5) { (try? String(contentsOf: opened, encoding: .utf8)) == "https://example.com/recipes/7\n" })
        #expect(world.agents["desktop"]?.lines(containing: "launched").isEmpty == true)
    }

    @Test("browser install writes each browser's host manifest, the wrapper and the extension into HOME and XDG folders; --uninstall removes them")
    func install() async throws {
        try await startingProcesses {
            let home = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: home) }
            let environment = ["HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "XDG_DATA_HOME": home.appendingPathComponent("data").path]
            let profile = home.appendingPathComponent("profile")
            let result = try Baton.run(["browser", "install", "--state", home.appendingPathComponent("state").path, "--user-data-dir", profile.path], environment: environment)
            #expect(result.status == 0, "\(result.output)")
            #expect(result.stdout.contains("Load unpacked") && result.stdout.contains("Load Temporary Add-on"), "\(result.stdout)")
            let manifests = [
                ("config/chromium/NativeMessagingHosts", "allowed_origins"), ("config/google-chrome/NativeMessagingHosts", "allowed_origins"),
                (".mozilla/native-messaging-hosts", "allowed_extensions"), ("profile/NativeMessagingHosts", "allowed_origins"),
            ]
            let wrapper = home.appendingPathComponent("data/baton/browser-host")
            for (folder, key) in manifests {
                let data = try Data(contentsOf: home.appendingPathComponent(folder).appendingPathComponent("org.baton.browser.json"))
                let manifest = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
                #expect(manifest["name"] as? String == "org.baton.browser")
                #expect(manifest["type"] as? String == "stdio")
                #expect(manifest["path"] as? String == wrapper.path)
                let allowed = try #require(manifest[key] as? [String], "\(folder)")
                #expect(allowed == [key == "allowed_origins" ? "chrome-extension://lkmiafdnghlcnikjkhphablnjalajmkh/" : "browser@baton.org"])
            }
            let script = try String(contentsOf: wrapper, encoding: .utf8)
            #expect(script.contains("'\(Baton.executable.resolvingSymlinksInPath().path)' 'browser-host' '--state' '\(home.appendingPathComponent("state").path)' \"$@\""), "\(script)")
            #expect(FileManager.default.isExecutableFile(atPath: wrapper.path))
            let copied = home.appendingPathComponent("data/baton/browser-extension")
            for name in ["manifest.json", "background.js"] {
                #expect(try Data(contentsOf: copied.appendingPathComponent(name)) == Data(contentsOf: Baton.packageRoot.appendingPathComponent("Browser/extension/\(name)")), "\(name) differs from Browser/extension: run scripts/embed-extension.sh")
            }

            let removed = try Baton.run(["browser", "install", "--uninstall", "--user-data-dir", profile.path], environment: environment)
            #expect(removed.status == 0, "\(removed.output)")
            for (folder, _) in manifests {
                #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent(folder).appendingPathComponent("org.baton.browser.json").path))
            }
            #expect(!FileManager.default.fileExists(atPath: wrapper.path) && !FileManager.default.fileExists(atPath: copied.path))

            // Only the browsers found here when none is named.
            try FileManager.default.removeItem(at: home.appendingPathComponent("config"))
            try FileManager.default.createDirectory(at: home.appendingPathComponent(".mozilla"), withIntermediateDirectories: true)
            let found = try Baton.run(["browser", "install"], environment: environment)
            #expect(found.status == 0 && found.stdout.contains("(firefox)") && !found.stdout.contains("(chromium)"), "\(found.output)")
        }
    }

    @Test("the extension's Chromium id is the one its manifest key gives, and the one install allows", .requires(.python3))
    func extensionID() async throws {
        try await startingProcesses {
            let manifest = Baton.packageRoot.appendingPathComponent("Browser/extension/manifest.json").path
            let python = try Baton.run(
                ["-c", "import json,base64,hashlib,sys; k=base64.b64decode(json.load(open(sys.argv[1]))['key']); print(''.join(chr(97+int(c,16)) for c in hashlib.sha256(k).hexdigest()[:32]))", manifest],
                executable: try Requirement.python3.executable()
            )
            #expect(python.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "lkmiafdnghlcnikjkhphablnjalajmkh", "\(python.output)")
        }
    }
}
