import Baton
import Foundation
import ShopSnapKit

// ShopSnap for Linux: the example app the agent launches (Examples/ShopSnap.app points at this executable).
//
//   shopsnap                      wait for continuations and print what arrives
//   shopsnap list ITEM...         show a shopping list and offer it to the other devices
//   shopsnap edit ITEM [TYPED]    edit an item, typing TYPED one keystroke at a time
//
// It connects to the agent named by BATON_AGENT_SOCKET (set when the agent launches it) or the default one, as
// BATON_BUNDLE_IDENTIFIER or com.razeware.ShopSnap, and exits when the agent goes away.

func say(_ line: String) {
    print("shopsnap: \(line)")
    fflush(nil)
}

@MainActor
func run() async -> Int32 {
    let arguments = Array(CommandLine.arguments.dropFirst())
    let application = BatonApplication.shared
    let app = ShopSnapApp(application: application, report: say)
    let reporter = ContinuedReporter(report: say)
    do {
        try await application.connect(bundleIdentifier: ProcessInfo.processInfo.environment["BATON_BUNDLE_IDENTIFIER"] ?? "com.razeware.ShopSnap")
    } catch {
        say("cannot connect: \(error)")
        return 1
    }
    say("connected to \(application.deviceName ?? "?")")
    do {
        switch arguments.first {
        case "list":
            try app.list.show(Array(arguments.dropFirst()), in: application)
            app.list.userActivity?.delegate = reporter
            say("offering the list: \(app.list.items.joined(separator: ", "))")
        case "edit":
            guard arguments.count >= 2 else {
                say("usage: shopsnap edit ITEM [TYPED]")
                return 2
            }
            try app.detail.edit(arguments[1], in: application)
            app.detail.userActivity?.delegate = reporter
            for character in arguments.dropFirst(2).joined(separator: " ") {
                app.detail.type(character)
            }
            say("editing: \(app.detail.text)")
        case nil:
            break
        default:
            say("unknown command \(arguments[0]); usage: shopsnap [list ITEM... | edit ITEM [TYPED]]")
            return 2
        }
    } catch {
        say("\(error)")
        return 1
    }
    // Until the agent goes away.
    while application.isConnected {
        try? await Task.sleep(for: .milliseconds(50))
    }
    say("the agent went away")
    return 0
}

exit(await run())
