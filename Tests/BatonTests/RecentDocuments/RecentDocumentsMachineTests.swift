import BatonActivitySources
@testable import BatonAgent
import BatonProtocol
import Testing

/// The recent-documents machine alone (issue 27 item 2; B5, C9, A9): candidates and the time in, offers out.
@Suite("RecentDocuments: which recent document is offered (issue 27 item 2; B5, C9)")
struct RecentDocumentsMachineTests {
    static let folders = SyncedFolders([try! SyncedFolder(id: "docs", path: "/home/alex/Sync")])

    static func candidate(_ path: String, used: UInt64, app: String? = "org.gnome.TextEditor") -> RecentDocuments.Candidate {
        RecentDocuments.Candidate(url: try! ActivityURL("file://" + path), application: app, mimeType: "text/plain", lastUsed: used)
    }

    @Test("the latest document inside a synced folder is offered; one outside every folder never is (C9)")
    func latestInsideFolder() {
        var machine = RecentDocuments(freshness: 600_000)
        let action = machine.listed(
            [Self.candidate("/home/alex/Sync/report.odt", used: 1_000), Self.candidate("/home/alex/private.txt", used: 2_000)],
            folders: Self.folders, now: 2_500
        )
        guard case .offer(let offer) = action else { Issue.record("nothing offered: \(String(describing: action))"); return }
        #expect(offer.path == "/home/alex/Sync/report.odt")
        #expect(offer.folder == "docs")
        #expect(machine.listed([Self.candidate("/home/alex/private.txt", used: 3_000)], folders: Self.folders, now: 3_000) == .withdraw(activity: offer.activity))
    }

    @Test("an agent starting offers only a document used within its freshness; later uses are offered")
    func freshAtStart() {
        var machine = RecentDocuments(freshness: 600_000)
        let old = Self.candidate("/home/alex/Sync/old.txt", used: 1_000)
        #expect(machine.listed([old], folders: Self.folders, now: 10_000_000) == nil)
        let action = machine.listed([old, Self.candidate("/home/alex/Sync/new.txt", used: 9_000_000)], folders: Self.folders, now: 10_000_000)
        guard case .offer(let offer) = action else { Issue.record("nothing offered"); return }
        #expect(offer.path == "/home/alex/Sync/new.txt")
    }

    @Test("used again: the same activity made current again; another document: a new activity; stop withdraws (A9)")
    func activities() {
        var machine = RecentDocuments(freshness: 600_000)
        guard case .offer(let first) = machine.listed([Self.candidate("/home/alex/Sync/a.txt", used: 1_000)], folders: Self.folders, now: 1_000) else {
            Issue.record("nothing offered"); return
        }
        #expect(machine.listed([Self.candidate("/home/alex/Sync/a.txt", used: 1_000)], folders: Self.folders, now: 2_000) == nil, "unchanged: nothing to do")
        guard case .offer(let again) = machine.listed([Self.candidate("/home/alex/Sync/a.txt", used: 3_000)], folders: Self.folders, now: 3_000) else {
            Issue.record("not offered again"); return
        }
        #expect(again.activity == first.activity)
        guard case .offer(let other) = machine.listed(
            [Self.candidate("/home/alex/Sync/a.txt", used: 3_000), Self.candidate("/home/alex/Sync/b.txt", used: 4_000)], folders: Self.folders, now: 4_000
        ) else { Issue.record("b not offered"); return }
        #expect(other.activity != first.activity)
        #expect(machine.stop() == .withdraw(activity: other.activity))
        #expect(machine.listed([Self.candidate("/home/alex/Sync/c.txt", used: 5_000)], folders: Self.folders, now: 5_000) == nil, "nothing after the stop")
    }
}
