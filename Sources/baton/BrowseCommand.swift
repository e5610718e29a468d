import ArgumentParser
import Baton
import BatonAgent
import BatonCore
import Foundation

struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "Offer a web page to your other devices, as a browser would (E3).",
        discussion: """
            Makes URL (http or https only) this device's current activity, of type NSUserActivityTypeBrowsingWeb, \
            as the built-in browser app org.baton.browser, until Ctrl-C (or SIGTERM, or --seconds), then resigns it \
            and exits 0. Another device's `baton nearby` shows the page's title; `baton continue` there opens it in \
            the app whose site approved it (E3, E4), else in its browser (E1, E2). The agent must be running \
            (`baton agent`). While the browser extension's host (`baton browser-host`) is connected to the agent, it \
            is the browser app and this command is refused: one process per app.
            """
    )

    @OptionGroup var state: StateOptions

    @Argument(help: "The page: an http or https URL.")
    var url: String

    @Option(help: "The title other devices show (default: the URL's host).")
    var title: String?

    @Option(help: "Stop offering after this many seconds (default: until Ctrl-C).")
    var seconds: Double?

    func validate() throws {
        guard let page = URL(string: url), (try? ActivityPayload.validateWebpageURL(page)) != nil else {
            throw ValidationError("\(url) is not an http or https URL with a host; only web pages can be offered (A5)")
        }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be more than 0") }
    }

    func run() async throws {
        guard let page = URL(string: url) else { throw ValidationError("\(url) is not a URL") }
        try await Self.offer(page, title: title ?? page.host ?? url, seconds: seconds, socketPath: BrowserPage.socketPath(for: state))
    }

    @MainActor
    static func offer(_ url: URL, title: String, seconds: Double?, socketPath: String) async throws {
        let stop = StopSignals()
        let browser = BrowserPage(socketPath: socketPath) { say($0) }
        // It has no window to open a page continued here in (while it is the browser app), so it prints it.
        let pages = ContinuedPages { url in
            say("a page continued here: \(url.absoluteString) (baton browse opens nothing; run the browser extension)")
            return true
        }
        browser.application.delegate = pages
        do {
            try await browser.connect()
        } catch {
            throw CommandLineError("cannot offer the page: \(error)")
        }
        try browser.show(url, title: title)
        say("offering \(url.absoluteString) (\"\(title)\") to the other devices of the account; Ctrl-C stops")
        let deadline = seconds.map { Date().addingTimeInterval($0) }
        while stop.signal == nil, browser.application.isConnected, deadline.map({ Date() < $0 }) ?? true {
            try? await Task.sleep(for: .milliseconds(50))
        }
        guard browser.application.isConnected else {
            throw CommandLineError("the agent went away; the page is no longer offered")
        }
        browser.close()
        _ = pages
        say("stopped offering \(url.absoluteString)")
    }
}
