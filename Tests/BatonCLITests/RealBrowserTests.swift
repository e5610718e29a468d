import BatonTestSupport
import Foundation
import Testing

/// Chromium from Debian's packages with the unpacked extension and the host manifest `baton browser install` wrote,
/// in a profile and HOME of the test's own (issue 14, "Show": a real browser).
///
/// Chromium 156 headless (`--headless=new`) loads an unpacked extension given `--load-extension` once
/// `DisableLoadExtensionCommandLineSwitch` is turned off, starts its service worker, and runs the native messaging
/// host named in `USER_DATA_DIR/NativeMessagingHosts`; its one window counts as focused. So no Xvfb is needed; a
/// Chromium whose headless mode does not is run headed under an Xvfb of the test's own instead. Driven over the
/// DevTools HTTP endpoints (`/json/new`, `/json/activate`), which need no websocket.
final class RealBrowser {
    let process: Process
    let log: URL
    let profile: URL
    private var port: Int?

    init(executable: String, profile: URL, extensionFolder: URL, home: URL, firstPage: String, display: String? = nil, log: URL) throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        self.process = process
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = (display == nil ? ["--headless=new"] : []) + [
            "--no-sandbox", "--user-data-dir=\(profile.path)", "--no-first-run", "--no-default-browser-check",
            "--disable-gpu", "--disable-dev-shm-usage", "--password-store=basic", "--remote-debugging-port=0",
            "--disable-features=DisableLoadExtensionCommandLineSwitch", "--load-extension=\(extensionFolder.path)", firstPage,
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(["HOME": home.path, "DISPLAY": display ?? ""]) { $1 }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.profile = profile
    }

    /// The DevTools port, once Chromium has opened it (it writes `DevToolsActivePort` in the profile).
    /// - Throws: ``BrowserUnavailable`` when it has not within 15 s, or Chromium ended.
    func devtoolsPort() async throws -> Int {
        if let port { return port }
        let portFile = profile.appendingPathComponent("DevToolsActivePort")
        var found: Int?
        _ = await settles(timeout: 15) {
            found = (try? String(contentsOf: portFile, encoding: .utf8))?.split(separator: "\n").first.flatMap { Int($0) }
            return found != nil || !process.isRunning
        }
        guard let found else {
            kill()
            throw BrowserUnavailable(reason: "Chromium did not open its DevTools port: \((try? String(contentsOf: log, encoding: .utf8))?.suffix(2000) ?? "")")
        }
        port = found
        return found
    }

    struct BrowserUnavailable: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// A DevTools HTTP request; its body.
    @discardableResult
    func devtools(_ path: String, method: String = "GET") async throws -> String {
        let port = try await devtoolsPort()
        let arguments = ["-s", "-X", method, "--max-time", "5", "http://127.0.0.1:\(port)\(path)"]
        let curl = try Requirement.curl.executable()
        return try await offPool { try Baton.run(arguments, executable: curl).stdout }
    }

