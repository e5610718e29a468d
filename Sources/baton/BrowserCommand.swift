import ArgumentParser
import BatonAgent
import BatonClient
import Foundation

struct BrowserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browser",
        abstract: "Set up your web browsers as a Handoff app (the Baton extension and its host).",
        subcommands: [BrowserInstallCommand.self]
    )
}

/// A browser `baton browser install` knows: where it looks for native messaging host manifests, and how it names
/// the extension allowed to talk to the host.
enum BrowserKind: String, CaseIterable, ExpressibleByArgument, Sendable {
    case chromium
    case chrome
    case firefox

    /// The Chromium extension id of Browser/extension: fixed by the public key in its manifest (the first 32 hex
    /// digits of the SHA-256 of the key, written with a-p).
    static let chromiumExtensionID = "lkmiafdnghlcnikjkhphablnjalajmkh"
    /// The Firefox add-on id, `browser_specific_settings.gecko.id` in the manifest.
    static let firefoxExtensionID = "browser@baton.org"

    /// The browser's own folder (its presence says the browser has run here), and its manifests' folder in it.
    func folders(home: URL, configHome: URL) -> (browser: URL, manifests: URL) {
        switch self {
        case .chromium:
            let folder = configHome.appendingPathComponent("chromium")
            return (folder, folder.appendingPathComponent("NativeMessagingHosts"))
        case .chrome:
            let folder = configHome.appendingPathComponent("google-chrome")
            return (folder, folder.appendingPathComponent("NativeMessagingHosts"))
        case .firefox:
            // Firefox reads ~/.mozilla whatever XDG_CONFIG_HOME says.
            let folder = home.appendingPathComponent(".mozilla")
            return (folder, folder.appendingPathComponent("native-messaging-hosts"))
        }
    }

    /// The host manifest for this browser, running `wrapper`.
    func manifest(wrapper: URL) -> [String: Any] {
        var manifest: [String: Any] = [
            "name": BuiltInBrowser.bundleIdentifier,
            "description": "Baton Handoff: the focused tab as this device's current activity",
            "path": wrapper.path,
            "type": "stdio",
        ]
        switch self {
        case .chromium, .chrome: manifest["allowed_origins"] = ["chrome-extension://\(Self.chromiumExtensionID)/"]
        case .firefox: manifest["allowed_extensions"] = [Self.firefoxExtensionID]
        }
        return manifest
    }

    /// How a person loads the extension in this browser.
    func howToLoad(_ extensionFolder: URL) -> String {
        switch self {
        case .chromium, .chrome:
            let program = self == .chromium ? "chromium" : "google-chrome"
            return """
                \(rawValue): open chrome://extensions, turn on Developer mode, Load unpacked: \(extensionFolder.path)
                  (or start it with: \(program) --disable-features=DisableLoadExtensionCommandLineSwitch --load-extension=\(extensionFolder.path))
                """
        case .firefox:
            return """
                firefox: open about:debugging#/runtime/this-firefox, Load Temporary Add-on: \(extensionFolder.path)/manifest.json
                  (Firefox forgets a temporary add-on when it quits: load it again after a restart; a signed .xpi is not provided yet)
                """
        }
    }
}

