import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Recent documents as a Handoff app (issue 27 item 2): an app every agent with the source on registers itself, as it
/// does the browser (issue 14), with no bundle and no executable. The agent's own ``RecentDocumentsSource`` connects as
/// it (only the agent's process may: ``Agent/inAgentApps``); it is never launched. Its activities carry the
/// document's `file:` URL under `NSUserActivityDocumentURL` (B5), which the agents move between synced folders (C9),
/// and the application that used it, for the other device to open it with (B6).
public enum RecentDocumentsApp {
    /// The app's bundle identifier.
    public static let bundleIdentifier = "org.baton.documents"
    /// Its team: no other app's, so its activities reach no other app by team (D1, D3).
    public static let teamIdentifier = "BATONDOCS1"
    /// Its name in `baton apps list --agent` and `baton nearby`.
    public static let name = "Recent documents"
    /// The activity type of a document open.
    public static let activityType = "org.baton.document.open"
    /// Where the document's URL is (B5's key).
    static let documentURLKey = "NSUserActivityDocumentURL"
    /// The desktop file id of the application that used it, and its MIME type.
    static let applicationKey = "org.baton.desktopEntry"
    static let mimeTypeKey = "org.baton.mimeType"

    /// `registry` with the app last, unless an installed bundle already has its identifier.
    static func adding(to registry: AppRegistry) -> AppRegistry {
        registry.addingInAgentApp(bundle: bundleIdentifier, name: name, team: teamIdentifier, activityTypes: [activityType])
    }

    /// The state of `offer` as the originating app gives it (C4), titled `title`.
    static func payload(_ offer: RecentDocuments.Offer, title: String) throws -> Data {
        var payload = try ActivityPayload(activityType: activityType)
        payload.title = title
        var userInfo: [String: PropertyList] = [documentURLKey: .url(URL(fileURLWithPath: offer.path))]
        if let application = offer.application { userInfo[applicationKey] = .string(application) }
        if let mimeType = offer.mimeType { userInfo[mimeTypeKey] = .string(mimeType) }
        payload.userInfo = userInfo
        return try payload.encoded()
    }

    /// What a continued state asks to open: the document (a `file:` URL at this device's path, as the agent rewrote
    /// it, C9), the application, the MIME type.
    struct Continued: Sendable, Hashable {
        var url: URL
        var application: String?
        var mimeType: String?
    }

    /// Reads a state delivered here. Nil when it names no local `file:` URL (a foreign one stays unopened, C9).
    static func continued(_ data: Data) -> Continued? {
        guard let payload = try? ActivityPayload(decoding: data), payload.activityType == activityType,
            case .url(let url) = payload.userInfo[documentURLKey], url.isFileURL
        else { return nil }
        var application: String?
        if case .string(let id) = payload.userInfo[applicationKey] { application = id }
        var mimeType: String?
        if case .string(let type) = payload.userInfo[mimeTypeKey] { mimeType = type }
        return Continued(url: url, application: application, mimeType: mimeType)
    }
}
