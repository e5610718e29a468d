// libFuzzer entry point for the message decoders of BatonProtocol: account messages (pairing, invites, the one-shot
// sync), session messages and IPC messages, as a peer or an app would send them (the body of one frame).
//
// Compiled together with BatonCore's sources and the message files of BatonProtocol into one module by
// scripts/fuzz.sh messages (not part of the package build: a fuzzer has no `main`, and BatonProtocol's other files
// need swift-crypto). Every input goes through every decoder; a trap, a sanitizer report, an untyped error, an error
// other than malformedMessage, or a message that does not read back as itself stops the fuzzer with the input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func messageFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    do {
        let message = try AccountMessage(decoding: data)
        let again = try AccountMessage(decoding: try message.encoded())
        precondition(again == message, "account message does not survive a round trip")
    } catch let error as BatonProtocolError {
        precondition(error.code == .malformedMessage, "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    // The session and IPC decoders read property lists the frame handler decoded with the same limits.
    guard let plist = try? BinaryPropertyListDecoder.decode(data, limits: AccountMessage.limits) else { return 0 }
    let decoders: [(PropertyList) throws -> PropertyList] = [
        { try SessionMessage($0).propertyList },
        { try IPCMessage($0).propertyList },
    ]
    for decode in decoders {
        do {
            let once = try decode(plist)
            let twice = try decode(once)
            precondition(twice == once, "message does not read back as itself")
        } catch let error as BatonProtocolError {
            precondition(error.code == .malformedMessage, "unexpected error code: \(error)")
        } catch {
            preconditionFailure("untyped error: \(error)")
        }
    }
    return 0
}
