import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Loads an app bundle on Linux: a folder `Name.app/` with an `Info.plist` (XML or binary), the executable named by
/// `CFBundleExecutable`, and optionally `Name.entitlements` or `Entitlements.plist`.
///
/// Real Info.plist files load unchanged. Build variables are expanded from the bundle's own values (and from an
/// optional `BatonBuildSettings` dictionary in the Info.plist); what cannot be resolved is reported. A key of the
/// wrong type (focus-ios declares `NSUserActivityTypes` as a dictionary) is a warning naming the key, and the rest
/// of the file still loads.
public enum AppBundleLoader {
    /// Info.plist and entitlements files larger than this are refused (real ones are kilobytes; CotEditor's, one of
    /// the largest, is 38 KB).
    public static let maximumFileSize = 4 << 20

    static let entitlementsDomainsKey = "com.apple.developer.associated-domains"

    /// Loads the bundle at `url`.
    ///
    /// `buildSettings` are values a packager knows (`PRODUCT_BUNDLE_IDENTIFIER`, `DEVELOPMENT_TEAM`, ...); the
    /// Info.plist's own `BatonBuildSettings` dictionary overrides them. Keys Xcode fills from build settings when it
    /// generates an Info.plist (`CFBundleIdentifier`, `CFBundleExecutable`) default to their variables when absent.
    /// - Throws: ``BatonRegistryError`` when the bundle has no readable Info.plist or the file is not a dictionary.
    ///   Everything else becomes a warning on the record.
    public static func load(_ url: URL, buildSettings: [String: String] = [:]) throws -> AppRecord {
        let infoURL = url.appendingPathComponent("Info.plist")
        let info = try readDictionary(infoURL, what: "Info.plist")
        var warnings: [AppBundleWarning] = []

        let folderName = url.deletingPathExtension().lastPathComponent
        let entitlementsURL = [
            url.appendingPathComponent("\(folderName).entitlements"), url.appendingPathComponent("Entitlements.plist"),
        ].first { FileManager.default.fileExists(atPath: $0.path) }
        var entitlements: [String: PropertyList] = [:]
        if let entitlementsURL {
            do {
                entitlements = try readDictionary(entitlementsURL, what: "entitlements")
            } catch let error as BatonRegistryError {
                warnings.append(AppBundleWarning(key: nil, "entitlements ignored: \(error.message)"))
            }
        }

        let fields = FieldReader(info: info)
        var variables = BuildVariables(buildSettings)
        if let settings = info["BatonBuildSettings"] {
            if case .dictionary(let entries) = settings {
                for (name, value) in entries {
                    if case .string(let text) = value { variables.values[name] = text }
                }
            } else {
                warnings.append(AppBundleWarning(key: "BatonBuildSettings", "should be a dict, found a \(settings.typeName); ignored"))
            }
        }
        // The bundle's own values, where a file states them literally, define the variables Xcode would set.
        func literal(_ key: String) -> String? {
            guard let text = info[key]?.stringValue, !text.contains("$("), !text.contains("${") else { return nil }
            return text
        }
        let productName = variables.values["PRODUCT_NAME"] ?? literal("CFBundleName") ?? folderName
        variables.values["PRODUCT_NAME"] = productName
        variables.values["TARGET_NAME"] = variables.values["TARGET_NAME"] ?? productName
        variables.values["PRODUCT_MODULE_NAME"] =
            variables.values["PRODUCT_MODULE_NAME"] ?? BuildVariables.apply(modifier: "c99extidentifier", to: productName)
        variables.values["EXECUTABLE_NAME"] = variables.values["EXECUTABLE_NAME"] ?? literal("CFBundleExecutable") ?? productName
        if let identifier = literal("CFBundleIdentifier") {
            variables.values["PRODUCT_BUNDLE_IDENTIFIER"] = variables.values["PRODUCT_BUNDLE_IDENTIFIER"] ?? identifier
        }

        var unresolved: [String: Set<String>] = [:]
        func expand(_ text: String, key: String) -> String {
            let expansion = variables.expand(text)
            if !expansion.isResolved { unresolved[key, default: []].formUnion(expansion.unresolved) }
            return expansion.text
        }

        let team = resolveTeam(info: info, entitlements: entitlements, variables: variables, warnings: &warnings)
        if let team {
            variables.values["DEVELOPMENT_TEAM"] = variables.values["DEVELOPMENT_TEAM"] ?? team
            variables.values["TeamIdentifierPrefix"] = variables.values["TeamIdentifierPrefix"] ?? team + "."
            variables.values["AppIdentifierPrefix"] = variables.values["AppIdentifierPrefix"] ?? team + "."
        }

        let rawIdentifier = fields.string("CFBundleIdentifier", warnings: &warnings) ?? "$(PRODUCT_BUNDLE_IDENTIFIER)"
        let bundleIdentifier = expand(rawIdentifier.isEmpty ? "$(PRODUCT_BUNDLE_IDENTIFIER)" : rawIdentifier, key: "CFBundleIdentifier")
        let name = (fields.string("CFBundleDisplayName", warnings: &warnings)).map { expand($0, key: "CFBundleDisplayName") }
            ?? (fields.string("CFBundleName", warnings: &warnings)).map { expand($0, key: "CFBundleName") }
            ?? folderName
        let iconFile = fields.string("CFBundleIconFile", warnings: &warnings).map { expand($0, key: "CFBundleIconFile") }

        let activityTypes = fields.stringArray("NSUserActivityTypes", warnings: &warnings)
            .map { expand($0, key: "NSUserActivityTypes") }
            .filter { isActivityType($0, key: "NSUserActivityTypes", warnings: &warnings) }
        let documentTypes = fields.documentActivityTypes(warnings: &warnings)
            .map { expand($0, key: "CFBundleDocumentTypes") }
            .filter { isActivityType($0, key: "CFBundleDocumentTypes", warnings: &warnings) }
        let domains = FieldReader(info: entitlements).stringArray(entitlementsDomainsKey, warnings: &warnings)
            .compactMap { associatedDomain(expand($0, key: entitlementsDomainsKey), key: entitlementsDomainsKey, warnings: &warnings) }

        let executable = expand(fields.string(executableKey, warnings: &warnings) ?? "$(EXECUTABLE_NAME)", key: executableKey)
        let executableURL = Self.executable(named: executable, in: url, warnings: &warnings)

        for (key, names) in unresolved.sorted(by: { $0.key < $1.key }) {
            // Names come from the file: each is quoted short, and a flood of them is counted, not listed.
            var list = names.sorted().prefix(5).map { BatonCoreError.quoted("$(\($0))") }.joined(separator: ", ")
            if names.count > 5 { list += " and \(names.count - 5) more" }
            warnings.append(AppBundleWarning(key: key, "unresolved build variable \(list) (set it in BatonBuildSettings)"))
        }
        if team == nil {
            warnings.append(
                AppBundleWarning(
                    key: nil,
                    "no team identifier (BatonTeamIdentifier or application-identifier): the app continues no activity"
                )
            )
        }
        let identityResolved = team != nil && unresolved["CFBundleIdentifier"] == nil

        return AppRecord(
            bundleURL: url,
            bundleIdentifier: bundleIdentifier,
            name: name,
            executableURL: executableURL,
            teamIdentifier: team,
            activityTypes: activityTypes.uniqued(),
            documentActivityTypes: documentTypes.uniqued(),
            associatedDomains: domains,
            warnings: warnings,
            isIdentityResolved: identityResolved,
            iconFile: iconFile
        )
    }

