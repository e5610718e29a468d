import BatonNotifications
import BatonRegistry
import Logging
import ServiceLifecycle

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension Agent {
    /// What the desktop notifier is given of this agent (issue 26 item 4: it holds no `Agent`): the nearby table's
    /// changes, the offers an app here continues, and Continue. The agent keeps its observers for its life, so the
    /// observer holds only the stream's end, never the notifier.
    func nearbyFeed() -> NearbyFeed {
        NearbyFeed(
            nearbyChanges: { [self] in
                let (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                observeNearby { _, _ in changed.yield() }
                return changes
            },
            offers: { [self] in notificationOffers(await nearbyItems(describe: true)) },
            continueNearby: { [self] device in await continueNearby(device: device) }
        )
    }

    /// The nearby items a desktop notification is shown for (issue 16 part 2; C3): those an app here continues, with
    /// that app's name and icon; for the agent's own media and documents apps, the name of the application they open
    /// it with ("continue it here in mpv"; issue 27 item 3). An offer no app here can continue gets none: choosing it could only fail (`noApp`),
    /// and `baton nearby` still lists it.
    func notificationOffers(_ items: [NearbyItem]) -> [NearbyNotifications.Offer] {
        let registry = registry
        return items.compactMap { item in
            guard !item.app.isEmpty, let app = registry.app(bundleIdentifier: item.app) else { return nil }
            return NearbyNotifications.Offer(
                device: item.device,
                deviceName: item.deviceName,
                sequence: item.sequence,
                // Without an answer from the device (C3's describe timed out) the app's name stands for the title;
                // the answer, when it comes, replaces it.
                title: item.title ?? app.name,
                appName: item.opensWith ?? app.name,
                icon: Self.notificationIcon(of: app) { FileManager.default.fileExists(atPath: $0) }
            )
        }
    }

    /// The icon XDG names when an app has none of its own: the generic application icon of the Icon Naming
    /// Specification's themes.
    static let fallbackNotificationIcon = "application-x-executable"

    /// The app's `CFBundleIconFile` as a `file://` URI, looked for in the bundle and its `Resources` folder, with the
    /// extensions notification servers read when the file names none; else ``fallbackNotificationIcon``. A name that
    /// climbs out of the bundle is not looked for. A desktop-file app's `Icon` is a file or a theme's icon name.
    static func notificationIcon(of app: AppRecord, exists: (String) -> Bool) -> String {
        if app.kind == .desktopFile, let icon = app.iconFile {
            // A desktop file's Icon (issue 28 item 2): an absolute file, else a name in the icon theme, which the
            // notification server looks up itself (Desktop Notifications Specification, app_icon).
            if icon.hasPrefix("/") { return exists(icon) ? URL(fileURLWithPath: icon).absoluteString : fallbackNotificationIcon }
            let themeName = !icon.isEmpty && icon.utf8.count <= 255 && icon.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
            return themeName ? icon : fallbackNotificationIcon
        }
        guard let file = app.iconFile, !file.isEmpty, !file.hasPrefix("/"), !file.split(separator: "/").contains("..")
        else {
            return fallbackNotificationIcon
        }
        let names = file.contains(".") ? [file] : ["png", "svg", "xpm"].map { "\(file).\($0)" }
        for folder in [app.bundleURL, app.bundleURL.appendingPathComponent("Resources")] {
            for name in names {
                let url = folder.appendingPathComponent(name)
                if exists(url.path) { return url.absoluteString }
            }
        }
        return fallbackNotificationIcon
    }
}

/// Desktop notifications of what is nearby (issue 16 part 2): a notification per offer an app here continues, with a
/// Continue action, over the session D-Bus (``NearbyNotifier``, ``NotificationBus``). Last in the group, so it stops
/// first: its notifications are withdrawn while the agent still runs. Without a session bus it does nothing.
struct NotificationService: Service, CustomStringConvertible {
    /// The agent as the notifier sees it (BatonNotifications; issue 26 item 4): no `Agent` is kept here.
    let feed: NearbyFeed
    let logger: Logger
    var description: String { "desktop notifications" }

    init(agent: Agent) {
        feed = agent.nearbyFeed()
        logger = agent.logger
    }

    func run() async {
        let notifier = NearbyNotifier(feed: feed, logger: logger)
        await cancelWhenGracefulShutdown { await notifier.run() }
    }
}
