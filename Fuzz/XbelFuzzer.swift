// libFuzzer entry point for the readers of what desktop applications record about the documents they open (issue 27
// items 2, 4): GTK's recently-used.xbel (RecentlyUsedReader), the same bytes as a desktop file (DesktopEntry, its
// Exec line expanded) and as one of KDE's RecentDocuments (KDERecentDocument).
//
// Compiled together with BatonCore's sources and BatonActivitySources' into one module by scripts/fuzz.sh xbel (not
// part of the package build: a fuzzer has no `main`). A trap, a sanitizer report, an untyped error, an entry over the
// limits, a refused URL that is offered, or an argument vector that is not the Exec line's stops the fuzzer with the
// input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func xbelFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = UnsafeBufferPointer(start: bytes, count: count)
    let limits = RecentlyUsedReader.Limits.default
    do {
        let entries = try RecentlyUsedReader.read(input)
        precondition(entries.count <= limits.maximumEntries, "more entries than the limit")
        for entry in entries {
            precondition(entry.applications.count <= limits.maximumApplicationsPerEntry, "more applications than the limit")
            precondition(entry.url.utf8.count <= limits.maximumAttributeLength, "a URL over the limit")
            if let url = try? entry.activityURL(), let path = url.filePath {
                precondition(path.hasPrefix("/") && !path.split(separator: "/").contains(".."), "\(url) offered with a '..'")
            }
        }
    } catch let error as ActivitySourceError {
        precondition([.tooLarge, .malformedXML, .entityRefused, .invalidBookmark].contains(error.code), "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    // The same bytes as a desktop file: its Exec line, if it parses, expands to argument vectors with the program first.
    do {
        let entry = try DesktopEntry(input)
        if let exec = try entry.execLine() {
            let documents = [try ActivityURL("file:///tmp/a%3B%20b"), try ActivityURL("https://x.example/$(id)")]
            if let commands = try? exec.commands(opening: documents, context: .init(icon: "i", name: "n", location: "/l")) {
                precondition(!commands.isEmpty && commands.allSatisfy { $0.first == exec.program }, "a launch that does not run the program")
            }
        }
    } catch let error as ActivitySourceError {
        precondition([.tooLarge, .malformedDesktopEntry, .invalidExec].contains(error.code), "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    do {
        let document = try KDERecentDocument(input, home: "/home/fuzz")
        if let path = document.url.filePath { precondition(!path.split(separator: "/").contains(".."), "a '..' offered") }
    } catch let error as ActivitySourceError {
        precondition([.tooLarge, .malformedDesktopEntry, .urlRefused].contains(error.code), "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    return 0
}