    /// The page targets: id by title.
    func pages() async throws -> [String: String] {
        let data = Data(try await devtools("/json/list").utf8)
        let targets = (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
        var pages: [String: String] = [:]
        for target in targets where target["type"] as? String == "page" {
            if let title = target["title"] as? String, let id = target["id"] as? String { pages[title] = id }
        }
        return pages
    }

    /// SIGTERM (Chromium closes its windows, and its hosts' input), SIGKILL after 5 s; reaped.
    func quit() async {
        guard process.isRunning else { return }
        process.terminate()
        if !(await settles(timeout: 5) { !process.isRunning }) { kill() }
        process.waitUntilExit()
    }

    /// SIGKILL and reaped at once: for the paths a test leaves early.
    func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// An X server of the test's own, on a display number nobody uses.
final class VirtualDisplay {
    let server: Background
    let display: String

    private init(server: Background, display: String) {
        self.server = server
        self.display = display
    }

    /// Xvfb on a free display number, once its socket is there; nil when it cannot start. Where Xvfb is not installed,
    /// ends the test as skipped, naming the package (failed under BATON_TEST_REQUIRE_ALL=1).
    static func start(log: URL) async throws -> VirtualDisplay? {
        let xvfb = try Requirement.xvfb.executable()
        guard let number = (90..<190).first(where: { !FileManager.default.fileExists(atPath: "/tmp/.X\($0)-lock") }) else { return nil }
        guard let server = try? Background(xvfb, [":\(number)", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], log: log) else {
            return nil
        }
        guard await settles(timeout: 5, { FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") }) else {
            server.kill()
            return nil
        }
        return VirtualDisplay(server: server, display: ":\(number)")
    }

    /// Ends the X server (SIGKILL: it holds nothing worth a clean exit), reaped.
    func stop() {
        server.kill()
    }
}

/// In the same serialized suite as the other browser tests: at most one of them runs at a time.
extension BrowserCLITests {
    @Test(
        "the agent's current activity follows Chromium's focused tab; the other device's nearby shows its title; a page continued here opens as a new tab (E2); a killed host is replaced; quitting resigns it",
        .requires(.chromium, .curl, .python3)
    )
    func chromiumFollowsTheFocusedTab() async throws {
        let chromium = try Requirement.chromium.executable().path
        let world = try await HandoffWorld.browsing()
        let (home, environment) = world.browserHome()
        let profile = world.root.appendingPathComponent("profile")
        let installed = try Baton.run(["browser", "install", "--browser", "chromium", "--state", world.state("laptop"), "--user-data-dir", profile.path], environment: environment)
        try #require(installed.status == 0, "\(installed.output)")

        let site = try await world.servePages(["a.html": "Page Alpha", "b.html": "Page Beta", "c.html": "Page Gamma"])
        let alpha = site + "a.html"
        let beta = site + "b.html"

        var started = Date()
        let laptop = try #require(world.agents["laptop"])
        func launch(display: String?) throws -> RealBrowser {
            try RealBrowser(
                executable: chromium, profile: profile, extensionFolder: home.appendingPathComponent(".local/share/baton/browser-extension"),
                home: home, firstPage: alpha, display: display, log: world.root.appendingPathComponent("chromium-\(display ?? "headless").log")
            )
        }
        var running: RealBrowser?
        var screen: VirtualDisplay?
        defer {
            running?.kill()
            screen?.stop()
        }
        let browser: RealBrowser
        do {
            // BATON_TEST_BROWSER_XVFB=1 goes straight to a headed Chromium under Xvfb (to check that path).
            if ProcessInfo.processInfo.environment["BATON_TEST_BROWSER_XVFB"] == nil {
                let headless = try launch(display: nil)
                _ = try await headless.devtoolsPort()
                if await settles(timeout: 15, { laptop.output.contains("app org.baton.browser connected") }) {
                    running = headless
                } else {
                    await headless.quit()
                    print("headless Chromium did not start the extension's host; running it headed under Xvfb")
                }
            }
            if running == nil {
                screen = try await VirtualDisplay.start(log: world.root.appendingPathComponent("xvfb.log"))
                guard let display = screen?.display else {
                    try Requirement.xvfb.unusable("headless Chromium did not start the extension's host, and Xvfb cannot start here")
                }
                started = Date()
                running = try launch(display: display)
                _ = try await running?.devtoolsPort()
            }
            browser = try #require(running)
        } catch let error as RealBrowser.BrowserUnavailable {
            try Requirement.chromium.unusable("Chromium cannot start here: \(error)")
        }
        #expect(try await settles(timeout: 15) { try await world.nearbyShows("desktop", "Page Alpha") }, "\(laptop.output)\n\((try? String(contentsOf: browser.log, encoding: .utf8))?.suffix(3000) ?? "")")
        print("figure: Chromium start to the other device's nearby list: \(Int(Date().timeIntervalSince(started) * 1000)) ms")

        var switched = Date()
        try await browser.devtools("/json/new?\(beta)", method: "PUT")
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Beta") })
        print("figure: new tab to the other device's nearby list: \(Int(Date().timeIntervalSince(switched) * 1000)) ms")
        let alphaID = try #require(try await browser.pages()["Page Alpha"])
        switched = Date()
        try await browser.devtools("/json/activate/\(alphaID)")
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Alpha") })
        print("figure: tab switch to the other device's nearby list: \(Int(Date().timeIntervalSince(switched) * 1000)) ms")

        // E2: a page offered by the other device, continued here, opens as a new tab in this running Chromium (the
        // extension's "open"), and, focused, becomes this device's current activity in turn.
        let gamma = site + "c.html"
        let desktop = world.state("desktop")
        let offer = try Background(baton: ["browse", gamma, "--title", "Offered Gamma", "--state", desktop], log: world.root.appendingPathComponent("browse.log"))
        world.background.append(offer)
        #expect(try await settles(timeout: 8) { try await world.nearbyList("laptop").contains("Offered Gamma") }, "\(offer.output)")
        let continuedAt = Date()
        let laptopState = world.state("laptop")
        let continued = try await offPool { try Baton.run("continue", "--state", laptopState) }
        #expect(continued.status == 0 && continued.stdout.contains("a new tab in the running browser (E2)"), "\(continued.output)")
        #expect(try await settles(timeout: 8) { try await browser.pages()["Page Gamma"] != nil }, "the continued page did not open in Chromium")
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Gamma") }, "the opened tab did not become current")
        print("figure: continue to the tab open in Chromium and offered back: \(Int(Date().timeIntervalSince(continuedAt) * 1000)) ms")
        offer.stop()

        // The host dies (killed, say): the extension starts another within its back-off, and the page is offered again.
        let hosts = { laptop.lines(containing: "app org.baton.browser connected (pid ").compactMap { line in
            line.range(of: "(pid ").flatMap { pid_t(line[$0.upperBound...].prefix { $0.isNumber }) }
        } }
        let first = try #require(hosts().last)
        kill(first, SIGKILL)
        let restartedAt = Date()
        #expect(await settles(timeout: 10) { hosts().count >= 2 }, "the extension did not start its host again: \(laptop.output)")
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Page Gamma") })
        print("figure: a killed host replaced and the page offered again: \(Int(Date().timeIntervalSince(restartedAt) * 1000)) ms")

        await browser.quit()
        #expect(try await settles(timeout: 8) { try await world.nearbyList("desktop").contains("Nothing nearby") }, "quitting Chromium did not resign the page")
        print("figure: the whole Chromium test: \(Int(Date().timeIntervalSince(started) * 1000)) ms")
    }
}
