import Foundation

/// Everything from outside the package that Baton's tests use, each with the Debian packages that bring it. Keep it in
/// step with `scripts/test-deps.sh`, which installs them all (CI runs it, then the tests with BATON_TEST_REQUIRE_ALL=1).
extension Requirement {
    /// Python 3, the interpreter: plistlib (an independent property-list implementation), servers and clients written
    /// in Python. Debian's first, whose modules the D-Bus tests need. The toolchain's documented packages bring
    /// libpython3-dev, the library, not the interpreter.
    public static let python3 = Requirement("python3", programs: ["/usr/bin/python3", "python3"], packages: ["python3"])

    /// Debian's Python 3 with dbus-python and GLib: the stand-in notification server on a test session bus.
    public static let pythonDBus = Requirement("python3-dbus", programs: ["/usr/bin/python3", "python3"], packages: ["python3-dbus", "python3-gi"]) {
        python in
        let imports = "import dbus, dbus.service, dbus.mainloop.glib; from gi.repository import GLib"
        guard let python, let result = Requirement.run(python, ["-c", imports]) else { return "cannot run python3" }
        return result.status == 0 ? nil : "\(python) cannot import dbus and gi: \(result.output.suffix(300))"
    }

    /// libsystemd's sd-bus, which the agent loads at run time (issue 24): the sd-bus message bridge's tests (issue 28
    /// item 1) use it directly.
    public static let libsystemd = Requirement("libsystemd0", packages: ["libsystemd0"]) { _ in
        guard let handle = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL) else { return "cannot load libsystemd.so.0" }
        dlclose(handle)
        return nil
    }

    /// A session bus of the test's own, for desktop notifications (issue 16).
    public static let dbusDaemon = Requirement("dbus-daemon", programs: ["dbus-daemon"], packages: ["dbus-daemon"])

    /// mpv with Debian's MPRIS plugin, which mpv loads from /etc/mpv/scripts: a real media player (issue 27 item 1).
    public static let mpvMPRIS = Requirement("mpv-mpris", label: "mpv with mpv-mpris", programs: ["mpv"], packages: ["mpv", "mpv-mpris"]) { _ in
        FileManager.default.fileExists(atPath: "/etc/mpv/scripts/mpris.so") ? nil : "no /etc/mpv/scripts/mpris.so (mpv-mpris)"
    }

    /// playerctl: an independent witness of a media player's status and position on the bus.
    public static let playerctl = Requirement("playerctl", programs: ["playerctl"], packages: ["playerctl"])

    /// sox: audio files for a media player to play.
    public static let sox = Requirement("sox", programs: ["sox"], packages: ["sox"])

    /// GTK 3 through Debian's python3-gi: GTK's own RecentManager writes recently-used.xbel (issue 27 item 2).
    public static let gtk = Requirement("python3-gi", label: "python3-gi with GTK 3", programs: ["/usr/bin/python3"], packages: ["python3-gi", "gir1.2-gtk-3.0"]) {
        python in
        let imports = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
        guard let python, let result = Requirement.run(python, ["-c", imports]) else { return "cannot run python3" }
        return result.status == 0 ? nil : "\(python) cannot import Gtk 3 from gi: \(result.output.suffix(300))"
    }

    /// GTK 4 through Debian's python3-gi: Recipes, the example app in Python (issue 28 item 5).
    public static let gtk4 = Requirement("gir1.2-gtk-4.0", label: "python3-gi with GTK 4", programs: ["/usr/bin/python3"], packages: ["python3-gi", "gir1.2-gtk-4.0"]) {
        python in
        let imports = "import gi; gi.require_version('Gtk', '4.0'); from gi.repository import Gtk"
        guard let python, let result = Requirement.run(python, ["-c", imports]) else { return "cannot run python3" }
        return result.status == 0 ? nil : "\(python) cannot import Gtk 4 from gi: \(result.output.suffix(300))"
    }

    /// ImageMagick's `import`: a screenshot of an X display, into the test output folder.
    public static let imagemagick = Requirement("import", label: "ImageMagick's import", programs: ["import"], packages: ["imagemagick"])

    /// `xwininfo`: the windows on an X display, by title, as X itself has them.
    public static let xwininfo = Requirement("xwininfo", programs: ["xwininfo"], packages: ["x11-utils"])

    /// xvfb-run: an X server of its own for the one GTK program it runs (GTK will not start without a display).
    public static let xvfbRun = Requirement("xvfb-run", programs: ["xvfb-run"], packages: ["xvfb", "xauth"])

    /// openssl, an independent signer and TLS client: CMS-signed association files, a stranger's TLS handshake.
    public static let openssl = Requirement("openssl", programs: ["openssl"], packages: ["openssl"])

    /// nginx, the HTTPS server of the association-file tests (scripts/aasa-test-server.sh; it needs openssl and
    /// python3 too).
    public static let nginx = Requirement("nginx", programs: ["nginx"], packages: ["nginx-light"])

    /// curl: Chromium's DevTools endpoints, Syncthing's REST API (scripts/syncthing-pair.sh).
    public static let curl = Requirement("curl", programs: ["curl"], packages: ["curl"])

    /// A real Chromium with the extension (issue 14).
    public static let chromium = Requirement("chromium", programs: ["chromium", "chromium-browser", "google-chrome"], packages: ["chromium"])

    /// A real Firefox ESR with the extension as an unsigned .xpi (issue 14).
    public static let firefox = Requirement("firefox", programs: ["firefox-esr", "firefox"], packages: ["firefox-esr"])

    /// An X server of the test's own, for a Chromium whose headless mode does not load the extension.
    public static let xvfb = Requirement("Xvfb", programs: ["Xvfb"], packages: ["xvfb"])

    /// Syncthing, which syncs the folders of the synced-folders tests (issue 16; C9).
    public static let syncthing = Requirement("syncthing", programs: ["syncthing"], packages: ["syncthing"])

    /// systemd's own check of the user unit scripts/install.sh writes.
    public static let systemdAnalyze = Requirement("systemd-analyze", programs: ["systemd-analyze"], packages: ["systemd"])

    /// nftables' `nft`: a firewall rule, in a test's own network namespace, that makes the agent's sends fail (EPERM).
    public static let nftables = Requirement("nft", programs: ["nft"], packages: ["nftables"])

    /// libfaketime's `faketime`: an agent whose wall clock is 10 minutes off (scripts/faults.py skew).
    public static let faketime = Requirement("faketime", programs: ["faketime"], packages: ["faketime"])

    /// Root, for what only root may do (make files as another user). No package brings it.
    public static let root = Requirement("root", packages: [], advice: "run the tests as root") { _ in
        getuid() == 0 ? nil : "the tests run as uid \(getuid())"
    }

    /// Multi-host LANs of network namespaces (scripts/netns.sh): root, iproute2 and procps, and a kernel that allows
    /// bridges, veth pairs and namespaced sysctls (some containers do not); `netns.sh check` says which is missing.
    public static let networkNamespaces = Requirement(
        "netns", label: "network namespaces (root)", programs: ["ip"], packages: ["iproute2", "procps"], advice: "run the tests as root"
    ) { _ in
        guard getuid() == 0 else { return "needs root to make network namespaces (the tests run as uid \(getuid()))" }
        let script = Requirement.packageRoot.appendingPathComponent("scripts/netns.sh").path
        guard let check = Requirement.run("/bin/bash", [script, "check"]) else { return "cannot run \(script)" }
        switch check.status {
        case 0: return nil
        default: return check.output.trimmingCharacters(in: .whitespacesAndNewlines) + " (netns.sh check exited \(check.status))"
        }
    }

    /// The package's folder (this file is Tests/Support/Requirement+Catalog.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs a probe to its end: its status and what it printed, or nil where it cannot start.
    static func run(_ program: String, _ arguments: [String]) -> (status: Int32, output: String)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
