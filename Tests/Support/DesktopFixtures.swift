import Foundation
import Testing

/// What the desktop-source tests put on a device (issue 27 items 1 and 2): a media file and the player's desktop file,
/// an application that records what it was asked to open, and a document recorded as used by GTK's own code. Shared
/// by the in-process tests (MediaSourceTests, RecentDocumentsTests) and the two-host ones in network namespaces.
public enum DesktopFixtures {
    /// A 60 s tone titled "Sine Tone" by "Sox Band", made by sox at `file`.
    public static func tone(at file: URL) throws {
        let made = try run(
            try Requirement.sox.executable(),
            ["-n", "-r", "44100", "-c", "1", "--comment", "TITLE=Sine Tone", "--comment", "ARTIST=Sox Band", file.path, "synth", "60", "sine", "440"]
        )
        try #require(FileManager.default.fileExists(atPath: file.path), "sox made no file: \(made.output)")
    }

    /// `mpv.desktop` in `applications`: mpv as the player's desktop entry ("mpv") names it, with no window and no sound
    /// device (a test machine has neither).
    public static func installMPV(in applications: URL) throws {
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        try Data("[Desktop Entry]\nType=Application\nName=mpv Media Player\nExec=mpv --no-video --ao=null --no-terminal -- %U\n".utf8)
            .write(to: applications.appendingPathComponent("mpv.desktop"))
    }

    /// `ID.desktop` in `applications`, an application called `name` for `text/plain` whose Exec is `script ARGUMENTS`
    /// (`arguments` holds the field codes: "%f", "--view %U"); `script` (written here) puts each argument it is given
    /// on a line of `record`, so a test sees exactly what the application was asked to open.
    public static func installRecordingApplication(id: String, name: String, arguments: String, in applications: URL, script: URL, record: URL) throws {
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        try Data("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '\(record.path)'\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        try Data("[Desktop Entry]\nType=Application\nName=\(name)\nExec=\(script.path) \(arguments)\nMimeType=text/plain;\n".utf8)
            .write(to: applications.appendingPathComponent("\(id).desktop"))
    }

    /// What the application of ``installRecordingApplication(id:name:arguments:in:script:record:)`` was asked to open,
    /// once it has written `record` (its arguments, a line each); nil when it has not within `seconds`.
    public static func recordedArguments(_ record: URL, within seconds: Double = 5) async -> String? {
        let end = Date().addingTimeInterval(seconds)
        repeat {
            if let text = try? String(contentsOf: record, encoding: .utf8), !text.isEmpty { return text }
            try? await Task.sleep(for: .milliseconds(10))
        } while Date() < end
        return nil
    }

    /// GTK's own `Gtk.RecentManager` (Debian's python3-gi, under an X server of xvfb-run's) records `file` as used by
    /// the application `application` (a desktop file id), as a text/plain document, and waits (at most 5 s) until
    /// `$XDG_DATA_HOME/recently-used.xbel` exists. `environment` must give XDG_DATA_HOME and HOME. `launcher` is put
    /// before the command (`scripts/netns.sh exec PREFIX K` runs it in host K).
    public static func addRecentDocument(_ file: URL, application: String, environment: [String: String], launcher: [String] = []) throws -> (status: Int32, output: String) {
        let script = """
            import gi, os, sys
            gi.require_version('Gtk', '3.0')
            from gi.repository import Gtk, GLib
            m = Gtk.RecentManager.get_default()
            d = Gtk.RecentData()
            d.display_name = None; d.description = None
            d.mime_type = 'text/plain'; d.app_name = sys.argv[2]; d.app_exec = sys.argv[2] + ' %u'
            d.is_private = False
            assert m.add_full(GLib.filename_to_uri(sys.argv[1], None), d)
            loop = GLib.MainLoop()
            def written():
                if os.path.exists(os.path.join(os.environ['XDG_DATA_HOME'], 'recently-used.xbel')):
                    loop.quit(); return False
                return True
            GLib.timeout_add(5, written)
            GLib.timeout_add(5000, loop.quit)
            loop.run()
            """
        let command = [try Requirement.xvfbRun.executable().path, "-a", try Requirement.gtk.executable().path, "-c", script, file.path, application]
        let whole = launcher + command
        return try run(URL(fileURLWithPath: whole[0]), Array(whole.dropFirst()), environment: environment)
    }

    /// Runs `program` to its end with `environment` over this process's; its status and output (both streams), trimmed.
    public static func run(_ program: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        let output = Pipe()
        process.executableURL = program
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
