import BatonTestSupport
import Foundation
import Testing

/// Firefox ESR from Debian's packages with the extension `baton browser install` copied, packed as an unsigned
/// `.xpi` in a fresh profile of the test's own, and the host manifest it wrote in `HOME/.mozilla` (issue 14, "Show":
/// a real browser, the second one).
///
/// Firefox ESR honours `xpinstall.signatures.required=false`, and installs an add-on it finds as
/// `PROFILE/extensions/ID.xpi` at start-up once `extensions.autoDisableScopes` is 0; no web-ext, no about:debugging.
/// Headless (`--headless`), its one window counts as focused, so no Xvfb is needed. Firefox has none of Chromium's
/// DevTools HTTP endpoints, so the test does not switch tabs: it opens one page, has a page continued into it, and
/// quits it.
final class RealFirefox {
    let process: Process
    let log: URL

    /// What a fresh profile needs to start quietly, offline, with an unsigned add-on from its own folder enabled.
    static let preferences: [(String, String)] = [
        ("xpinstall.signatures.required", "false"),
        ("extensions.autoDisableScopes", "0"),
        ("extensions.enabledScopes", "15"),
        ("extensions.update.enabled", "false"),
        ("extensions.getAddons.cache.enabled", "false"),
        ("browser.shell.checkDefaultBrowser", "false"),
        ("browser.startup.homepage_override.mstone", "\"ignore\""),
        ("browser.aboutwelcome.enabled", "false"),
        ("startup.homepage_welcome_url", "\"\""),
        ("browser.sessionstore.resume_from_crash", "false"),
        ("browser.warnOnQuit", "false"),
        ("browser.warnOnQuitShortcut", "false"),
        ("browser.tabs.warnOnClose", "false"),
        ("datareporting.policy.dataSubmissionEnabled", "false"),
        ("datareporting.healthreport.uploadEnabled", "false"),
        ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
        ("toolkit.telemetry.enabled", "false"),
        ("app.update.enabled", "false"),
        ("app.normandy.enabled", "false"),
        ("network.captive-portal-service.enabled", "false"),
        ("network.connectivity-service.enabled", "false"),
        ("browser.safebrowsing.malware.enabled", "false"),
        ("browser.safebrowsing.phishing.enabled", "false"),
        ("browser.safebrowsing.downloads.enabled", "false"),
    ]

    /// A fresh profile folder: `user.js` with ``preferences``, and `extensionFolder` zipped (by Python's zipfile, the
    /// files at the archive's root) as `extensions/ID.xpi`.
    static func makeProfile(_ profile: URL, extensionFolder: URL, id: String, python: URL) throws {
        let extensions = profile.appendingPathComponent("extensions")
        try FileManager.default.createDirectory(at: extensions, withIntermediateDirectories: true)
        let userJS = preferences.map { "user_pref(\"\($0.0)\", \($0.1));\n" }.joined()
        try Data(userJS.utf8).write(to: profile.appendingPathComponent("user.js"))
        let zip = """
            import pathlib, sys, zipfile
            source = pathlib.Path(sys.argv[1])
            with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(source.rglob("*")):
                    if path.is_file(): archive.write(path, path.relative_to(source).as_posix())
            """
        let packed = try Baton.run(
            ["-c", zip, extensionFolder.path, extensions.appendingPathComponent("\(id).xpi").path], executable: python
        )
        guard packed.status == 0 else { throw RealBrowser.BrowserUnavailable(reason: "cannot pack the .xpi: \(packed.output)") }
    }

