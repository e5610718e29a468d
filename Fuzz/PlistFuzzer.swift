// libFuzzer entry point for the property-list codecs and the activity payload decoder.
//
// Compiled together with BatonCore's sources into one module by scripts/fuzz-plist.sh (not part of the package
// build: a fuzzer has no `main`). Every input goes through every decoder; a trap, a sanitizer report, an untyped
// error, or a decoded value that does not survive a binary round trip stops the fuzzer with the input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func plistFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    let decoders: [(Data) throws -> PropertyList] = [
        { try PropertyList.decode($0).value },
        { try BinaryPropertyListDecoder.decode($0) },
        { try XMLPropertyListDecoder.decode($0) },
    ]
    for decode in decoders {
        do {
            let value = try decode(data)
            let again = try BinaryPropertyListDecoder.decode(try BinaryPropertyListEncoder.encode(value))
            precondition(again == value, "decoded value does not survive a binary round trip")
            if let xml = try? XMLPropertyListEncoder.encode(value) {
                let fromXML = try XMLPropertyListDecoder.decode(xml)
                precondition(fromXML == value || containsFractionalDate(value), "value does not survive an XML round trip")
            }
        } catch let error as BatonCoreError {
            if let offset = error.offset { precondition(offset >= 0 && offset <= count, "error offset outside input") }
        } catch {
            preconditionFailure("untyped error: \(error)")
        }
    }
    // Issue 26 item 5: the quick looks the agents trust to skip a decode say "no" only when the decoder agrees.
    if !BinaryPropertyList.mayHoldURLs(data), let value = try? BinaryPropertyListDecoder.decode(data) {
        precondition(!containsURL(value), "mayHoldURLs said no, but the decoder found a URL")
    }
    if !ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: data), let payload = try? ActivityPayload(decoding: data) {
        let hasAt: (URL) -> Bool = { $0.absoluteString.contains("@") }
        precondition(
            !(payload.webpageURL.map(hasAt) ?? false) && !(payload.referrerURL.map(hasAt) ?? false)
                && !containsURL(.dictionary(payload.userInfo)) && !containsURL(.dictionary(payload.contentAttributeSet ?? [:])),
            "mayHoldURL(with: @) said no, but the payload has such a URL"
        )
    }
    do {
        let payload = try ActivityPayload(decoding: data)
        let again = try ActivityPayload(decoding: try payload.encoded())
        precondition(again == payload, "payload does not round-trip")
    } catch is BatonCoreError {
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    return 0
}

/// XML dates hold whole seconds, so a binary date with a fraction legitimately changes through XML.
private func containsFractionalDate(_ value: PropertyList) -> Bool {
    switch value {
    case .date(let date): date.timeIntervalSinceReferenceDate.rounded(.down) != date.timeIntervalSinceReferenceDate
    case .array(let elements): elements.contains(where: containsFractionalDate)
    case .dictionary(let entries): entries.values.contains(where: containsFractionalDate)
    default: false
    }
}

private func containsURL(_ value: PropertyList) -> Bool {
    switch value {
    case .url: true
    case .array(let elements): elements.contains(where: containsURL)
    case .set(let elements): elements.contains(where: containsURL)
    case .dictionary(let entries): entries.values.contains(where: containsURL)
    default: false
    }
}
