import Foundation
import Testing

/// Something from outside the package that a test needs (a program, a Python module, root) and the Debian packages
/// that bring it (issue 24). `swift test` on a machine with only the Swift toolchain passes, and says what it skipped:
///
/// - a test that needs one says so with the ``Testing/Trait/requires(_:sourceLocation:)`` trait, and where it is
///   missing Swift Testing reports the test as skipped with the package (`➜ Test x() skipped: "needs nginx (apt-get
///   install nginx-light)"`), never as passed with its body not run;
/// - a test that learns only while running that it cannot go on (a browser that cannot start here) calls
///   ``unusable(_:sourceLocation:)`` or ``require(sourceLocation:)``, which cancel it with the same words
///   (`Test.cancel`: `➜ Test x() was cancelled after 4.6 seconds: "needs Xvfb (apt-get install xvfb): ..."`, a skip,
///   not a failure).
///
/// `BATON_TEST_REQUIRE_ALL=1` (what CI sets, after `scripts/test-deps.sh` installed everything) turns every such skip
/// into a failure that says what is missing and which package brings it, so CI runs every test.
/// `BATON_TEST_HIDE=nginx,python3` (requirement or program names, or `all`) makes requirements missing on purpose, to
/// see what a machine without them reports.
///
/// A requirement is looked at once, when first used (the catalogue's are `static let`s), and then remembered.
public struct Requirement: Sendable, CustomStringConvertible {
    /// Its short name, as `BATON_TEST_HIDE` says it: "nginx", "python3-dbus", "root", "netns".
    public let name: String
    /// What messages call it: its name, or a phrase where the name is terse ("network namespaces (root)").
    public let label: String
    /// The Debian packages that bring it (`apt-get install` these); empty where no package can (root).
    public let packages: [String]
    /// What else a person must do for it, said before the packages (for root: run the tests as root).
    public let advice: String?
    /// Why it is not met here (what was looked for, or what a probe said), or nil when it is.
    public let missing: String?
    /// The full path of the program that meets it, where it is met by one.
    public let path: String?

    /// Looks for the first of `programs` that is installed (a name on PATH, then in the sbin folders a person's PATH
    /// may lack, or an absolute path), then runs `probe` with it (nil where there are no programs); `probe` returns
    /// why the requirement is still not met (a Python module is missing), or nil.
    public init(
        _ name: String,
        label: String? = nil,
        programs: [String] = [],
        packages: [String],
        advice: String? = nil,
        probe: (@Sendable (_ program: String?) -> String?)? = nil
    ) {
        self.name = name
        self.label = label ?? name
        self.packages = packages
        self.advice = advice
        let hidden = Self.hidden
        var found: String?
        var missing: String?
        if hidden.contains("all") || hidden.contains(name.lowercased()) {
            missing = "\(self.label) is hidden by BATON_TEST_HIDE"
        } else if !programs.isEmpty {
            found = programs.lazy.compactMap { Self.find($0, hidden: hidden) }.first
            if found == nil {
                let folders = Self.searchPath.joined(separator: ":")
                missing = "no \(programs.joined(separator: " or ")) on PATH or in /usr/local/sbin, /usr/sbin, /sbin (PATH is \(folders))"
            }
        }
        if missing == nil, let probe { missing = probe(found) }
        self.missing = missing
        self.path = missing == nil ? found : nil
    }

    public var description: String { label }

    /// Whether it is met here.
    public var isMet: Bool { missing == nil }

    /// What the test needs and how to get it: "needs nginx (apt-get install nginx-light)".
    public var needs: String { Self.needs([self]) }

    /// What `requirements` need and how to get them, in one phrase: "needs nginx and openssl (apt-get install
    /// nginx-light openssl)".
    public static func needs(_ requirements: [Requirement]) -> String {
        let names = requirements.map(\.label)
        let list = names.count <= 1 ? names.joined() : names.dropLast().joined(separator: ", ") + " and " + (names.last ?? "")
        func unique(_ items: [String]) -> [String] { items.reduce(into: []) { if !$0.contains($1) { $0.append($1) } } }
        var how = unique(requirements.compactMap(\.advice))
        let packages = unique(requirements.flatMap(\.packages))
        if !packages.isEmpty { how.append("apt-get install " + packages.joined(separator: " ")) }
        return "needs \(list)" + (how.isEmpty ? "" : " (\(how.joined(separator: "; ")))")
    }

