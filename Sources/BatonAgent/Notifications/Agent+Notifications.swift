import BatonRegistry

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension Agent {
    /// The nearby items a desktop notification is shown for (issue 16 part 2; C3): those an app here continues, with
    /// that app's name and icon. An offer no app here can continue gets none: choosing it could only fail (`noApp`),
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
                appName: app.name,
                icon: Self.notificationIcon(of: app) { FileManager.default.fileExists(atPath: $0) }
            )
        }
    }

    /// The icon XDG names when an app has none of its own: the generic application icon of the Icon Naming
    /// Specification's themes.
    static let fallbackNotificationIcon = "application-x-executable"

    /// The app's `CFBundleIconFile` as a `file://` URI, looked for in the bundle and its `Resources` folder, with the
    /// extensions notification servers read when the file names none; else ``fallbackNotificationIcon``. A name that
    /// climbs out of the bundle is not looked for.
    static func notificationIcon(of app: AppRecord, exists: (String) -> Bool) -> String {
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