struct BrowserInstallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Install the native messaging host for the Baton browser extension, and the extension's files.",
        discussion: """
            Writes the host manifest org.baton.browser.json where each browser looks for it (Chromium: \
            $XDG_CONFIG_HOME/chromium/NativeMessagingHosts, Chrome: $XDG_CONFIG_HOME/google-chrome/NativeMessagingHosts, \
            Firefox: ~/.mozilla/native-messaging-hosts), pointing at a small script in $XDG_DATA_HOME/baton that runs \
            this `baton` as `baton browser-host` (a manifest cannot pass arguments). Copies the extension to \
            $XDG_DATA_HOME/baton/browser-extension and says how to load it. Without --browser: every browser whose \
            folder exists here, or all three when none does. With --state, the host talks to that state folder's \
            agent. With --uninstall: removes what install wrote.
            """
    )

    @OptionGroup var state: StateOptions

    @Option(name: .customLong("browser"), help: "A browser to set up: chromium, chrome or firefox (repeatable; default: those found here).")
    var browsers: [BrowserKind] = []

    @Option(help: ArgumentHelp("Also write the Chromium manifest into this browser profile folder (a --user-data-dir).", valueName: "dir"))
    var userDataDir: String?

    @Flag(help: "Remove the host manifests, the script and the extension's files instead.")
    var uninstall = false

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let home = URL(fileURLWithPath: environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory())
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil } ?? home.appendingPathComponent(".config")
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil } ?? home.appendingPathComponent(".local/share")
        let batonData = dataHome.appendingPathComponent("baton")
        let wrapper = batonData.appendingPathComponent("browser-host")
        let extensionFolder = batonData.appendingPathComponent("browser-extension")
        let manifestName = "\(BuiltInBrowser.bundleIdentifier).json"
        var chosen = browsers
        if chosen.isEmpty {
            chosen = BrowserKind.allCases.filter { FileManager.default.fileExists(atPath: $0.folders(home: home, configHome: configHome).browser.path) }
            if chosen.isEmpty { chosen = BrowserKind.allCases }
        }
        var manifests = chosen.map { ($0, $0.folders(home: home, configHome: configHome).manifests.appendingPathComponent(manifestName)) }
        if let userDataDir {
            let profile = URL(fileURLWithPath: userDataDir).standardizedFileURL
            manifests.append((.chromium, profile.appendingPathComponent("NativeMessagingHosts").appendingPathComponent(manifestName)))
        }
        let files = FileManager.default
        if uninstall {
            for (_, manifest) in manifests where files.fileExists(atPath: manifest.path) {
                try files.removeItem(at: manifest)
                say("removed \(manifest.path)")
            }
            for item in [wrapper, extensionFolder] where files.fileExists(atPath: item.path) {
                try files.removeItem(at: item)
                say("removed \(item.path)")
            }
            return
        }
        guard let baton = PeerCredentials.executable(of: getpid()) else {
            throw CommandLineError("cannot tell where this baton executable is (/proc/self/exe)")
        }
        try files.createDirectory(at: batonData, withIntermediateDirectories: true)
        var command = [baton, "browser-host"]
        if let folder = state.folder { command += ["--state", URL(fileURLWithPath: folder).standardizedFileURL.path] }
        let script = """
            #!/bin/sh
            # Written by `baton browser install`: the browsers start the org.baton.browser native messaging host with
            # arguments of their own, so this script adds ours.
            exec \(command.map(Self.shellQuoted).joined(separator: " ")) "$@"

            """
        try Data(script.utf8).write(to: wrapper, options: .atomic)
        try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper.path)
        say("wrote \(wrapper.path)")
        for (browser, manifest) in manifests {
            try files.createDirectory(at: manifest.deletingLastPathComponent(), withIntermediateDirectories: true)
            let data = try JSONSerialization.data(withJSONObject: browser.manifest(wrapper: wrapper), options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            try data.write(to: manifest, options: .atomic)
            say("wrote \(manifest.path) (\(browser.rawValue))")
        }
        if files.fileExists(atPath: extensionFolder.path) { try files.removeItem(at: extensionFolder) }
        try files.createDirectory(at: extensionFolder, withIntermediateDirectories: true)
        for file in browserExtensionFiles {
            try Data((file.contents + "\n").utf8).write(to: extensionFolder.appendingPathComponent(file.name), options: .atomic)
        }
        say("copied the extension to \(extensionFolder.path)")
        say("Load the extension (once per browser; the agent must be running: baton agent):")
        for browser in chosen { say("  " + browser.howToLoad(extensionFolder).replacingOccurrences(of: "\n", with: "\n  ")) }
    }

    /// `text` as one word for sh.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