    /// The program's URL, for a test to run it. Where the requirement is missing (a test without the trait), ends the
    /// test as ``require(sourceLocation:)`` does.
    public func executable(sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        try require(sourceLocation: sourceLocation)
        guard let path else { try unusable("it is met by no program", sourceLocation: sourceLocation) }
        return URL(fileURLWithPath: path)
    }

    /// Ends the running test where this requirement is missing, as the trait would have before it started: for a need
    /// found only mid-test (Xvfb, after headless Chromium did not do).
    public func require(sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let missing else { return }
        try unusable(missing, sourceLocation: sourceLocation)
    }

    /// Ends the running test because this requirement cannot serve here after all (`why`: Chromium exited at start):
    /// reported as skipped, naming the package; under `BATON_TEST_REQUIRE_ALL=1`, a failure saying the same.
    /// Call it from the test's own task (not from another thread), and not inside a `catch` that records every error.
    public func unusable(_ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Never {
        try Self.unusable([self], why, sourceLocation: sourceLocation)
    }

    /// Ends the running test because `requirements`, together, cannot serve here (`why`: a script that needs them
    /// all said one is missing), as ``unusable(_:sourceLocation:)`` does for one.
    public static func unusable(_ requirements: [Requirement], _ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Never {
        if requireAll { throw Missing(needs: needs(requirements), reasons: [why]) }
        try Test.cancel(Comment(rawValue: "\(needs(requirements)): \(why)"), sourceLocation: sourceLocation)
    }

    /// For the trait: true where all of `requirements` are met, false (skip) where one is not; under
    /// `BATON_TEST_REQUIRE_ALL=1` it throws ``Missing`` instead, which Swift Testing records as the test's failure.
    public static func areMet(_ requirements: [Requirement]) throws -> Bool {
        let missing = requirements.filter { !$0.isMet }
        guard !missing.isEmpty else { return true }
        guard requireAll else { return false }
        throw Missing(needs: needs(missing), reasons: missing.compactMap(\.missing))
    }

    /// A requirement missing where `BATON_TEST_REQUIRE_ALL=1` forbids skipping: what the test needs and why it is not
    /// there.
    public struct Missing: Error, CustomStringConvertible {
        public let needs: String
        public let reasons: [String]

        public var description: String {
            "\(needs), but here: \(reasons.joined(separator: "; ")). BATON_TEST_REQUIRE_ALL=1 makes this a failure, "
                + "not a skip (scripts/test-deps.sh installs everything the tests need)"
        }
    }

    /// Whether a missing requirement fails the test rather than skipping it: `BATON_TEST_REQUIRE_ALL` set to anything
    /// but empty or 0.
    public static let requireAll: Bool = {
        let value = ProcessInfo.processInfo.environment["BATON_TEST_REQUIRE_ALL"] ?? ""
        return !value.isEmpty && value != "0"
    }()

    /// The requirement and program names `BATON_TEST_HIDE` lists (comma or space separated), lowercased.
    static let hidden: Set<String> = {
        let value = ProcessInfo.processInfo.environment["BATON_TEST_HIDE"] ?? ""
        return Set(value.lowercased().split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init))
    }()

    /// PATH's folders (the usual ones where PATH is unset).
    static var searchPath: [String] {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
    }

    /// The full path of `program` (a name, or an absolute path), or nil where it is not installed or hidden. A name is
    /// looked for on PATH, then in the sbin folders, where Debian puts nginx and ip but a person's PATH may not reach.
    static func find(_ program: String, hidden: Set<String>) -> String? {
        let name = program.split(separator: "/").last.map(String.init) ?? program
        guard !hidden.contains(name.lowercased()) else { return nil }
        if program.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        let folders = searchPath + ["/usr/local/sbin", "/usr/sbin", "/sbin"]
        return folders.lazy.map { $0 + "/" + program }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
