import ArgumentParser
import BatonAgent
import BatonCore
import Foundation

/// `baton demo`: Baton's main job on this machine, as far as Baton is built.
///
/// Today that is the activity model and the payload codec: the agent, pairing and the network exchange come with
/// the account and handoff issues. The demo says so in its output rather than pretending.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Hand a ShopSnap shopping list from one device to another on this machine.",
        discussion: """
            Plays the seeds' ShopSnap tutorial: "laptop" and "desktop" get identities and pair over TLS 1.3 on
            loopback, then a shopping list (view activity) and an item being edited (edit activity) travel from one to
            the other, with a timeline of what happened and how long it took. Adverts and the fetch over the session
            are not built yet: the payload passes in memory, and the output says so.
            """
    )

    static let viewActivityType = "com.razeware.shopsnap.view"
    static let editActivityType = "com.razeware.shopsnap.edit"
    static let itemsKey = "shopsnap.items.key"
    static let itemKey = "shopsnap.item.key"
    static let versionKey = "shopsnap.version.key"

    func run() async throws {
        print(
            """
            Baton demo: ShopSnap, from "laptop" to "desktop".

            Built so far: the activity payload and its codec, the app registry and router, and the account: device
            identities, pairing over TLS 1.3 with pinned certificates, the sealed account key.
            Not built yet: adverts, discovery, the fetch of an activity over the session, launching the app. So the
            payload below passes between the devices in memory, encoded and decoded exactly as it will be on the wire.

            """
        )
        let clock = DemoClock()
        try await pairDevices(clock)

        // The list: a view activity, as ShopSnap's list controller makes current.
        var list = try ActivityPayload(activityType: Self.viewActivityType)
        list.title = "Groceries"
        list.userInfo = [
            Self.versionKey: "1.0",
            Self.itemsKey: ["Ice cream", "Apple", "Nuts"],
        ]
        try list.setWebpageURL(URL(string: "https://shopsnap.example/lists/groceries"))
        clock.log("laptop", "ShopSnap makes \"\(list.title ?? "")\" current (\(Self.viewActivityType))")
        let listData = try list.encoded()
        clock.log("laptop", "state encoded for the wire: \(listData.count) bytes")
        let continuedList = try ActivityPayload(decoding: listData)
        let items = continuedList.userInfo[Self.itemsKey]?.arrayValue?.compactMap(\.stringValue) ?? []
        clock.log("desktop", "continues \"\(continuedList.title ?? "")\": \(items.joined(separator: ", "))")

        // The edit: an item being typed, with only the keys that must travel (A10).
        var edit = try ActivityPayload(activityType: Self.editActivityType)
        edit.title = "Editing an item"
        for text in ["C", "Ch", "Che", "Chee", "Chees", "Cheese"] {
            // Every keystroke updates the state; the payload is built once, when another device asks (A6).
            edit.userInfo = [Self.versionKey: "1.0", Self.itemKey: .string(text), "cursor": .integer(Int64(text.count))]
        }
        edit.requiredUserInfoKeys = [Self.versionKey, Self.itemKey]
        clock.log("laptop", "ShopSnap edits an item, 6 keystrokes, state kept current")
        let editData = try edit.encoded()
        clock.log("laptop", "edit state encoded: \(editData.count) bytes, only the required keys travel")
        let continuedEdit = try ActivityPayload(decoding: editData)
        let item = continuedEdit.userInfo[Self.itemKey]?.stringValue ?? "?"
        clock.log("desktop", "continues editing \"\(item)\" (keys: \(continuedEdit.userInfo.keys.sorted().joined(separator: ", ")))")

        print("\nWhat the payload rules refuse, as the sender would see it:")
        showRefusal("a webpageURL that is not http(s) (A5)") {
            var payload = try ActivityPayload(activityType: Self.viewActivityType)
            try payload.setWebpageURL(URL(string: "ftp://shopsnap.example/list"))
        }
        showRefusal("a 2 MiB userInfo (A11, hard limit \(ActivityPayload.maximumEncodedSize) bytes)") {
            var payload = try ActivityPayload(activityType: Self.viewActivityType)
            payload.userInfo = ["photo": .data(Data(count: 2 << 20))]
            _ = try payload.encoded()
        }
        showRefusal("a payload from a newer Baton (H1)") {
            let future = try BinaryPropertyListEncoder.encode(["v": 99, "type": .string(Self.viewActivityType)])
            _ = try ActivityPayload(decoding: future)
        }
        print("\nNext: `swift test` runs the checks behind all of this; `baton plist lint Info.plist` checks an app's file.")
    }

    /// Two devices with fresh identities pair over TLS 1.3 on loopback, the person's confirmation played by the demo.
    func pairDevices(_ clock: DemoClock) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let laptop = AccountStore(folder: root.appendingPathComponent("laptop"))
        let desktop = AccountStore(folder: root.appendingPathComponent("desktop"))
        let (laptopIdentity, _) = try laptop.initialize(name: "laptop")
        let (desktopIdentity, _) = try desktop.initialize(name: "desktop")
        clock.log("both", "identities made: laptop \(laptopIdentity.id.short), desktop \(desktopIdentity.id.short)")
        let listener = try await AccountTransport.listen(host: "127.0.0.1", port: 0, identity: laptopIdentity, policy: .anyDevice)
        async let waiting: Void = listener.serveUntilDone(timeout: 10) { session in
            _ = try await AccountFlows.pair(initiator: false, over: session, identity: laptopIdentity, store: laptop) { code in
                clock.log("laptop", "shows pairing code \(code); the person confirms")
                return true
            }
            return true
        }
        let paired = try await AccountTransport.withSession(host: "127.0.0.1", port: listener.port, identity: desktopIdentity, policy: .anyDevice) { session in
            try await AccountFlows.pair(initiator: true, over: session, identity: desktopIdentity, store: desktop) { code in
                clock.log("desktop", "shows pairing code \(code); the person confirms")
                return true
            }
        }
        try await waiting
        clock.log("both", "paired over TLS 1.3: \(paired.roster.activeMembers.count) devices, account key epoch \(paired.roster.accountKey.epoch)")
    }

    func showRefusal(_ what: String, _ attempt: () throws -> Void) {
        do {
            try attempt()
            print("  - \(what): accepted (unexpected)")
        } catch {
            print("  - \(what): refused: \(error)")
        }
    }
}

/// Prints timeline lines with the milliseconds since the demo started.
final class DemoClock: Sendable {
    let start = DispatchTime.now().uptimeNanoseconds

    func log(_ device: String, _ event: String) {
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        print(String(format: "[%8.3f ms] ", elapsed) + device.padding(8) + event)
    }
}
