@testable import BatonAgent
import BatonCore
import BatonProtocol
import Foundation
import Testing

/// Issue 26 item 5: on a warm continue the originating agent (credentials, A5; travel form, C9) and the continuing
/// agent (`arriving`, C9, B6) skip decoding a state the quick look clears. What they hand on must be byte for byte
/// what the full decode gives, for every state: with and without URLs, credentials, synced-folder URLs, strings and
/// data that only look like URLs (UTF-16, upper case), and damaged bytes.
@Suite("Warm continue: a state without URL objects is not decoded, and nothing changes (issue 26 item 5, A5, C9)")
struct WarmContinueQuickLookTests {
    static let folders = SyncedFolders([try! SyncedFolder(id: "docs", path: "/home/me/docs")])

    static let webpages: [String?] = [nil, "https://shop.example/a", "https://u:p@shop.example/", "http://shop.example/?q=a@b"]
    static let userInfos: [[String: PropertyList]] = [
        [:],
        ["who": "me@example.com", "n": 1, "blob": .data(Data("file:///home/me/docs/a.txt @".utf8)), "marker": .data(Data([0x0C, 0x5A]))],
        ["text": "FILE:///HOME/ME/DOCS/A.TXT", "wide": "file:///home/me/docs/café.txt", "at": "https://u:p@kept.example/"],
        ["doc": .url(URL(fileURLWithPath: "/home/me/docs/a.txt"))],
        ["doc": .url(URL(fileURLWithPath: "/elsewhere/b.txt"))],
        ["api": .array([.url(URL(string: "https://svc:pw@api.example/v1")!)])],
        ["nested": .dictionary(["t": .set([.url(URL(string: "baton-folder://docs/a.txt")!)])])],
        ["unknown": .url(URL(string: "baton-folder://nope/a.txt")!), "bad": .url(URL(string: "baton-folder://docs/%2F/x")!)],
    ]
    static let attributes: [[String: PropertyList]?] = [nil, ["about": "x@y.example"], ["link": .url(URL(string: "https://a:b@c.example/")!)]]

    /// Every combination of the fields above: 384 states.
    static func states() throws -> [Data] {
        var states: [Data] = []
        for webpage in webpages {
            for referrer in webpages {
                for userInfo in userInfos {
                    for attributes in attributes {
                        var payload = try ActivityPayload(activityType: "com.example.warm")
                        try payload.setWebpageURL(webpage.flatMap { URL(string: $0) })
                        payload.referrerURL = referrer.flatMap { URL(string: $0) }
                        payload.userInfo = userInfo
                        payload.contentAttributeSet = attributes
                        payload.title = "Notes @ home"
                        states.append(try payload.encoded())
                    }
                }
            }
        }
        return states
    }

    /// The continuing agent's answer, quick look first as `Agent.arriving(_:)` does it.
    static func arrivingQuickly(_ data: Data) -> Agent.ArrivedState {
        BinaryPropertyList.mayHoldURLs(data) ? Agent.arriving(decoding: data, folders: folders) : .ready(payload: data, missing: [])
    }

    /// Checks that the quick paths give what the full decodes give for `data`; returns whether a decode was skipped.
    @discardableResult
    static func expectSame(_ data: Data) -> Bool {
        #expect(OfferedURLs.withoutCredentials(data) == OfferedURLs.withoutCredentials(decoding: data), "A5: \(Array(data))")
        let full = Agent.arriving(decoding: data, folders: folders)
        #expect("\(arrivingQuickly(data))" == "\(full)", "C9: \(Array(data))")
        guard !BinaryPropertyList.mayHoldURLs(data) else { return false }
        // What `Agent.travelling(_:)` skips: the travel form of a state without URL objects is the state itself.
        if let payload = try? ActivityPayload(decoding: data) {
            #expect(folders.travelling(payload, resolve: Agent.resolvingParent) == payload, "C9: \(Array(data))")
        }
        return true
    }

    @Test("issue 26 item 5, A5, C9: 384 states: offered, arrived and travelling as the full decode gives them")
    func everyState() throws {
        var skipped = 0
        var offeredAsIs = 0
        for data in try Self.states() {
            if Self.expectSame(data) { skipped += 1 }
            if data.contains(UInt8(ascii: "@")), !ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: data) { offeredAsIs += 1 }
        }
        #expect(skipped == 4 * 4 * 3 * 2, "states with no URL object in userInfo and the attributes skip the decode")
        #expect(offeredAsIs == 2 * 2 * 3 * 2, "states with '@' only outside URLs are offered without a decode")
    }

    @Test("issue 26 item 5, A5, C9: every byte of three states damaged five ways: still the full decode's answer")
    func damagedStates() throws {
        let states = try Self.states()
        for data in [states[3], states[9], states[364]] {
            for position in 0..<data.count {
                for value: UInt8 in [0x00, 0x0C, 0x40, 0xFF, data[position] ^ 0x01] {
                    var damaged = data
                    damaged[position] = value
                    Self.expectSame(damaged)
                }
            }
            for length in 0..<data.count { Self.expectSame(Data(data.prefix(length))) }
        }
    }
}
