import BatonRegistry
import Foundation
import Testing

@testable import BatonAgent
@testable import BatonNotifications

/// Issue 16 part 2, the pure tier: which desktop notifications of nearby offers are shown, replaced and withdrawn
/// (C3), what a Continue does (C5), and the session bus coming and going. No D-Bus, no clock: time is passed in.
@Suite("Issue 16: desktop notifications of nearby offers (C3)")
struct NearbyNotificationsTests {
    typealias Machine = NearbyNotifications

    static func offer(
        _ device: String = "dev-laptop",
        sequence: UInt64 = 1,
        title: String = "Shopping list (2 items)"
    ) -> Machine.Offer {
        Machine.Offer(
            device: device,
            deviceName: "laptop",
            sequence: sequence,
            title: title,
            appName: "ShopSnap",
            icon: "application-x-executable"
        )
    }

    /// A machine connected to the bus.
    static func connected() -> Machine {
        var machine = Machine()
        #expect(machine.start() == [.connect])
        #expect(machine.connected(now: 0) == [])
        return machine
    }

    static func notifies(_ actions: [Machine.Action]) -> [(token: UInt64, replacing: UInt32?, notice: Machine.Notice)] {
        actions.compactMap {
            if case .notify(let token, let replacing, let notice) = $0 { (token, replacing, notice) } else { nil }
        }
    }

    @Test(
        "C3: a notification appears once per offer, not on every advert, with title, device, app and the Continue action"
    )
    func c3OncePerOffer() throws {
        var machine = Self.connected()
        let shown = Self.notifies(machine.offersChanged([Self.offer()]))
        #expect(shown.count == 1)
        let first = try #require(shown.first)
        #expect(first.replacing == nil)
        #expect(first.notice.summary == "Shopping list (2 items)")
        #expect(first.notice.body.contains("laptop") && first.notice.body.contains("ShopSnap"))
        #expect(first.notice.appName == "ShopSnap")
        #expect(first.notice.actions == ["continue", "Continue", "default", "Continue"])
        // Re-adverts (and re-reads of the table) before and after the server answers change nothing.
        #expect(machine.offersChanged([Self.offer()]) == [])
        #expect(machine.notified(token: first.token, id: 7, now: 10) == [])
        for _ in 0..<5 { #expect(machine.offersChanged([Self.offer()]) == []) }
        #expect(machine.shownIDs == ["dev-laptop": 7])
    }

    @Test("C3: a changed offer (new title or new activity) replaces the notification by id")
    func c3ReplacedOnChange() throws {
        var machine = Self.connected()
        let token = try #require(Self.notifies(machine.offersChanged([Self.offer()])).first?.token)
        _ = machine.notified(token: token, id: 7, now: 10)
        let retitled = Self.notifies(machine.offersChanged([Self.offer(title: "Shopping list (3 items)")]))
        #expect(
            retitled.count == 1 && retitled.first?.replacing == 7
                && retitled.first?.notice.summary == "Shopping list (3 items)"
        )
        _ = machine.notified(token: try #require(retitled.first?.token), id: 7, now: 20)
        let newActivity = Self.notifies(machine.offersChanged([Self.offer(sequence: 2, title: "Milk")]))
        #expect(newActivity.count == 1 && newActivity.first?.replacing == 7)
    }

    @Test("C3: an offer that changes while its Notify is unanswered is sent again, replacing, once the id comes")
    func c3ChangeWhilePending() throws {
        var machine = Self.connected()
        let token = try #require(Self.notifies(machine.offersChanged([Self.offer()])).first?.token)
        #expect(machine.offersChanged([Self.offer(title: "Later title")]) == [], "nothing until the first answer")
        let again = Self.notifies(machine.notified(token: token, id: 3, now: 5))
        #expect(again.count == 1 && again.first?.replacing == 3 && again.first?.notice.summary == "Later title")
    }

    @Test(
        "A9: the offer ends (goodbye or expiry): its notification is closed; ended before the id came, closed when it comes"
    )
    func a9ClosedOnEnd() throws {
        var machine = Self.connected()
        let token = try #require(Self.notifies(machine.offersChanged([Self.offer()])).first?.token)
        _ = machine.notified(token: token, id: 7, now: 10)
        #expect(machine.offersChanged([]) == [.close(7)])
        #expect(machine.shownIDs.isEmpty)
        #expect(machine.offersChanged([]) == [], "closed once")

        let early = try #require(Self.notifies(machine.offersChanged([Self.offer(sequence: 2)])).first?.token)
        #expect(machine.offersChanged([]) == [], "no id to close yet")
        #expect(machine.notified(token: early, id: 8, now: 20) == [.close(8)])
    }

    @Test(
        "C5: Continue (or a click on the notification) continues that device's offer here; other keys and ids do nothing"
    )
    func c5ActionContinues() throws {
        var machine = Self.connected()
        let token = try #require(
            Self.notifies(machine.offersChanged([Self.offer(), Self.offer("dev-tablet")])).first?.token
        )
        _ = machine.notified(token: token, id: 7, now: 10)
        #expect(machine.actionInvoked(id: 7, key: "continue") == [.continueHere(device: "dev-laptop")])
        #expect(machine.actionInvoked(id: 7, key: "default") == [.continueHere(device: "dev-laptop")])
        #expect(machine.actionInvoked(id: 7, key: "snooze") == [])
        #expect(machine.actionInvoked(id: 99, key: "continue") == [], "another program's notification")
    }

