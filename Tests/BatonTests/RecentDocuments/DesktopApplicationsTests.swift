@testable import BatonAgent
import BatonProtocol
import Foundation
import Logging
import Testing

/// Which application opens a continued document here (issue 27 item 2; B6): the desktop file by id in the XDG
/// applications folders, else the default for the MIME type from `mimeapps.list`; Hidden, TryExec and Terminal
/// respected; argument vectors, never a shell.
@Suite("DesktopApplications: the application that opens a document, and its argv (issue 27 item 2; B6)")
struct DesktopApplicationsTests {
    /// Two applications folders (the user's first) and a mimeapps.list, in a folder of their own.
    struct Desktop {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-apps-\(UUID().uuidString)")
        var user: URL { root.appendingPathComponent("user/applications") }
        var system: URL { root.appendingPathComponent("system/applications") }
        var mimeApps: URL { root.appendingPathComponent("mimeapps.list") }

        init() throws {
            try FileManager.default.createDirectory(at: user, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: system, withIntermediateDirectories: true)
        }

        func install(_ id: String, in folder: URL, _ lines: String) throws {
            try Data("[Desktop Entry]\nType=Application\nName=\(id) app\n\(lines)\n".utf8).write(to: folder.appendingPathComponent("\(id).desktop"))
        }

