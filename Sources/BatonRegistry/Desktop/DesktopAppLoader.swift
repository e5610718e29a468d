import BatonActivitySources
import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads an app registered by its desktop file (issue 28 item 2): a `.desktop` file in an XDG applications folder
/// whose `[Desktop Entry]` declares `X-Baton-*` keys, so an app in any language adopts Baton the way Linux apps
/// declare themselves, with no `Name.app` bundle.
///
/// | key | what it gives | as in a bundle |
/// | --- | --- | --- |
/// | `X-Baton-TeamIdentifier` | the team (D1, D3) | `BatonTeamIdentifier` |
/// | `X-Baton-ActivityTypes` | the activity types, a `;` list (D1) | `NSUserActivityTypes` |
/// | `X-Baton-DocumentActivityType` | the activity type of the documents in `MimeType=` (B5) | `NSUbiquitousDocumentUserActivityType` |
/// | `X-Baton-AssociatedDomains` | `applinks:`/`activitycontinuation:` entries, a `;` list (E3) | the associated-domains entitlement |
///
/// The app's identity is its desktop file id without `.desktop` (`org.example.Recipes`), what D-Bus activation names
/// it by too. Its executable (for the agent's identity check) is `TryExec`, else the `Exec` line's program, found on
/// `PATH` when not absolute. A file with no `X-Baton-` key is no Baton app, and is not even parsed; one with them
/// that is odd gets warnings naming the key, as bundles do.
public enum DesktopAppLoader {
    /// What every key Baton reads from a desktop file starts with.
    public static let keyPrefix = "X-Baton-"
    static let teamKey = "X-Baton-TeamIdentifier"
    static let activityTypesKey = "X-Baton-ActivityTypes"
    static let documentTypeKey = "X-Baton-DocumentActivityType"
    static let domainsKey = "X-Baton-AssociatedDomains"
    /// The Desktop Entry specification's key for an app the session bus starts (issue 28 item 4).
    static let dbusActivatableKey = "DBusActivatable"
    /// What Flatpak writes into the desktop files it exports: the app's Flatpak id (issue 28 item 3).
    static let flatpakKey = "X-Flatpak"
    /// The longest team identifier taken: Apple's are 10 characters, and the app listing carries at most 64 bytes.
    static let maximumTeamLength = 64

    /// The bounds of a desktop file: those of the desktop-entry reader (1 MiB, 64 KiB lines).
    public static let limits = KeyFile.Limits.default

    /// The folders programs are looked for in: `PATH`'s absolute folders, else `/usr/local/bin:/usr/bin:/bin`.
    public static func programSearchPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let folders = (environment["PATH"] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return folders.isEmpty ? ["/usr/local/bin", "/usr/bin", "/bin"] : folders
    }