    @Test(
        "C5: a Continue that fails says why in place of the notification, with Try again; a new offer replaces it, an ended one closes it"
    )
    func c5FailureIsShown() throws {
        var machine = Self.connected()
        let token = try #require(Self.notifies(machine.offersChanged([Self.offer()])).first?.token)
        _ = machine.notified(token: token, id: 7, now: 10)
        #expect(machine.actionInvoked(id: 7, key: "continue") == [.continueHere(device: "dev-laptop")])
        let failed = Self.notifies(machine.continueFailed(device: "dev-laptop", message: "ShopSnap could not be launched"))
        let notice = try #require(failed.first?.notice)
        #expect(failed.count == 1 && failed.first?.replacing == 7)
        #expect(notice.summary == "Could not continue Shopping list (2 items)")
        #expect(notice.body == "From laptop: ShopSnap could not be launched" && notice.actions == ["continue", "Try again"])
        _ = machine.notified(token: try #require(failed.first?.token), id: 7, now: 20)
        // Re-adverts of the same offer leave the reason on screen; Try again continues as before.
        #expect(machine.offersChanged([Self.offer()]) == [])
        #expect(machine.actionInvoked(id: 7, key: "continue") == [.continueHere(device: "dev-laptop")])
        // The server closed the notification when the action was taken: the reason is shown anew.
        #expect(machine.closedByServer(id: 7) == [])
        let anew = Self.notifies(machine.continueFailed(device: "dev-laptop", message: "again"))
        #expect(anew.count == 1 && anew.first?.replacing == nil && anew.first?.notice.summary.hasPrefix("Could not") == true)
        _ = machine.notified(token: try #require(anew.first?.token), id: 8, now: 30)
        // A new activity there replaces the reason; the offer ending closes it; a failure after that shows nothing.
        let next = Self.notifies(machine.offersChanged([Self.offer(sequence: 2, title: "Milk")]))
        #expect(next.count == 1 && next.first?.replacing == 8 && next.first?.notice.summary == "Milk")
        _ = machine.notified(token: try #require(next.first?.token), id: 8, now: 40)
        #expect(machine.offersChanged([]) == [.close(8)])
        #expect(machine.continueFailed(device: "dev-laptop", message: "gone") == [])
    }

    @Test("closed by the server: the id is forgotten and the same offer is not shown again; a new offer is")
    func serverClosedIsForgotten() throws {
        var machine = Self.connected()
        let token = try #require(Self.notifies(machine.offersChanged([Self.offer()])).first?.token)
        _ = machine.notified(token: token, id: 7, now: 10)
        #expect(machine.closedByServer(id: 7) == [])
        #expect(machine.shownIDs.isEmpty)
        #expect(machine.actionInvoked(id: 7, key: "continue") == [], "a forgotten id continues nothing")
        #expect(machine.offersChanged([Self.offer()]) == [], "dismissed: not shown again for the same offer")
        #expect(machine.offersChanged([]) == [], "nothing to close")
        let next = Self.notifies(machine.offersChanged([Self.offer(sequence: 2)]))
        #expect(next.count == 1 && next.first?.replacing == nil)
    }

    @Test("bus down: no actions and no errors; offers wait and are shown when it is back, after the back-off")
    func busDown() throws {
        var machine = Machine()
        #expect(machine.start() == [.connect])
        #expect(machine.connectFailed(now: 0) == [.wake(at: 1_000)])
        #expect(machine.offersChanged([Self.offer()]) == [], "nothing sent while there is no bus")
        #expect(machine.actionInvoked(id: 1, key: "continue") == [])
        #expect(machine.timePassed(now: 500) == [.wake(at: 1_000)])
        #expect(machine.timePassed(now: 1_000) == [.connect])
        #expect(machine.connectFailed(now: 1_000) == [.wake(at: 3_000)], "the back-off doubles")
        #expect(machine.timePassed(now: 3_000) == [.connect])
        let shown = Self.notifies(machine.connected(now: 3_000))
        #expect(
            shown.count == 1 && shown.first?.notice.summary == "Shopping list (2 items)",
            "the waiting offer appears"
        )
        _ = machine.notified(token: try #require(shown.first?.token), id: 4, now: 3_010)

        // The bus goes away: the ids are gone with it, nothing is sent, and it is tried again from the first wait.
        #expect(machine.disconnected(now: 5_000) == [.wake(at: 6_000)])
        #expect(machine.shownIDs.isEmpty)
        #expect(machine.offersChanged([]) == [], "no close on a bus that is not there")
        #expect(machine.timePassed(now: 6_000) == [.connect])
        #expect(machine.connected(now: 6_000) == [], "the offer ended meanwhile: nothing to show")
    }

    @Test(
        "the notification server restarts: its ids are forgotten (never replaced or closed on its successor), the offer shown again as new"
    )
    func serverRestarts() throws {
        var machine = Self.connected()
        let token = try #require(Self.notifies(machine.offersChanged([Self.offer()])).first?.token)
        _ = machine.notified(token: token, id: 7, now: 10)
        #expect(machine.serverAppeared() == [], "a server activated by the first Notify: the id it gave stands")
        #expect(machine.serverWentAway() == [])
        #expect(machine.shownIDs.isEmpty)
        #expect(machine.actionInvoked(id: 7, key: "continue") == [], "id 7 is another server's now")
        let again = Self.notifies(machine.serverAppeared())
        #expect(again.count == 1 && again.first?.replacing == nil)
        _ = machine.notified(token: try #require(again.first?.token), id: 1, now: 20)
        #expect(machine.offersChanged([]) == [.close(1)], "the new id is the one closed")
    }

    @Test(
        "no notification server: the offer stays unshown, tried again when the bus connects again or the offer changes"
    )
    func noServer() throws {
        var machine = Self.connected()
        let token = try #require(Self.notifies(machine.offersChanged([Self.offer()])).first?.token)
        #expect(machine.notifyFailed(token: token, .noServer, now: 1) == [])
        #expect(machine.offersChanged([Self.offer()]) == [], "not on every change of the table")
        #expect(Self.notifies(machine.offersChanged([Self.offer(title: "New")])).count == 1)
    }

    @Test("stop: every notification shown is withdrawn, and one still unanswered is closed when its id comes")
    func stopWithdraws() throws {
        var machine = Self.connected()
        let tokens = Self.notifies(machine.offersChanged([Self.offer(), Self.offer("dev-tablet")])).map(\.token)
        #expect(tokens.count == 2)
        _ = machine.notified(token: tokens[0], id: 7, now: 10)
        #expect(machine.stop() == [.close(7)])
        #expect(machine.hasUnansweredNotify)
        #expect(machine.notified(token: tokens[1], id: 8, now: 20) == [.close(8)])
        #expect(machine.offersChanged([Self.offer("dev-phone")]) == [], "nothing after stop")
    }

    @Test("text from other devices is escaped in the body, which servers may read as markup")
    func bodyIsEscaped() {
        var offer = Self.offer()
        offer.deviceName = "<b>Bob & Alice</b>"
        #expect(offer.notice.body.contains("&lt;b&gt;Bob &amp; Alice&lt;/b&gt;"))
    }

    @Test("the icon: CFBundleIconFile in the bundle or its Resources as a file URI, else the generic XDG name")
    func icon() {
        func app(_ icon: String?) -> AppRecord {
            AppRecord(
                bundleURL: URL(fileURLWithPath: "/apps/ShopSnap.app"),
                bundleIdentifier: "com.razeware.ShopSnap",
                name: "ShopSnap",
                executableURL: nil,
                teamIdentifier: "RAZEWARE01",
                activityTypes: [],
                documentActivityTypes: [],
                associatedDomains: [],
                warnings: [],
                isIdentityResolved: true,
                iconFile: icon
            )
        }
        let files: Set<String> = ["/apps/ShopSnap.app/Resources/AppIcon.png", "/apps/ShopSnap.app/logo.svg"]
        #expect(
            Agent.notificationIcon(of: app("AppIcon")) { files.contains($0) }
                == "file:///apps/ShopSnap.app/Resources/AppIcon.png"
        )
        #expect(
            Agent.notificationIcon(of: app("logo.svg")) { files.contains($0) } == "file:///apps/ShopSnap.app/logo.svg"
        )
        #expect(Agent.notificationIcon(of: app("Missing")) { files.contains($0) } == "application-x-executable")
        #expect(Agent.notificationIcon(of: app(nil)) { files.contains($0) } == "application-x-executable")
        #expect(Agent.notificationIcon(of: app("../../etc/icon.png")) { _ in true } == "application-x-executable")
    }

    @Test("issue 28 item 2: a desktop-file app's Icon, a theme's name as it is or an existing absolute file as a URI")
    func desktopIcon() {
        func app(_ icon: String?) -> AppRecord {
            AppRecord(
                bundleURL: URL(fileURLWithPath: "/usr/share/applications/org.example.Recipes.desktop"), bundleIdentifier: "org.example.Recipes",
                name: "Recipes", executableURL: nil, teamIdentifier: "TEAMR", activityTypes: [], documentActivityTypes: [], associatedDomains: [],
                warnings: [], isIdentityResolved: true, iconFile: icon, kind: .desktopFile
            )
        }
        #expect(Agent.notificationIcon(of: app("org.example.Recipes")) { _ in false } == "org.example.Recipes")
        #expect(Agent.notificationIcon(of: app("/opt/recipes/icon.png")) { $0 == "/opt/recipes/icon.png" } == "file:///opt/recipes/icon.png")
        #expect(Agent.notificationIcon(of: app("/opt/recipes/gone.png")) { _ in false } == "application-x-executable")
        #expect(Agent.notificationIcon(of: app("../icon.png")) { _ in true } == "application-x-executable")
        #expect(Agent.notificationIcon(of: app(nil)) { _ in true } == "application-x-executable")
    }

    @Test("the session bus address: DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus when it exists, else none")
    func sessionBusAddress() {
        #expect(
            NotificationServer.sessionBusAddress(
                environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"],
                exists: { _ in false }
            ) == "unix:path=/x"
        )
        #expect(
            NotificationServer.sessionBusAddress(
                environment: ["XDG_RUNTIME_DIR": "/run/user/5"],
                exists: { $0 == "/run/user/5/bus" }
            ) == "unix:path=/run/user/5/bus"
        )
        #expect(
            NotificationServer.sessionBusAddress(
                environment: ["XDG_RUNTIME_DIR": "/run/user/5"],
                exists: { _ in false }
            )
                == nil
        )
        #expect(NotificationServer.sessionBusAddress(environment: [:], exists: { _ in true }) == nil)
    }

    @Test("issue 25 item 7, C3: bidirectional controls in a title or device name never reach a notification")
    func bidiControlsNeutralized() throws {
        // "\u{202E}gpj.exe" reads as "exe.jpg"; every control of UAX #9 is removed, the letters all stay.
        let controls = ["\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}", "\u{202E}", "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}", "\u{200E}", "\u{200F}", "\u{061C}"]
        let title = "Invoice " + controls.joined() + "\u{202E}gpj.exe שלום"
        var machine = Self.connected()
        var offer = Self.offer(title: title)
        offer.deviceName = "lap\u{202E}pot"
        let shown = try #require(Self.notifies(machine.offersChanged([offer])).first)
        #expect(shown.notice.summary == "Invoice gpj.exe שלום")
        #expect(shown.notice.body == "From lappot: continue it here in ShopSnap.")
        _ = machine.notified(token: shown.token, id: 3, now: 1)
        _ = machine.actionInvoked(id: 3, key: "continue")
        let failed = try #require(Self.notifies(machine.continueFailed(device: offer.device, message: "no\u{2067}pe")).first)
        #expect(failed.notice.summary == "Could not continue Invoice gpj.exe שלום")
        #expect(failed.notice.body == "From lappot: nope")
        for text in [shown.notice.summary, shown.notice.body, failed.notice.summary, failed.notice.body] {
            #expect(!text.unicodeScalars.contains { controls.contains(String($0)) }, "\(text.debugDescription)")
        }
    }
}
