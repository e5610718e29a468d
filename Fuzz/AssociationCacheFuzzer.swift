// libFuzzer entry point for the agent's association cache records (issue 14): `associations/DOMAIN.json` in the
// state folder, which any program of the user (or a damaged disk) could have written. Every input is read back as
// a record of wiki.example; a record that reads is asked what it approves and encoded again, and must read back
// equal. A trap, a sanitizer report, an untyped error or a code other than cacheCorrupt stops the fuzzer with the
// input saved.
//
// Compiled with BatonCore's sources, the association readers of BatonRegistry and the record and error of
// BatonAssociations into one module by scripts/fuzz.sh association-cache (not part of the package build: a fuzzer
// has no `main`; the rest of BatonAssociations needs NIO).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func associationCacheFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    do {
        let record = try AssociationRecord(decoding: data, domain: "wiki.example")
        _ = record.isValid(at: Date())
        _ = record.lastError
        if let association = try record.association() {
            _ = association.approval(of: "AKK7J2GV64.org.wikimedia.wikipedia", for: .appLinks, url: URL(string: "https://wiki.example/wiki/Main_Page"))
        }
        let again = try AssociationRecord(decoding: try record.encoded(), domain: "wiki.example")
        precondition(again == record, "a record does not read back as written")
    } catch let error as AssociationFetchError {
        precondition(error.code == .cacheCorrupt, "unexpected error: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    return 0
}
