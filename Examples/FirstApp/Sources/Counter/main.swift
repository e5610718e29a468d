import Baton
import Foundation

// BatonApplication.main runs the app with the main actor on the process's first thread, where Baton calls the
// delegate and the screen (as Apple's systems do, and as toolkits like GTK need); the app quits when this returns.
BatonApplication.main {
    let delegate = AppDelegate()
    BatonApplication.shared.delegate = delegate
    do {
        // Launched by the agent, BATON_AGENT_SOCKET says where it is; started by hand, set it (or the default agent's is used).
        try await BatonApplication.shared.connect(bundleIdentifier: "com.example.Counter")
    } catch {
        say("counter: \(error)")                      // one line: where it looked, and what to do
        exit(1)
    }
    if let start = CommandLine.arguments.dropFirst().first.flatMap({ Int($0) }) {
        try delegate.screen.show(start)
        say("counter: counting from \(start) on \(BatonApplication.shared.deviceName ?? "this device")")
    }
    while BatonApplication.shared.isConnected {
        try await Task.sleep(for: .seconds(1))
        delegate.screen.increment()
    }
}
