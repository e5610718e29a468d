import Baton
import BatonAppleNames
import Foundation
import ShopSnapKit

// ShopSnap for Linux: the example app the agent launches (Examples/ShopSnap.app points at this executable).
//
//   shopsnap                      wait for continuations and print what arrives
//   shopsnap list ITEM... [--receipt FILE]... [--receipt-url URL]...
//                                 show a shopping list and offer it to the other devices, with files of its receipts
//                                 (file: URLs; inside a synced folder they arrive as the other device's copy: C9)
//   shopsnap lists N              show N lists one after another, each saved for search (G1; a stream of index writes)
//   shopsnap edit ITEM [TYPED] [--photo FILE]
//                                 edit an item, typing TYPED one keystroke at a time; with a photo, the device
//                                 that continues the edit asks for it over a continuation stream (F1-F3)
//
// While running it reads commands from standard input: `add ITEM` (the list changes: needsSave), `type TEXT` (more
// keystrokes), `done` (the screens invalidate their activities: A9), `quit`.
//
// It connects to the agent named by BATON_AGENT_SOCKET (set when the agent launches it) or the default one, as
// BATON_BUNDLE_IDENTIFIER or com.razeware.ShopSnap, and exits when the agent goes away. SHOPSNAP_SAVE_DELAY_MS makes
// it slow to give its state (blocking, as a busy app would), to show what the other device sees then (C8).

func say(_ line: String) {
    // Straight to the file descriptor: fflush(nil) would also wait for the lock of stdin, which the thread reading
    // commands holds while it waits for a line.
    FileHandle.standardOutput.write(Data("shopsnap: \(line)\n".utf8))
}

@MainActor
func run() async -> Int32 {
    let arguments = Array(CommandLine.arguments.dropFirst())
    let application = UIApplication.shared
    let app = ShopSnapApp(application: application, report: say)
    application.delegate = app
    let reporter = ContinuedReporter(report: say)
    do {
        try await application.connect(bundleIdentifier: ProcessInfo.processInfo.environment["BATON_BUNDLE_IDENTIFIER"] ?? "com.razeware.ShopSnap")
    } catch {
        say("cannot connect: \(error)")
        return 1
    }
    say("connected to \(application.deviceName ?? "?")")
    switch arguments.first {
    case "list":
        var words = Array(arguments.dropFirst())
        while let flag = words.firstIndex(of: "--receipt") {
            guard flag + 1 < words.count else {
                say("--receipt needs a file")
                return 2
            }
            app.list.receipts.append(URL(fileURLWithPath: words[flag + 1]))
            words.removeSubrange(flag...flag + 1)
        }
        // A URL as given, never made a file's: the security suite offers hostile `baton-folder:` URLs with it, as a
        // broken or hostile device would (issue 25 item 12).
        while let flag = words.firstIndex(of: "--receipt-url") {
            guard flag + 1 < words.count, let url = URL(string: words[flag + 1]) else {
                say("--receipt-url needs a URL")
                return 2
            }
            app.list.receipts.append(url)
            words.removeSubrange(flag...flag + 1)
        }
        app.list.show(words)
        app.list.userActivity?.delegate = reporter
        say("offering the list: \(app.list.items.joined(separator: ", "))")
    case "lists":
        guard arguments.count == 2, let count = Int(arguments[1]), count > 0 else {
            say("usage: shopsnap lists N")
            return 2
        }
        for number in 1...count {
            app.list.listIdentifier = "list-\(number)"
            app.list.show(["Item \(number)", "Basket \(number)"])
            say("saved list \(number)")
            await Task.yield()
        }
    case "edit":
        var words = Array(arguments.dropFirst())
        var photo: Data?
        if let flag = words.firstIndex(of: "--photo") {
            guard flag + 1 < words.count, let bytes = FileManager.default.contents(atPath: words[flag + 1]) else {
                say("--photo needs a readable file")
                return 2
            }
            photo = bytes
            words.removeSubrange(flag...flag + 1)
        }
        guard let item = words.first else {
            say("usage: shopsnap edit ITEM [TYPED] [--photo FILE]")
            return 2
        }
        app.detail.continued = { reporter.userActivityWasContinued($0) }
        app.detail.edit(item, photo: photo)
        if let photo { say("the item has a photo: \(photo.count) bytes, checksum \(checksum(photo))") }
        for character in words.dropFirst().joined(separator: " ") {
            app.detail.type(character)
        }
        say("editing: \(app.detail.text)")
    case nil:
        break
    default:
        say("unknown command \(arguments[0]); usage: shopsnap [list ITEM... | lists N | edit ITEM [TYPED]]")
        return 2
    }
    if let delay = ProcessInfo.processInfo.environment["SHOPSNAP_SAVE_DELAY_MS"].flatMap(Double.init) {
        app.saveDelay = delay / 1000
        // A slow app shows what a continuation sees then (C8): its list is not saved for search, which would take its
        // state when it became current (G1), so the state is asked for, slowly, when it is continued.
        app.list.userActivity?.isEligibleForSearch = false
        app.list.userActivity?.needsSave = true
    }
    let commands = AsyncStream<String> { continuation in
        Thread.detachNewThread {
            while let line = readLine() { continuation.yield(line) }
            continuation.finish()
        }
    }
    let watcher = Task { @MainActor in
        for await line in commands {
            let words = line.split(separator: " ", maxSplits: 1).map(String.init)
            switch words.first {
            case "add": app.list.add(words.count > 1 ? words[1] : "")
            case "type": for character in words.count > 1 ? words[1] : "" { app.detail.type(character) }
            case "done":
                app.list.stopUserActivity()
                app.detail.finish()
                say("done: the activity is invalidated")
            case "quit": application.disconnect()
            default: say("unknown command: \(line)")
            }
        }
    }
    // Until the agent goes away.
    while application.isConnected {
        try? await Task.sleep(for: .milliseconds(20))
    }
    watcher.cancel()
    say("the agent went away")
    return 0
}

// The main actor on the first thread for the app's whole life (issue 25 item 5): not an async main, which would run
// it on a worker thread after the first await.
UIApplication.main { exit(await run()) }