    /// Loads the desktop file `file`, whose desktop file id is `id` (`org.example.Recipes.desktop`).
    ///
    /// - Returns: the app; nil when the file is not a Baton app: no `X-Baton-` key, or `Hidden=true` (the Desktop
    ///   Entry specification's "deleted"), or not a regular file.
    /// - Throws: ``BatonRegistryError`` `invalidDesktopFile` when a file with `X-Baton-` keys cannot be used at all:
    ///   over the size bounds, not a desktop entry (bad syntax, no `Name`), not `Type=Application`, an id that is no
    ///   desktop file id, or a `TryExec` program that is not installed. Everything else is a warning on the record.
    public static func load(_ file: URL, id: String, programSearchPath: [String] = programSearchPath()) throws -> AppRecord? {
        guard let bytes = try readBounded(file) else { return nil }
        guard declaresBaton(bytes) else { return nil }
        func refuse(_ why: String) -> BatonRegistryError {
            BatonRegistryError(.invalidDesktopFile, "\(file.path): \(why)")
        }
        guard bytes.count <= limits.maximumBytes else {
            throw refuse("larger than the \(limits.maximumBytes)-byte limit of desktop files; not read")
        }
        let entry: DesktopEntry
        do {
            entry = try DesktopEntry(bytes, limits: limits)
        } catch let error as ActivitySourceError {
            throw refuse(error.message)
        }
        // The keys must be in [Desktop Entry]: in a comment or a [Desktop Action] group they declare nothing.
        let group = entry.keyFile.groups[DesktopEntry.group] ?? [:]
        guard group.keys.contains(where: { $0.hasPrefix(keyPrefix) }) else { return nil }
        // Hidden=true means deleted (Desktop Entry specification); it still takes its id from later folders.
        guard !entry.hidden else { return nil }
        guard entry.type == "Application" else {
            throw refuse("Type is \(BatonCoreError.quoted(entry.type)): only an Application entry can be a Baton app")
        }
        let desktopID = id.hasSuffix(".desktop") ? String(id.dropLast(8)) : id
        guard DesktopEntry.isValidID(desktopID) else {
            throw refuse("\(BatonCoreError.quoted(id)) is not a desktop file id (letters, digits, '_', '-', '.'), which the app is known by")
        }

        var warnings: [AppBundleWarning] = []
        let fields = DesktopFields(file: entry.keyFile)
        let team = fields.team(warnings: &warnings)
        let activityTypes = fields.list(activityTypesKey, warnings: &warnings)
            .filter { AppBundleLoader.isActivityType($0, key: activityTypesKey, warnings: &warnings) }
        var documentTypes: [String] = []
        if let type = fields.string(documentTypeKey, warnings: &warnings) {
            if entry.mimeTypes.isEmpty {
                warnings.append(AppBundleWarning(key: documentTypeKey, "is given, but the entry has no MimeType= list: no document type to continue; ignored"))
            } else if AppBundleLoader.isActivityType(type, key: documentTypeKey, warnings: &warnings) {
                documentTypes = [type]
            }
        }
        let domains = fields.list(domainsKey, warnings: &warnings).compactMap { AppBundleLoader.associatedDomain($0, key: domainsKey, warnings: &warnings) }
        let executable = try Self.executable(of: entry, searchPath: programSearchPath, warnings: &warnings, refuse: refuse)
        let launchCommand = Self.launchCommand(of: entry, file: file, searchPath: programSearchPath)
        if launchCommand == nil, entry.tryExec?.isEmpty == false, entry.exec != nil {
            // Without TryExec, `executable(of:)` has said already what is wrong with Exec.
            warnings.append(AppBundleWarning(key: "Exec", "is invalid or its program is not installed; the app cannot be launched"))
        }
        let activatable = try? entry.keyFile.bool(dbusActivatableKey, in: DesktopEntry.group)
        if activatable == nil, entry.keyFile.raw(dbusActivatableKey, in: DesktopEntry.group) != nil {
            warnings.append(AppBundleWarning(key: dbusActivatableKey, "is neither true nor false; the app is launched by its Exec line"))
        }
        if team == nil, !warnings.contains(where: { $0.key == teamKey }) {
            warnings.append(AppBundleWarning(key: teamKey, "missing: the app continues no activity"))
        }
        return AppRecord(
            bundleURL: file,
            bundleIdentifier: desktopID,
            name: entry.name,
            executableURL: executable,
            teamIdentifier: team,
            activityTypes: activityTypes.uniqued(),
            documentActivityTypes: documentTypes,
            associatedDomains: domains,
            warnings: warnings,
            isIdentityResolved: team != nil,
            // `Icon`: a theme's icon name or an absolute file, for the desktop notification of an offer (issue 16).
            iconFile: entry.icon.map { $0.trimmingWhitespace() }.flatMap { $0.isEmpty ? nil : $0 },
            kind: .desktopFile,
            launchCommand: launchCommand,
            isDBusActivatable: activatable ?? false,
            flatpakID: entry.keyFile.raw(flatpakKey, in: DesktopEntry.group)?.trimmingWhitespace()
        )
    }

    /// The argument vector that starts the app (issue 28 item 4): the `Exec` line's with no document (`%f %F %u %U`
    /// dropped, `%i %c %k` expanded as the Desktop Entry specification says), its program resolved to an absolute
    /// path as ``resolve(_:searchPath:)`` finds it; nil when `Exec` is missing, invalid or its program not installed.
    static func launchCommand(of entry: DesktopEntry, file: URL, searchPath: [String]) -> [String]? {
        let context = ExecLine.Context(icon: entry.icon, name: entry.name, location: file.path)
        guard let line = try? entry.execLine(), let argv = try? line.commands(opening: [], context: context).first,
            let first = argv.first, let program = resolve(first, searchPath: searchPath)
        else { return nil }
        return [program.path] + argv.dropFirst()
    }

    /// The program Baton checks a process against: `TryExec` (which must be installed, or the entry is not: the
    /// specification says to ignore it), else the `Exec` line's program (a warning when it is missing or not found:
    /// the app is then listed but neither launched nor accepted, as a bundle without its executable).
    static func executable(
        of entry: DesktopEntry,
        searchPath: [String],
        warnings: inout [AppBundleWarning],
        refuse: (String) -> BatonRegistryError
    ) throws -> URL? {
        if let tryExec = entry.tryExec, !tryExec.isEmpty {
            guard let found = resolve(tryExec, searchPath: searchPath) else {
                throw refuse("TryExec names \(BatonCoreError.quoted(tryExec)), which is not installed (no executable file there or on PATH)")
            }
            return found
        }
        let line: ExecLine?
        do {
            line = try entry.execLine()
        } catch let error as ActivitySourceError {
            warnings.append(AppBundleWarning(key: "Exec", "\(error.message); the app cannot be launched"))
            return nil
        }
        guard let program = line?.program else {
            warnings.append(AppBundleWarning(key: "Exec", "missing (and no TryExec): the app cannot be launched"))
            return nil
        }
        guard let found = resolve(program, searchPath: searchPath) else {
            warnings.append(
                AppBundleWarning(key: "Exec", "the program \(BatonCoreError.quoted(program)) is not installed (not an executable file, or not on PATH); the app cannot be launched")
            )
            return nil
        }
        return found
    }

