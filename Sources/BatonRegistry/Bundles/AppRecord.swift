#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the registry knows about one installed app: who it is, what it continues, what it may launch.
public struct AppRecord: Sendable, Hashable {
    /// The activity type of web pages (SEMANTICS E2, E3).
    public static let browsingWebActivityType = "NSUserActivityTypeBrowsingWeb"

    /// How an app is registered (issue 28 item 2).
    public enum Kind: String, Sendable, Hashable, CustomStringConvertible {
        /// A `Name.app` folder with an Info.plist (``AppBundleLoader``).
        case bundle
        /// A `.desktop` file with `X-Baton-*` keys in an XDG applications folder (``DesktopAppLoader``).
        case desktopFile = "desktop-file"

        /// `bundle` or `desktop-file`, as `baton apps list` prints it.
        public var description: String { rawValue }
    }

    /// The `Name.app` folder, or the `.desktop` file of a desktop-file app.
    public let bundleURL: URL
    /// `CFBundleIdentifier`, with build variables expanded where they could be; for a desktop-file app its desktop
    /// file id without `.desktop` (`org.example.Recipes` for `org.example.Recipes.desktop`).
    public let bundleIdentifier: String
    /// Whether the app is a bundle or a desktop file.
    public let kind: Kind
    /// `CFBundleDisplayName` or `CFBundleName`, else the folder's name without `.app`.
    public let name: String
    /// The executable named by `CFBundleExecutable`, when it exists, is executable and lies inside the bundle with
    /// symlinks resolved (issue 10 item 9); otherwise nil, with a warning saying why. For a desktop-file app, its
    /// `TryExec`, else its `Exec` line's program, found on `PATH` when not absolute.
    public let executableURL: URL?
    /// The developer team: `BatonTeamIdentifier` in Info.plist, or the prefix of the entitlements'
    /// `application-identifier`. Apps without one continue nothing (SEMANTICS D1, D3).
    public let teamIdentifier: String?
    /// `NSUserActivityTypes`, in file order, without duplicates.
    public let activityTypes: [String]
    /// The `NSUbiquitousDocumentUserActivityType` of each document type, in file order, without duplicates (B5).
    public let documentActivityTypes: [String]
    /// The associated-domains entitlement (SEMANTICS E3).
    public let associatedDomains: [AssociatedDomain]
    /// Everything odd about the bundle that did not stop it loading, each naming its key.
    public let warnings: [AppBundleWarning]
    /// Whether the bundle identifier and team are known, without unresolved build variables: only then can the
    /// app be chosen to continue an activity.
    public let isIdentityResolved: Bool
    /// `CFBundleIconFile` as the file gives it (a name, with or without its extension, relative to the bundle or its
    /// `Resources`); nil without one. For a desktop-file app its `Icon`: a theme's icon name or an absolute file.
    /// Desktop notifications show it (issue 16).
    public let iconFile: String?
    /// The argument vector that starts a desktop-file app (issue 28 item 4): its `Exec` line's, the program found on
    /// `PATH` (an absolute path), `%f %F %u %U` dropped (no document is opened) and `%i %c %k` expanded, run without a
    /// shell. Nil for a bundle (its executable alone is run) or when `Exec` is missing, invalid or not installed.
    public let launchCommand: [String]?
    /// Whether the desktop file says `DBusActivatable=true`: the app is started by the session bus (its D-Bus service
    /// file), `Exec` being the fallback when the bus has no service for it (issue 28 item 4).
    public let isDBusActivatable: Bool
    /// The Flatpak app id a desktop file exported by Flatpak names (`X-Flatpak=`): only then is a sandboxed process
    /// taken for this app by its Flatpak app id (issue 28 item 3). Nil for any other app.
    public let flatpakID: String?

    /// Every activity type the app can continue (SEMANTICS D1, B5).
    public var claimedActivityTypes: Set<String> {
        Set(activityTypes).union(documentActivityTypes)
    }

    /// Whether the app is a web browser: it claims `NSUserActivityTypeBrowsingWeb` (SEMANTICS E2).
    public var isBrowser: Bool {
        activityTypes.contains(Self.browsingWebActivityType)
    }

    /// `TEAM.bundle.identifier`, the name association files use for the app.
    public var applicationIdentifier: String? {
        teamIdentifier.map { "\($0).\(bundleIdentifier)" }
    }

    /// A record with every field given; ``AppBundleLoader`` makes these from bundles.
    public init(
        bundleURL: URL,
        bundleIdentifier: String,
        name: String,
        executableURL: URL?,
        teamIdentifier: String?,
        activityTypes: [String],
        documentActivityTypes: [String],
        associatedDomains: [AssociatedDomain],
        warnings: [AppBundleWarning],
        isIdentityResolved: Bool,
        iconFile: String? = nil,
        kind: Kind = .bundle,
        launchCommand: [String]? = nil,
        isDBusActivatable: Bool = false,
        flatpakID: String? = nil
    ) {
        self.bundleURL = bundleURL
        self.bundleIdentifier = bundleIdentifier
        self.name = name
        self.executableURL = executableURL
        self.teamIdentifier = teamIdentifier
        self.activityTypes = activityTypes
        self.documentActivityTypes = documentActivityTypes
        self.associatedDomains = associatedDomains
        self.warnings = warnings
        self.isIdentityResolved = isIdentityResolved
        self.iconFile = iconFile
        self.kind = kind
        self.launchCommand = launchCommand
        self.isDBusActivatable = isDBusActivatable
        self.flatpakID = flatpakID
    }
}

/// Something odd about a bundle that did not stop it loading.
public struct AppBundleWarning: Sendable, Hashable, CustomStringConvertible {
    /// The Info.plist or entitlements key (or the desktop file's key) concerned, if the warning is about one.
    public let key: String?
    /// What is odd and what Baton did about it.
    public let message: String

    /// A warning about `key`, or about the bundle as a whole when `key` is nil.
    public init(key: String?, _ message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { key.map { "\($0): \(message)" } ?? message }
}