    /// Whether `type` can be an activity's type; a type no activity can have (SEMANTICS A1: empty, too long, control
    /// characters) could never be continued, and is a warning naming `key`. Desktop files' types too (issue 28 item 2).
    static func isActivityType(_ type: String, key: String, warnings: inout [AppBundleWarning]) -> Bool {
        do {
            try ActivityPayload.validateActivityType(type)
            return true
        } catch {
            let reason = (error as? BatonCoreError)?.message ?? "\(error)"
            warnings.append(AppBundleWarning(key: key, "\(BatonCoreError.quoted(type)) is not an activity type (\(reason)); ignored"))
            return false
        }
    }

    /// An associated-domains entry (E3), or nil with a warning naming `key` when it is not `service:domain`.
    static func associatedDomain(_ text: String, key: String, warnings: inout [AppBundleWarning]) -> AssociatedDomain? {
        guard let domain = AssociatedDomain(text) else {
            warnings.append(AppBundleWarning(key: key, "\(BatonCoreError.quoted(text)) is not service:domain; ignored"))
            return nil
        }
        return domain
    }

    /// The team: `BatonTeamIdentifier`, else the prefix of `application-identifier` (or Apple's
    /// `com.apple.application-identifier`), else `com.apple.developer.team-identifier`. Unresolved values do not count.
    static func resolveTeam(
        info: [String: PropertyList],
        entitlements: [String: PropertyList],
        variables: BuildVariables,
        warnings: inout [AppBundleWarning]
    ) -> String? {
        func resolved(_ value: PropertyList?) -> String? {
            guard let text = value?.stringValue else { return nil }
            let expansion = variables.expand(text)
            return expansion.isResolved && !expansion.text.isEmpty ? expansion.text : nil
        }
        if let team = resolved(info["BatonTeamIdentifier"]) { return team }
        for key in ["application-identifier", "com.apple.application-identifier"] {
            if let identifier = resolved(entitlements[key]), let dot = identifier.firstIndex(of: "."), dot > identifier.startIndex {
                return String(identifier[..<dot])
            }
        }
        return resolved(entitlements["com.apple.developer.team-identifier"])
    }

