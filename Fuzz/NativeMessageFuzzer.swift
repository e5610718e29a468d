// libFuzzer entry point for the browser's native messaging input (issue 14): what Chromium or Firefox, or anything
// that starts `baton browser-host`, writes to its standard input: 4-byte lengths and JSON bodies, read by
// NativeMessageReader and BrowserMessage, acted on by BrowserFocus.
//
// Compiled together with BatonCore's sources and the Browser files of BatonProtocol into one module by
// scripts/fuzz.sh browser (not part of the package build: a fuzzer has no `main`). A trap, a sanitizer report, an
// untyped error, an error with another module's code, or a message that does not read back as itself stops the
// fuzzer with the input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func nativeMessageFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = UnsafeBufferPointer(start: bytes, count: count)
    // The input split at its first byte's worth, as reads from a pipe split a stream.
    let split = count > 0 ? Int(input[0]) % (count + 1) : 0
    var reader = NativeMessageReader()
    var focus = BrowserFocus()
    let expected: Set<BatonProtocolError.Code> = [.nativeMessageNotJSON, .nativeMessageUnknownType, .nativeMessageField]
    do {
        for part in [input[..<split], input[split...]] {
            reader.append(part)
            while let body = try reader.next() {
                do {
                    let message = try BrowserMessage(json: body)
                    let again = try BrowserMessage(json: message.json)
                    precondition(again == message, "a message does not survive a round trip")
                    _ = focus.received(message)
                } catch let error as BatonProtocolError {
                    precondition(expected.contains(error.code), "unexpected error code: \(error)")
                    _ = focus.unreadable(error)
                }
            }
        }
        try? reader.finish()
        _ = focus.ended()
    } catch let error as BatonProtocolError {
        precondition(error.code == .nativeMessageSize, "unexpected framing error: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    // Every body as one message by itself, too.
    if let message = try? BrowserMessage(json: Data(input)) {
        let again = try? BrowserMessage(json: message.json)
        precondition(again == message, "a message does not survive a round trip")
    }
    return 0
}