        var applications: DesktopApplications {
            var settings = RecentDocumentsSettings(environment: ["HOME": root.path, "PATH": "/usr/bin:/bin"])
            settings.applicationFolders = [user.path, system.path]
            settings.mimeAppsFiles = [mimeApps.path]
            return DesktopApplications(settings: settings)
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    @Test("the application that used it, found by id; its Exec line gives argv with the path as one argument")
    func preferred() throws {
        let desktop = try Desktop()
        defer { desktop.remove() }
        try desktop.install("org.example.Editor", in: desktop.system, "Exec=cat --number %f")
        let apps = desktop.applications
        let application = try #require(apps.application(preferred: "org.example.Editor", mimeType: "text/plain"))
        let commands = try apps.commands(opening: URL(fileURLWithPath: "/home/b/Sync/a b; rm -rf ~.txt"), with: application)
        #expect(commands.count == 1)
        #expect(commands.first?.program == "/usr/bin/cat")
        #expect(commands.first?.arguments == ["--number", "/home/b/Sync/a b; rm -rf ~.txt"])
    }

    @Test("not installed here: the default application for its MIME type from mimeapps.list")
    func defaultForType() throws {
        let desktop = try Desktop()
        defer { desktop.remove() }
        try desktop.install("org.example.Viewer", in: desktop.system, "Exec=cat %U")
        try Data("[Added Associations]\ntext/plain=nope.desktop;\n[Default Applications]\ntext/plain=missing.desktop;org.example.Viewer.desktop;\n".utf8)
            .write(to: desktop.mimeApps)
        let apps = desktop.applications
        #expect(apps.defaults(for: "text/plain") == ["missing", "org.example.Viewer"])
        #expect(apps.application(preferred: "org.example.Editor", mimeType: "text/plain")?.id == "org.example.Viewer")
        #expect(apps.application(preferred: "org.example.Editor", mimeType: "image/png") == nil, "nothing for a type with no default")
    }

    @Test("Hidden in the user's folder deletes the system's entry; a missing TryExec, a terminal app or shell syntax in Exec is not used")
    func notUsable() throws {
        let desktop = try Desktop()
        defer { desktop.remove() }
        try desktop.install("hidden", in: desktop.system, "Exec=cat %f")
        try desktop.install("hidden", in: desktop.user, "Hidden=true")
        try desktop.install("tryexec", in: desktop.system, "Exec=cat %f\nTryExec=/nonexistent/program")
        try desktop.install("terminal", in: desktop.system, "Exec=cat %f\nTerminal=true")
        try desktop.install("shell", in: desktop.system, "Exec=cat %f; touch /tmp/pwned")
        try desktop.install("absent", in: desktop.system, "Exec=/nonexistent/editor %f")
        let apps = desktop.applications
        for id in ["hidden", "tryexec", "terminal", "shell", "absent", "../escape", "unknown"] {
            #expect(apps.usable(id: id) == nil, "\(id) is not used")
        }
    }
}

/// What the source reads from KDE's `RecentDocuments/` (issue 27 item 2): the document, the application that opened it
/// when its desktop file is here, the file's time as when it was used.
@Suite("RecentDocumentsSource: KDE's recent documents as candidates (issue 27 item 2)")
struct KDERecentCandidatesTests {
    @Test("a KDE recent document with $HOME and X-KDE-LastOpenedWith becomes a candidate; a file naming another $VAR does not")
    func kdeCandidates() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-kde-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let recent = root.appendingPathComponent("data/RecentDocuments")
        let applications = root.appendingPathComponent("data/applications")
        try FileManager.default.createDirectory(at: recent, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        try Data("[Desktop Entry]\nType=Application\nName=Okular\nExec=cat %U\n".utf8).write(to: applications.appendingPathComponent("org.kde.okular.desktop"))
        try Data("[Desktop Entry]\nName=report.pdf\nType=Link\nURL[$e]=file://$HOME/Sync/report.pdf\nX-KDE-LastOpenedWith=org.kde.okular\n".utf8)
            .write(to: recent.appendingPathComponent("report.pdf.desktop"))
        try Data("[Desktop Entry]\nName=x\nType=Link\nURL[$e]=file://$(touch /tmp/pwned)/x\n".utf8).write(to: recent.appendingPathComponent("x.desktop"))
        var settings = RecentDocumentsSettings(environment: ["HOME": root.path, "XDG_DATA_HOME": root.appendingPathComponent("data").path])
        settings.applicationFolders = [applications.path]
        let source = RecentDocumentsSource(settings: settings, socketPath: "/nonexistent", folders: { SyncedFolders() }, clock: .system, logger: Logger(label: "test"))
        let candidates = source.candidates()
        #expect(candidates.count == 1)
        #expect(candidates.first?.url.filePath == root.path + "/Sync/report.pdf")
        #expect(candidates.first?.application == "org.kde.okular")
        #expect(source.title(of: RecentDocuments.Offer(activity: 1, path: root.path + "/Sync/report.pdf", folder: "sync", application: "org.kde.okular", mimeType: nil, lastUsed: 0))
            == "report.pdf — Okular")
    }
}

/// What the source reads from GTK's `recently-used.xbel` (issue 27 items 2, 4).
@Suite("RecentDocumentsSource: recently-used.xbel entries as candidates (issue 27 item 2)")
struct GTKRecentCandidatesTests {
    @Test("a program recorded quoted as GLib quotes it is still offered, named by its desktop file; one with shell syntax is not")
    func quotedProgram() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-gtk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let applications = root.appendingPathComponent("data/applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        try Data("[Desktop Entry]\nType=Application\nName=LibreOffice\nExec=cat %U\n".utf8).write(to: applications.appendingPathComponent("soffice.desktop"))
        func bookmark(_ name: String, exec: String) -> String {
            """
            <bookmark href="file://\(root.path)/Sync/\(name)" added="2099-01-01T00:00:00Z" modified="2099-01-01T00:00:00Z" visited="2099-01-01T00:00:00Z">
              <info><metadata owner="http://freedesktop.org"><mime:mime-type type="application/vnd.oasis.opendocument.text"/>
                <bookmark:applications><bookmark:application name="LibreOffice Writer" exec="\(exec)" modified="2099-01-01T00:00:00Z" count="1"/></bookmark:applications>
              </metadata></info>
            </bookmark>
            """
        }
        let xbel = """
            <?xml version="1.0" encoding="UTF-8"?>
            <xbel version="1.0" xmlns:bookmark="http://www.freedesktop.org/standards/desktop-bookmarks" xmlns:mime="http://www.freedesktop.org/standards/shared-mime-info">
            \(bookmark("report.odt", exec: "&apos;&apos;\\&apos;&apos;soffice&apos;\\&apos;&apos; --writer %u&apos;"))
            \(bookmark("evil.odt", exec: "&apos;soffice %u $(touch /tmp/pwned)&apos;"))
            </xbel>
            """
        try Data(xbel.utf8).write(to: root.appendingPathComponent("data/recently-used.xbel"))
        var settings = RecentDocumentsSettings(environment: ["HOME": root.path, "XDG_DATA_HOME": root.appendingPathComponent("data").path])
        settings.applicationFolders = [applications.path]
        let source = RecentDocumentsSource(settings: settings, socketPath: "/nonexistent", folders: { SyncedFolders() }, clock: .system, logger: Logger(label: "test"))
        let candidates = source.candidates()
        #expect(candidates.map(\.url.filePath) == [root.path + "/Sync/report.odt"])
        #expect(candidates.first?.application == "soffice")
        #expect(candidates.first?.mimeType == "application/vnd.oasis.opendocument.text")
    }
}
