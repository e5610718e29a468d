import BatonAgent
import BatonEmbedded
import BatonInMemory
import BatonRegistry
import BatonTestSupport
import Foundation
import Testing

/// Issue 14 part 3, both halves together: a page offered by the browser on one device (the built-in browser app,
/// what `baton browse` and `baton browser-host` are) continues on another device into the app whose domain approves
/// it, by an association file that device's agent fetched over real HTTPS (nginx), else into the browser (E1–E4).
@MainActor
@Suite("Web to app across devices: a browser's page into the approved app, else the browser (issue 14: E3, E4)", .serialized, .requires(.nginx, .openssl, .python3))
struct WebToAppTests {
    @Test("E3, E4: a page the site approves for the app arrives there as NSUserActivityTypeBrowsingWeb with an empty userInfo; an excluded page opens in the browser")
    func browserPageIntoTheApprovedApp() async throws {
        let recording = try RecordingBrowser()
        defer { recording.remove() }

        let server = try await AASAServer.start()
        do {
            let apps = AppRegistry(apps: [AssociationFetchTests.app("org.wikimedia.wikipedia", team: "AKK7J2GV64", domains: ["applinks:wiki.example"])])
            let resolve = server.resolve("wiki.example")
            let caFile = server.caFile
            // The agents in memory on virtual time (issue 26 item 3); their association fetches still go to nginx over HTTPS.
            let devices = try await InMemoryDevices.start(names: ["laptop", "desktop"], apps: apps) { configuration in
                configuration.saveDeadline = 10
                configuration.associationResolve = resolve
                configuration.associationRootFiles = [caFile]
                configuration.browserCommand = recording.command
            }
            let desktopAgent = devices.agents[1]
            let main = URL(string: "https://wiki.example/wiki/Main_Page")!
            let excluded = URL(string: "https://wiki.example/wiki/Special:Random")!
            let mainRequest = AssociationFetchTests.page(main.absoluteString)
            for _ in 0..<500 where desktopAgent.route(mainRequest).target != .app(bundleIdentifier: "org.wikimedia.wikipedia") {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(desktopAgent.route(mainRequest).target == .app(bundleIdentifier: "org.wikimedia.wikipedia"), "the desktop fetched wiki.example's file")

            // The laptop's browser offers the page; the desktop runs the Wikipedia app.
            let browser = BatonApplication()
            try await browser.connect(bundleIdentifier: BuiltInBrowser.bundleIdentifier, socketPath: devices.agents[0].socketPath)
            let wiki = BatonApplication()
            try await wiki.connect(bundleIdentifier: "org.wikimedia.wikipedia", socketPath: desktopAgent.socketPath)
            var events = wiki.events.makeAsyncIterator()

            func offer(_ url: URL, title: String) async throws -> UserActivity {
                let page = try UserActivity(activityType: NSUserActivityTypeBrowsingWeb, application: browser)
                page.title = title
                try page.setWebpageURL(url)
                page.becomeCurrent()
                for _ in 0..<500 where await desktopAgent.nearbyItems(describe: true).first?.title != title {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(await desktopAgent.nearbyItems().first?.title == title, "the other device shows the page's title")
                return page
            }

            let page = try await offer(main, title: "Wikipedia, the free encyclopedia")
            let outcome = await desktopAgent.continueNearby(device: "laptop")
            #expect(outcome.failure == nil && outcome.app == "org.wikimedia.wikipedia", "\(outcome)")
            #expect(outcome.reason.contains("approves"), "\(outcome.reason)")
            let delivered = await events.nextContinued()
            #expect(delivered?.activityType == NSUserActivityTypeBrowsingWeb)
            #expect(delivered?.webpageURL == main)
            #expect(delivered?.userInfo.isEmpty == true, "E3: the app gets the page, not the browser's state")
            page.invalidate()

            // A path the file excludes (NOT /wiki/Special:*) opens in the desktop's browser instead.
            let special = try await offer(excluded, title: "Random article")
            let toBrowser = await desktopAgent.continueNearby(device: "laptop")
            #expect(toBrowser.failure == nil && toBrowser.app == "browser", "\(toBrowser)")
            #expect(try await recording.opened() == excluded.absoluteString + "\n")
            special.invalidate()
            wiki.disconnect()
            browser.disconnect()
            await devices.shutdown()
        } catch {
            Issue.record("\(error)")
        }
        await server.stop()
    }
}
