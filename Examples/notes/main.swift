import Baton
import Foundation
import NotesKit

// Notes for Linux: a document-based example app (Examples/Notes.app points at this executable), a small line editor.
//
//   notes PATH [--line N]   open the note at PATH (a new one if the file does not exist) at line N: its activity
//                           becomes current (B5) and carries the line; prints "notes: opened PATH at line N"
//   notes                   wait for a continued note (B6: it opens at the path and line that came with it)
//
// Commands, one a line on standard input: N (go to line N), p (print the line), ,p (print all), a TEXT (add a line
// after), c TEXT (change the line), d (delete it), w (write the file), q (quit; twice with unwritten changes), h.
// `q`, the end of standard input, SIGTERM and SIGINT close the note: its activity is invalidated, so other devices
// stop offering it (B4, B5). Launched by the agent (BATON_LAUNCHED), Notes reads no commands (standard input is the
// agent's) and ends on SIGTERM or when the agent goes away.
//
// It connects to the agent named by BATON_AGENT_SOCKET (set when the agent launches it) or the default one, as
// BATON_BUNDLE_IDENTIFIER or org.baton.Notes. The document types come from the bundle's Info.plist beside the
// executable when it is run from its bundle, else from NotesKit's copy of them.

func say(_ line: String) {
    // Straight to the file descriptor, unbuffered: a test (or the agent's log) sees each line as it is said.
    FileHandle.standardOutput.write(Data("notes: \(line)\n".utf8))
}

/// What the main loop waits for.
enum Input: Sendable {
    case line(String)
    case endOfInput
    case signal(Int32)
    case agentGone
}

func usage() -> Int32 {
    say("usage: notes [PATH [--line N]]")
    return 2
}

@MainActor
func run() async -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())
    var line = 1
    if let flag = arguments.firstIndex(of: "--line") {
        guard flag + 1 < arguments.count, let number = Int(arguments[flag + 1]), number >= 1 else { return usage() }
        line = number
        arguments.removeSubrange(flag...flag + 1)
    }
    guard arguments.count <= 1, arguments.first?.hasPrefix("-") != true else { return usage() }
    let environment = ProcessInfo.processInfo.environment
    let application = BatonApplication.shared
    let bundlePlist = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("Info.plist")
    if FileManager.default.fileExists(atPath: bundlePlist.path) {
        try? application.loadDocumentTypes(fromInfoPlistAt: bundlePlist)
    }
    let notes = NotesApp(application: application, report: say)

    let (inputs, sink) = AsyncStream.makeStream(of: Input.self)
    // SIGTERM and SIGINT close the note before the process ends (B4, B5), rather than killing it with its activity.
    var sources: [DispatchSourceSignal] = []
    for number in [SIGTERM, SIGINT] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { sink.yield(.signal(number)) }
        source.resume()
        sources.append(source)
    }
    defer { sources.forEach { $0.cancel() } }

    do {
        try await application.connect(bundleIdentifier: environment["BATON_BUNDLE_IDENTIFIER"] ?? notesBundleIdentifier)
    } catch {
        say("cannot connect: \(error)")
        return 1
    }
    say("connected to \(application.deviceName ?? "?")")
    if let path = arguments.first {
        do {
            try notes.open(path, line: line)
        } catch {
            say("cannot open \(path): \(error)")
            return 1
        }
    }
    if environment["BATON_LAUNCHED"] == nil {
        Thread.detachNewThread {
            while let text = readLine() { sink.yield(.line(text)) }
            sink.yield(.endOfInput)
        }
    }
    let watcher = Task { @MainActor in
        while application.isConnected {
            try? await Task.sleep(for: .milliseconds(50))
        }
        sink.yield(.agentGone)
    }
    defer { watcher.cancel() }

    for await input in inputs {
        switch input {
        case .line(let text):
            if !notes.handle(text) {
                application.disconnect()
                return 0
            }
        case .endOfInput, .signal:
            notes.close()
            application.disconnect()
            return 0
        case .agentGone:
            say("the agent went away")
            notes.close()
            return 0
        }
    }
    return 0
}

// The main actor on the first thread for the app's whole life (issue 25 item 5): not an async main, which would run
// it on a worker thread after the first await.
BatonApplication.main { exit(await run()) }
