// libFuzzer entry point for apps registered by desktop file (issue 28 item 2; SEMANTICS D1, D3, B5, E3): a `.desktop`
// file as DesktopAppLoader reads it from an applications folder: the X-Baton- lines found, the [Desktop Entry] parsed
// within the key-file bounds, the team, activity types and associated domains checked, the program looked up.
//
// Each input is the desktop file, written as `org.example.Fuzz.desktop` into a folder of the fuzzer's own under the
// temporary folder, beside `bin/` holding one executable, `prog` (so `Exec=prog` and `TryExec=prog` resolve), and a
// plain file `data` (so `Exec=data` does not).
//
// Compiled together with BatonCore's and BatonActivitySources' sources, the Bundles files of BatonRegistry, its Desktop
// loader and AppRecordChecks.swift into one module by scripts/fuzz.sh desktop-apps (not part of the package build: a
// fuzzer has no `main`; the rest of BatonRegistry needs swift-crypto). A trap, a sanitizer report, an untyped error or
// one of another code, an app from a file without an X-Baton- line, an activity type no activity can have, a duplicate,
// a team outside its form, an identity resolved without a team, an executable that is not an executable file, or a
// second load that differs stops the fuzzer with the input saved.
import Foundation

let fuzzFolder: URL = {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("baton-desktop-fuzz-\(getpid())")
    let manager = FileManager.default
    try? manager.removeItem(at: folder)
    do {
        try manager.createDirectory(at: folder.appendingPathComponent("bin"), withIntermediateDirectories: true)
        for (name, mode) in [("bin/prog", 0o755), ("bin/data", 0o644)] {
            let path = folder.appendingPathComponent(name).path
            guard manager.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: mode])
            else { preconditionFailure("cannot write \(path)") }
        }
    } catch {
        preconditionFailure("cannot make the fuzzer's folder: \(error)")
    }
    return folder
}()
let fuzzFile = fuzzFolder.appendingPathComponent("org.example.Fuzz.desktop")
let fuzzPath = [fuzzFolder.appendingPathComponent("bin").path]

@_cdecl("LLVMFuzzerTestOneInput")
public func desktopAppFuzzerTestOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(UnsafeBufferPointer(start: start, count: count))
    do {
        try data.write(to: fuzzFile)
    } catch {
        preconditionFailure("cannot write the fuzzer's desktop file: \(error)")
    }
    let loaded: AppRecord?
    do {
        loaded = try DesktopAppLoader.load(fuzzFile, id: fuzzFile.lastPathComponent, programSearchPath: fuzzPath)
    } catch let error as BatonRegistryError {
        precondition(error.code == .invalidDesktopFile, "unexpected error: \(error)")
        return 0
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    guard let record = loaded else { return 0 }
    precondition(data.range(of: Data("X-Baton-".utf8)) != nil, "an app from a file without an X-Baton- key")
    precondition(record.kind == .desktopFile && record.bundleIdentifier == "org.example.Fuzz", "the wrong identity: \(record.bundleIdentifier)")
    checkClaims(of: record)
    if let team = record.teamIdentifier {
        precondition(
            (1...64).contains(team.utf8.count) && team.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) },
            "a team outside its form: \(team.debugDescription)"
        )
        precondition(record.isIdentityResolved, "a team without a resolved identity")
    } else {
        precondition(!record.isIdentityResolved, "an identity resolved without a team")
    }
    if let executable = record.executableURL {
        precondition(FileManager.default.isExecutableFile(atPath: executable.path), "an executable that is not one: \(executable.path)")
        precondition(executable.path.hasPrefix("/"), "an executable that is not an absolute path: \(executable.path)")
    }
    // The same file loads the same way.
    let again = try? DesktopAppLoader.load(fuzzFile, id: fuzzFile.lastPathComponent, programSearchPath: fuzzPath)
    precondition(again == record, "the same desktop file loaded twice differs")
    return 0
}
