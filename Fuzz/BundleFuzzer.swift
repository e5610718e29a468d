// libFuzzer entry point for app bundle loading (SEMANTICS D1, D3, B5, E3): an Info.plist and an entitlements file as
// AppBundleLoader reads them from `Name.app/`: build variables expanded, activity types checked, the team taken from
// Info.plist or the entitlements, the associated domains parsed, and the executable looked up inside the bundle.
//
// Each input is the Info.plist, then (after the marker "\0ENTITLEMENTS\0", when there is one) the entitlements file;
// both are written into a bundle of the fuzzer's own under the temporary folder, which also holds an executable, one
// under Contents/MacOS, and a symbolic link `outside -> /bin` (a `CFBundleExecutable` of `outside/sh` must be refused).
//
// Compiled together with BatonCore's sources, the Bundles files of BatonRegistry and AppRecordChecks.swift into one
// module by scripts/fuzz.sh bundles (not part of the package build: a fuzzer has no `main`; the rest of BatonRegistry
// needs swift-crypto). A trap, a sanitizer report, an untyped error or one of another code, an activity type no
// activity can have, a duplicate, an executable outside the bundle, or a second load that differs stops the fuzzer with
// the input saved.
import Foundation

let fuzzBundle: URL = {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("baton-bundle-fuzz-\(getpid())")
    let bundle = folder.appendingPathComponent("Fuzz.app")
    let manager = FileManager.default
    try? manager.removeItem(at: folder)
    do {
        try manager.createDirectory(at: bundle.appendingPathComponent("Contents/MacOS"), withIntermediateDirectories: true)
        for name in ["fuzz", "Contents/MacOS/mac"] {
            let path = bundle.appendingPathComponent(name).path
            guard manager.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
            else { preconditionFailure("cannot write \(path)") }
        }
        try manager.createSymbolicLink(atPath: bundle.appendingPathComponent("outside").path, withDestinationPath: "/bin")
    } catch {
        preconditionFailure("cannot make the fuzzer's bundle: \(error)")
    }
    return bundle
}()
let fuzzBundleReal = AppBundleLoader.realPath(fuzzBundle) ?? fuzzBundle.path
let fuzzMarker = Data("\u{0}ENTITLEMENTS\u{0}".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func bundleFuzzerTestOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(UnsafeBufferPointer(start: start, count: count))
    let info: Data
    let entitlements: Data?
    if let marker = data.range(of: fuzzMarker) {
        info = data[..<marker.lowerBound]
        entitlements = data[marker.upperBound...]
    } else {
        info = data
        entitlements = nil
    }
    let entitlementsURL = fuzzBundle.appendingPathComponent("Fuzz.entitlements")
    do {
        try info.write(to: fuzzBundle.appendingPathComponent("Info.plist"))
        if let entitlements {
            try entitlements.write(to: entitlementsURL)
        } else {
            try? FileManager.default.removeItem(at: entitlementsURL)
        }
    } catch {
        preconditionFailure("cannot write the fuzzer's bundle: \(error)")
    }
    let record: AppRecord
    do {
        record = try AppBundleLoader.load(fuzzBundle)
    } catch let error as BatonRegistryError {
        precondition(error.code == .invalidInfoPlist, "unexpected error: \(error)")
        return 0
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    checkClaims(of: record)
    if let team = record.teamIdentifier {
        precondition(!team.isEmpty && !team.contains("$("), "a team that is empty or unresolved: \(team.debugDescription)")
    } else {
        precondition(!record.isIdentityResolved, "an identity resolved without a team")
    }
    if let executable = record.executableURL {
        // Where it really is: inside the bundle, a regular executable file (issue 10 item 9).
        guard let real = AppBundleLoader.realPath(executable.deletingLastPathComponent()) else {
            preconditionFailure("an executable in a folder that is not there: \(executable.path)")
        }
        precondition(real == fuzzBundleReal || real.hasPrefix(fuzzBundleReal + "/"), "an executable outside the bundle: \(executable.path) in \(real)")
        precondition(FileManager.default.isExecutableFile(atPath: executable.path), "an executable that is not one: \(executable.path)")
    }
    // The same files load the same way.
    let again = try? AppBundleLoader.load(fuzzBundle)
    precondition(again == record, "the same bundle loaded twice differs")
    return 0
}