    init(executable: String, profile: URL, home: URL, firstPage: String, log: URL) throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        self.process = process
        // Through Python, which empties the signal mask and execs Firefox: the test runner blocks SIGTERM on its
        // threads, a child inherits that mask, and Firefox does not unblock it, so it would never see a SIGTERM.
        process.executableURL = try Requirement.python3.executable()
        process.arguments = [
            "-c", "import os, signal, sys; signal.signal(signal.SIGPIPE, signal.SIG_DFL); signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
            executable, "--headless", "--no-remote", "--profile", profile.path, firstPage,
        ]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
            "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path, "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
            "DISPLAY": "", "WAYLAND_DISPLAY": "", "MOZ_CRASHREPORTER_DISABLE": "1",
        ]) { $1 }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// SIGTERM (Firefox shuts down cleanly: it closes its hosts' input), SIGKILL after 10 s; reaped. Whether it
    /// ended by itself.
    @discardableResult
    func quit() async -> Bool {
        guard process.isRunning else { return true }
        process.terminate()
        let ended = await settles(timeout: 10) { !process.isRunning }
        if !ended { kill() }
        process.waitUntilExit()
        return ended
    }

    /// SIGKILL to Firefox and every process under it (content processes, the host), reaped: for the paths a test
    /// leaves early.
    func kill() {
        guard process.isRunning else { return }
        let pids = [process.processIdentifier] + Self.descendants(of: process.processIdentifier)
        for pid in pids { Foundation.kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// The processes under `root`, from /proc/PID/stat's parent field.
    static func descendants(of root: pid_t) -> [pid_t] {
        var parents: [pid_t: pid_t] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let close = stat.range(of: ")", options: .backwards)
            else { continue }
            let fields = stat[close.upperBound...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { parents[pid] = parent }
        }
        var found: [pid_t] = []
        var frontier = [root]
        while let next = frontier.popLast() {
            let children = parents.filter { $0.value == next }.map(\.key)
            found += children
            frontier += children
        }
        return found
    }
}

extension BrowserCLITests {
    @Test(
        "Firefox ESR, headless, with the extension as an unsigned .xpi: the other device's nearby shows its focused tab's title; a page continued here opens as a new tab (E2); quitting resigns it",
        .requires(.firefox, .python3)
    )
    func firefoxFollowsTheFocusedTab() async throws {
        let firefox = try Requirement.firefox.executable().path
        let world = try await HandoffWorld.browsing()
        let (home, environment) = world.browserHome()
        let profile = world.root.appendingPathComponent("firefox-profile")
        let laptopState = world.state("laptop")
        let installed = try await offPool {
            try Baton.run(["browser", "install", "--browser", "firefox", "--state", laptopState], environment: environment)
        }
        try #require(installed.status == 0, "\(installed.output)")
        // Where Firefox on Linux looks for a user's host manifests (whatever XDG_CONFIG_HOME says), naming the
        // extension by its gecko id.
        let manifestFile = home.appendingPathComponent(".mozilla/native-messaging-hosts/org.baton.browser.json")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestFile)) as? [String: Any], "\(installed.output)")
        #expect(manifest["name"] as? String == "org.baton.browser")
        #expect(manifest["type"] as? String == "stdio")
        #expect(manifest["allowed_extensions"] as? [String] == ["browser@baton.org"])
        #expect(FileManager.default.isExecutableFile(atPath: (manifest["path"] as? String) ?? ""))
        let extensionFolder = home.appendingPathComponent(".local/share/baton/browser-extension")
        let python = try Requirement.python3.executable()
        try await offPool { try RealFirefox.makeProfile(profile, extensionFolder: extensionFolder, id: "browser@baton.org", python: python) }

        let site = try await world.servePages(["a.html": "Page Alpha", "c.html": "Page Gamma"])
        let alpha = site + "a.html"

        let laptop = try #require(world.agents["laptop"])
        let started = Date()
        let browser = try RealFirefox(executable: firefox, profile: profile, home: home, firstPage: alpha, log: world.root.appendingPathComponent("firefox.log"))
        defer { browser.kill() }
        let connected = await settles(timeout: 30) { laptop.output.contains("app org.baton.browser connected") || !browser.process.isRunning }
        if !browser.process.isRunning && !laptop.output.contains("app org.baton.browser connected") {
            try Requirement.firefox.unusable("Firefox cannot start here (it exited with \(browser.process.terminationStatus)): \(browser.output.suffix(2000))")
        }
        try #require(connected, "Firefox did not start the extension's host within 30 s: \(browser.output.suffix(3000))\n\(laptop.output)")
        print("figure: Firefox start to its host connected: \(Int(Date().timeIntervalSince(started) * 1000)) ms")
        #expect(try await settles(timeout: 30) { try await world.nearbyShows("desktop", "Page Alpha") }, "\(laptop.output)\n\(browser.output.suffix(3000))")
        print("figure: Firefox start to the other device's nearby list: \(Int(Date().timeIntervalSince(started) * 1000)) ms")

        // E2: a page offered by the other device, continued here, opens as a new tab in the running Firefox (the
        // extension's "open"), and, focused, becomes this device's current activity: the desktop sees the page's own
        // title, not the offered one.
        let gamma = site + "c.html"
        let offer = try Background(baton: ["browse", gamma, "--title", "Offered Gamma", "--state", world.state("desktop")], log: world.root.appendingPathComponent("browse.log"))
        world.background.append(offer)
        #expect(try await settles(timeout: 8) { try await world.nearbyList("laptop").contains("Offered Gamma") }, "\(offer.output)")
        let continuedAt = Date()
        let continued = try await offPool { try Baton.run("continue", "--state", laptopState) }
        #expect(continued.status == 0 && continued.stdout.contains("a new tab in the running browser (E2)"), "\(continued.output)")
        #expect(try await settles(timeout: 10) { try await world.nearbyShows("desktop", "Page Gamma") }, "the continued page did not open and become current in Firefox: \(browser.output.suffix(3000))")
        print("figure: continue to the tab open in Firefox and offered back: \(Int(Date().timeIntervalSince(continuedAt) * 1000)) ms")
        offer.stop()

        let quitAt = Date()
        #expect(await browser.quit(), "Firefox did not end within 10 s of SIGTERM: \(browser.output.suffix(3000))")
        #expect(try await settles(timeout: 8) { try await world.nearbyList("desktop").contains("Nothing nearby") }, "quitting Firefox did not resign the page: \(laptop.output)")
        print("figure: Firefox quit to the other device's nearby list empty: \(Int(Date().timeIntervalSince(quitAt) * 1000)) ms")
        print("figure: the whole Firefox test: \(Int(Date().timeIntervalSince(started) * 1000)) ms")
    }
}
