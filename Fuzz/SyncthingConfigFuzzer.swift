// libFuzzer entry point for the synced folders' two readers of outside input (issue 16 part 3, C9): Syncthing's
// config.xml (SyncthingConfig, behind `baton folders syncthing`), and a URL in travel form as another device sends
// it (SyncedFolders.arriving, in the continuing agent).
//
// Compiled together with BatonCore's sources, BatonFolders' config reader and the Folders files of BatonProtocol
// into one module by scripts/fuzz.sh syncthing (not part of the package build: a fuzzer has no `main`). A trap, a sanitizer report, an
// untyped error or one with a code of another decoder, a folder over the limits, or a URL that arrives outside its
// folder stops the fuzzer with the input saved.
import Foundation

let fuzzFolders = SyncedFolders([
    (try? SyncedFolder(id: "docs", path: "/data/shared")).map { [$0] } ?? [],
    (try? SyncedFolder(id: "abcd1-xyz23", path: "/home/me/Sync/inner")).map { [$0] } ?? [],
].flatMap { $0 })

@_cdecl("LLVMFuzzerTestOneInput")
public func syncthingConfigFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(UnsafeBufferPointer(start: bytes, count: count))
    let limits = SyncthingConfigLimits.default
    do {
        let config = try SyncthingConfig.decode(data)
        precondition(config.folders.count <= limits.maximumFolders, "more folders than the limit")
        for folder in config.folders {
            precondition(folder.path.count <= limits.maximumAttributeLength && folder.id.count <= limits.maximumAttributeLength, "an attribute over the limit")
        }
    } catch let error as SyncthingConfigError {
        precondition(error.code == .malformed || error.code == .tooLarge, "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    // The same bytes as a URL arriving from another device: in a folder means inside it, whatever the path says.
    let text = String(decoding: data.prefix(4096), as: UTF8.self)
    for candidate in [text, "baton-folder://docs/" + text, "baton-folder://" + text] {
        guard let url = URL(string: candidate) else { continue }
        switch fuzzFolders.arriving(url) {
        case .inFolder(let here, let folder, let relative):
            let path = here.path(percentEncoded: false)
            precondition(SyncedFolders.relativePath(of: SyncedFolders.lexicallyStandardized(path), inside: folder.path) != nil, "\(candidate) left its folder: \(path)")
            precondition(!relative.split(separator: "/").contains(".."), "\(candidate) kept a '..'")
            // And it travels back to the same form.
            let again = fuzzFolders.travelling(here)
            precondition(fuzzFolders.arriving(again) == .inFolder(url: here, folder: folder, relativePath: relative), "\(candidate) does not travel back as itself")
        case .unchanged, .unknownFolder, .invalid:
            break
        }
    }
    return 0
}
