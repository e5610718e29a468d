// libFuzzer entry point for the search index read from a file someone else wrote (issue 15; G1): the bytes are the
// whole `search.sqlite`, mutated from real small indexes (Fuzz/corpus-search-index). Opening it, searching it, looking
// an entry up, saving into it and purging it must each end in a result or a SearchError, never a trap.
//
// Built by scripts/fuzz.sh search-index with SwiftPM (the index needs GRDB), as the package's `search-index-fuzzer`
// target, which exists only while BATON_FUZZ_SEARCH_INDEX is set (Package.swift). SQLite itself (the system's
// libsqlite3) is not instrumented: coverage guides the fuzzer through Baton's and GRDB's Swift code.
import BatonSearch
import Dispatch
import Foundation

let fuzzFolder: String = {
    let folder = NSTemporaryDirectory() + "baton-search-fuzz-\(getpid())"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return folder
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func searchIndexFuzzerTestOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let path = fuzzFolder + "/search.sqlite"
    try? SearchIndex.discard(at: path)
    guard FileManager.default.createFile(atPath: path, contents: Data(UnsafeBufferPointer(start: start, count: count))) else { return 0 }
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        defer { done.signal() }
        let index: SearchIndex
        do {
            index = try SearchIndex(path: path)
        } catch is SearchError {
            return
        } catch {
            preconditionFailure("opening threw something other than a SearchError: \(error)")
        }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        await expectSearchErrorOnly { _ = try await index.search("note", now: now) }
        await expectSearchErrorOnly { _ = try await index.search("gr", now: now) }
        await expectSearchErrorOnly { _ = try await index.entry(id: 1, now: now) }
        await expectSearchErrorOnly { _ = try await index.statistics() }
        let entry = SearchEntry(persistentIdentifier: "fuzz", bundleIdentifier: "org.baton.fuzz", activityType: "org.baton.fuzz.view", title: "Fuzzed note")
        await expectSearchErrorOnly { _ = try await index.save(entry, now: now) }
        await expectSearchErrorOnly { _ = try await index.purgeExpired(now: now) }
        await expectSearchErrorOnly { _ = try await index.delete(persistentIdentifiers: ["fuzz"], of: "org.baton.fuzz") }
    }
    done.wait()
    return 0
}

func expectSearchErrorOnly(_ body: () async throws -> Void) async {
    do {
        try await body()
    } catch is SearchError {
    } catch {
        preconditionFailure("threw something other than a SearchError: \(error)")
    }
}