    /// `program` as an executable regular file: itself when absolute, else the first on `searchPath`. A relative
    /// path with a `/` is never taken: it would depend on the agent's working folder; nor a name with a control
    /// character: `stat` would read `prog\0x` as `prog` (found by the `desktop-apps` fuzzer), and the path recorded
    /// would match no process.
    static func resolve(_ program: String, searchPath: [String]) -> URL? {
        guard !program.isEmpty, program.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { return nil }
        func isProgram(_ path: String) -> Bool {
            FileStatus(path: path)?.kind == .regular && FileManager.default.isExecutableFile(atPath: path)
        }
        if program.hasPrefix("/") { return isProgram(program) ? URL(fileURLWithPath: program) : nil }
        guard !program.contains("/") else { return nil }
        return searchPath.lazy.map { $0 + "/" + program }.first(where: isProgram).map { URL(fileURLWithPath: $0) }
    }

    /// Whether a line of the file starts with `X-Baton-` (after spaces): only such files are parsed, so the
    /// hundreds of other desktop files in /usr/share/applications cost a read and nothing else, and their oddities
    /// are none of Baton's business.
    static func declaresBaton(_ bytes: [UInt8]) -> Bool {
        let prefix = Array(keyPrefix.utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return false }
            var offset = 0
            // memchr finds each 'X' (fast in any build, where a loop over every byte of hundreds of files is not); each
            // is then checked to begin the prefix and its line.
            while offset < buffer.count, let found = memchr(base + offset, Int32(prefix[0]), buffer.count - offset) {
                let position = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                offset = position + 1
                guard buffer[position...].starts(with: prefix) else { continue }
                var before = position - 1
                while before >= 0, buffer[before] == UInt8(ascii: " ") || buffer[before] == UInt8(ascii: "\t") { before -= 1 }
                if before < 0 || buffer[before] == UInt8(ascii: "\n") { return true }
            }
            return false
        }
    }

    /// At most one byte more than ``limits``' `maximumBytes` of the regular file at `file` (so a larger one is known
    /// to be larger without being read whole); nil for anything else (a folder, a FIFO, nothing there).
    static func readBounded(_ file: URL) throws -> [UInt8]? {
        guard let status = FileStatus(path: file.path), status.kind == .regular else { return nil }
        // Non-blocking: a FIFO put there after the check above must not hang the registry.
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw BatonRegistryError(.invalidDesktopFile, "\(file.path): cannot be read (\(String(cString: strerror(errno))))")
        }
        defer { close(descriptor) }
        // Sized by the file (a desktop file is kilobytes; a fresh megabyte for each of hundreds of files was most of a
        // reload's time), with a byte more to see that it grew since the stat.
        let capacity = min(status.size, limits.maximumBytes) + 1
        var bytes = [UInt8](repeating: 0, count: capacity)
        var count = 0
        while count < capacity {
            let got = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress.map { $0 + count }, capacity - count)
            }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        bytes.removeSubrange(count...)
        return bytes
    }
}

/// The `X-Baton-*` values of one `[Desktop Entry]`, each odd one a warning naming its key (as ``AppBundleLoader``'s
/// field reader does for Info.plist keys).
private struct DesktopFields {
    let file: KeyFile

    /// The value of `key`, trimmed; `ifEmpty` says what an empty one means.
    func string(_ key: String, ifEmpty: String = "ignored", warnings: inout [AppBundleWarning]) -> String? {
        do {
            guard let text = try file.string(key, in: DesktopEntry.group)?.trimmingWhitespace() else { return nil }
            guard !text.isEmpty else {
                warnings.append(AppBundleWarning(key: key, "is empty; \(ifEmpty)"))
                return nil
            }
            return text
        } catch let error as ActivitySourceError {
            warnings.append(AppBundleWarning(key: key, "\(error.message); ignored"))
        } catch {
            warnings.append(AppBundleWarning(key: key, "\(error); ignored"))
        }
        return nil
    }

    /// A `;` list, its empty items dropped; a list with no item is a warning.
    func list(_ key: String, warnings: inout [AppBundleWarning]) -> [String] {
        do {
            guard let items = try file.strings(key, in: DesktopEntry.group) else { return [] }
            let kept = items.map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
            if kept.isEmpty { warnings.append(AppBundleWarning(key: key, "is empty; ignored")) }
            return kept
        } catch let error as ActivitySourceError {
            warnings.append(AppBundleWarning(key: key, "\(error.message); ignored"))
        } catch {
            warnings.append(AppBundleWarning(key: key, "\(error); ignored"))
        }
        return []
    }

    /// The team: 1 to 64 ASCII letters, digits, `-`, `_` or `.`, as Apple's (10 letters and digits) and the reverse
    /// domain names some teams use are.
    func team(warnings: inout [AppBundleWarning]) -> String? {
        let key = DesktopAppLoader.teamKey
        guard let team = string(key, ifEmpty: "the app continues no activity", warnings: &warnings) else { return nil }
        guard team.utf8.count <= DesktopAppLoader.maximumTeamLength,
            team.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
        else {
            warnings.append(
                AppBundleWarning(key: key, "\(BatonCoreError.quoted(team)) is not a team identifier (1 to 64 letters, digits, '-', '_' or '.'): the app continues no activity")
            )
            return nil
        }
        return team
    }
}
