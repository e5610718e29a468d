import BatonActivitySources
import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The installed applications as the Desktop Entry and MIME Applications specifications find them (issue 27 item 2):
/// a desktop file by its id in the applications folders, the default application for a MIME type from
/// `mimeapps.list`, and the argument vectors that open a document with one, never through a shell (B6).
///
/// Reads files only, each bounded (``maximumFileBytes``); an unreadable, oversized or malformed file is skipped as if
/// absent, never fatal.
struct DesktopApplications: Sendable {
    /// The largest desktop file or `mimeapps.list` read: far above any real one (a few KB), small enough to read at once.
    static let maximumFileBytes = 256 * 1024
    /// The most applications a `[Default Applications]` line lists that are tried.
    static let maximumDefaults = 16
    /// The largest `globs2` read: Debian's is 35 KB.
    static let maximumGlobsBytes = 1 << 20
    /// The most MIME types a file name is taken to have (`*.ogg` is four in Debian's globs).
    static let maximumMIMETypes = 8

    /// An application found and usable here.
    struct Application: Sendable, Hashable {
        var id: String
        var entry: DesktopEntry
        /// The desktop file's path, for `%k`.
        var file: String
    }

    /// Why a document is not opened.
    struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        var description: String
    }

    let settings: RecentDocumentsSettings

    /// The desktop file `id` in the first applications folder that has it; nil when none has it, it is malformed, or
    /// it is hidden (`Hidden=true` there deletes it for every later folder too).
    func entry(id: String) -> Application? {
        guard DesktopEntry.isValidID(id) else { return nil }
        for folder in settings.applicationFolders {
            let file = folder + "/" + id + ".desktop"
            guard let data = Self.read(file) else { continue }
            guard let entry = try? DesktopEntry(data), !entry.hidden else { return nil }
            return Application(id: id, entry: entry, file: file)
        }
        return nil
    }

    /// `id`'s application when it can run here: an `Application` with an `Exec` line Baton accepts, not for a terminal,
    /// and its `TryExec` program installed.
    func usable(id: String) -> Application? {
        guard let application = entry(id: id), application.entry.type == "Application", !application.entry.terminal,
            let exec = try? application.entry.execLine(), resolve(exec.program) != nil
        else { return nil }
        if let tryExec = application.entry.tryExec, !tryExec.isEmpty, resolve(tryExec) == nil { return nil }
        return application
    }

    /// The default applications for `mimeType`, first first, from `[Default Applications]` of every `mimeapps.list`.
    func defaults(for mimeType: String) -> [String] {
        var ids: [String] = []
        for file in settings.mimeAppsFiles {
            guard let data = Self.read(file) else { continue }
            for id in Self.defaults(for: mimeType, in: data) where !ids.contains(id) { ids.append(id) }
            if ids.count >= Self.maximumDefaults { break }
        }
        return Array(ids.prefix(Self.maximumDefaults))
    }

    /// The desktop file ids `[Default Applications]` of one `mimeapps.list` gives `mimeType`, in order. Read line by line
    /// (a MIME type is no desktop-entry key: `KeyFile` refuses its `/`); lines that are not UTF-8 or not `key=value`
    /// are skipped, and ids that are not valid desktop file ids dropped.
    static func defaults(for mimeType: String, in data: Data) -> [String] {
        var inDefaults = false
        for raw in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let line = String(validating: raw, as: UTF8.self)?.trimmingWhitespace(), !line.isEmpty, !line.hasPrefix("#") else { continue }
            if line.hasPrefix("[") {
                inDefaults = line == "[Default Applications]"
                continue
            }
            guard inDefaults, let equals = line.firstIndex(of: "="), line[..<equals].trimmingWhitespace() == mimeType else { continue }
            return line[line.index(after: equals)...].split(separator: ";").prefix(maximumDefaults).compactMap { entry in
                let file = entry.trimmingWhitespace()
                guard file.hasSuffix(".desktop") else { return nil }
                let id = String(file.dropLast(".desktop".count))
                return DesktopEntry.isValidID(id) ? id : nil
            }
        }
        return []
    }

    /// The application that opens a document: `preferred` (the one that used it there) when it can run here, else
    /// the first default for `mimeType` that can.
    func application(preferred: String?, mimeType: String?) -> Application? {
        application(preferred: preferred, mimeTypes: mimeType.map { [$0] } ?? [])
    }

    /// As ``application(preferred:mimeType:)`` for a file whose type is one of `mimeTypes`, most likely first.
    func application(preferred: String?, mimeTypes: [String]) -> Application? {
        if let preferred, let application = usable(id: preferred) { return application }
        return mimeTypes.lazy.flatMap(defaults(for:)).compactMap(usable(id:)).first
    }

    /// The MIME types shared-mime-info's `globs2` files give a file called `name`, most likely first (by weight, then
    /// the longer pattern), at most ``maximumMIMETypes``. Only `*.ext` patterns are read: the others are rare, and
    /// telling apart the types one extension has would take the file's content (`*.ogg` is audio or video).
    func mimeTypes(forFileName name: String) -> [String] {
        var matches: [(weight: Int, length: Int, type: String)] = []
        for file in settings.mimeGlobFiles {
            guard let data = Self.read(file, maximumBytes: Self.maximumGlobsBytes) else { continue }
            matches += Self.globMatches(name, in: data)
        }
        var types: [String] = []
        // A stable sort keeps the files' own order among equals (a user's globs before the system's).
        for match in matches.enumerated().sorted(by: { ($0.element.weight, $0.element.length, -$0.offset) > ($1.element.weight, $1.element.length, -$1.offset) })
        where !types.contains(match.element.type) {
            types.append(match.element.type)
            if types.count == Self.maximumMIMETypes { break }
        }
        return types
    }

    /// The `weight:type:*.ext[:flags]` lines of one `globs2` that match `name` (case-insensitively unless `cs`).
    /// Lines that are not UTF-8, not in that form, or of another pattern are skipped.
    static func globMatches(_ name: String, in data: Data) -> [(weight: Int, length: Int, type: String)] {
        let lowered = name.lowercased()
        var matches: [(weight: Int, length: Int, type: String)] = []
        for raw in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let line = String(validating: raw, as: UTF8.self), !line.hasPrefix("#") else { continue }
            let fields = line.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, let weight = Int(fields[0]), weight >= 0, weight <= 100, fields[1].contains("/") else { continue }
            let pattern = fields[2]
            guard pattern.hasPrefix("*."), pattern.count > 2, !pattern.dropFirst().contains(where: { "*?[".contains($0) }) else { continue }
            let caseSensitive = fields.count == 4 && fields[3].split(separator: ",").contains("cs")
            let suffix = pattern.dropFirst()
            guard caseSensitive ? name.hasSuffix(suffix) : lowered.hasSuffix(suffix.lowercased()) else { continue }
            matches.append((weight, pattern.count, String(fields[1])))
        }
        return matches
    }

    /// The programs to start to open `url` with `application`: each an absolute path and its arguments.
    /// - Throws: ``Refusal`` when the line cannot take the document or its program is not installed.
    func commands(opening url: URL, with application: Application) throws -> [(program: String, arguments: [String])] {
        do {
            guard let exec = try application.entry.execLine() else { throw Refusal(description: "\(application.id) has no Exec line") }
            let document = try ActivityURL(url.absoluteString)
            let context = ExecLine.Context(icon: application.entry.icon, name: application.entry.name, location: application.file)
            return try exec.commands(opening: [document], context: context).map { argv in
                guard let first = argv.first, let program = resolve(first) else {
                    throw Refusal(description: "\(application.id)'s program \(argv.first ?? "") is not installed here")
                }
                return (program, Array(argv.dropFirst()))
            }
        } catch let error as ActivitySourceError {
            throw Refusal(description: "\(application.id) cannot open \(url.path): \(error.message)")
        }
    }

    /// `program` as an absolute path to an executable file: as given when it has a `/`, else found on the search path.
    func resolve(_ program: String) -> String? {
        if program.contains("/") {
            return program.hasPrefix("/") && FileManager.default.isExecutableFile(atPath: program) ? program : nil
        }
        return settings.searchPath.lazy.map { $0 + "/" + program }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The file at `path` when it is a regular file of at most ``maximumFileBytes``.
    static func read(_ path: String, maximumBytes: Int = maximumFileBytes) -> Data? {
        guard let status = FileStatus(path: path), status.kind == .regular, status.size <= maximumBytes else { return nil }
        guard let data = FileManager.default.contents(atPath: path), data.count <= maximumBytes else { return nil }
        return data
    }
}