    static func readDictionary(_ url: URL, what: String) throws -> [String: PropertyList] {
        guard let size = FileStatus(path: url.path)?.size else {
            throw BatonRegistryError(.bundleUnreadable, "\(url.path): no \(what) (or it cannot be read)")
        }
        // Refused before reading: Foundation's Data(contentsOf:) leaks its 4 KiB read buffer on an empty file (found by
        // scripts/fuzz.sh bundles under LeakSanitizer; issue 25 item 11), and an empty file is no property list anyway.
        guard size > 0 else {
            throw BatonRegistryError(.invalidInfoPlist, "\(url.path): empty (0 bytes), not a property list")
        }
        guard size <= maximumFileSize else {
            throw BatonRegistryError(.invalidInfoPlist, "\(url.path): \(size) bytes, larger than the \(maximumFileSize)-byte limit")
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw BatonRegistryError(.bundleUnreadable, "\(url.path): cannot be read")
        }
        let value: PropertyList
        do {
            value = try PropertyList.decode(data).value
        } catch let error as BatonCoreError {
            throw BatonRegistryError(.invalidInfoPlist, "\(url.path): \(error)")
        }
        guard case .dictionary(let entries) = value else {
            throw BatonRegistryError(.invalidInfoPlist, "\(url.path): the top level is a \(value.typeName), not a dict")
        }
        return entries
    }
}

/// Typed access to a plist dictionary where a wrongly typed key becomes a warning naming it, never an error.
private struct FieldReader {
    let info: [String: PropertyList]

    func string(_ key: String, warnings: inout [AppBundleWarning]) -> String? {
        guard let value = info[key] else { return nil }
        guard case .string(let text) = value else {
            warnings.append(AppBundleWarning(key: key, "should be a string, found a \(value.typeName); ignored"))
            return nil
        }
        return text
    }

    /// An array of strings. Another type for the whole key, or for an element, is a warning; the rest is kept.
    func stringArray(_ key: String, warnings: inout [AppBundleWarning]) -> [String] {
        guard let value = info[key] else { return [] }
        guard case .array(let elements) = value else {
            warnings.append(
                AppBundleWarning(
                    key: key,
                    "should be an array of strings, found a \(value.typeName); ignored, as Apple's system ignores it"
                )
            )
            return []
        }
        return elements.enumerated().compactMap { index, element in
            guard case .string(let text) = element else {
                warnings.append(AppBundleWarning(key: key, "element \(index) is a \(element.typeName), not a string; ignored"))
                return nil
            }
            return text
        }
    }

    /// Every document type's `NSUbiquitousDocumentUserActivityType` (SEMANTICS B5).
    func documentActivityTypes(warnings: inout [AppBundleWarning]) -> [String] {
        let key = "CFBundleDocumentTypes"
        guard let value = info[key] else { return [] }
        guard case .array(let documentTypes) = value else {
            warnings.append(AppBundleWarning(key: key, "should be an array of dicts, found a \(value.typeName); ignored"))
            return []
        }
        return documentTypes.enumerated().compactMap { index, documentType in
            guard case .dictionary(let entries) = documentType else {
                warnings.append(AppBundleWarning(key: key, "element \(index) is a \(documentType.typeName), not a dict; ignored"))
                return nil
            }
            guard let activityType = entries["NSUbiquitousDocumentUserActivityType"] else { return nil }
            guard case .string(let text) = activityType else {
                warnings.append(
                    AppBundleWarning(
                        key: key,
                        "element \(index): NSUbiquitousDocumentUserActivityType is a \(activityType.typeName), not a string"
                    )
                )
                return nil
            }
            return text
        }
    }
}

extension Array where Element: Hashable {
    /// The elements in order, each kept at its first occurrence.
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
