// libFuzzer entry point for the direct stream preamble (issue 30; docs/PROTOCOL.md §8 "Direct streams"): the first
// bytes anyone who can reach an agent's session port may send instead of a TLS ClientHello.
//
// Compiled together with StreamPreamble.swift into one module by scripts/fuzz.sh stream-preamble (not part of the
// package build: a fuzzer has no `main`; the preamble needs nothing else). Each input is parsed whole and then fed as
// a connection would deliver it, growing in pieces whose sizes come from the input itself. A trap, a sanitizer
// report, a preamble from anything but exactly its own 21 bytes, a refusal of a preamble's prefix, a parse whose
// answer differs between whole and incremental reading, or an error at another byte than the first bad one stops the
// fuzzer with the input saved.

/// Whether `bytes` could still become a preamble: a prefix of magic, version and any token, at most `length` long.
func fuzzIsPreamblePrefix(_ bytes: ArraySlice<UInt8>) -> Bool {
    guard bytes.count <= StreamPreamble.length else { return false }
    for (offset, byte) in bytes.enumerated() {
        if offset < StreamPreamble.magic.count, byte != StreamPreamble.magic[offset] { return false }
        if offset == StreamPreamble.magic.count, byte != StreamPreamble.version { return false }
    }
    return true
}

@_cdecl("LLVMFuzzerTestOneInput")
public func streamPreambleFuzzerTestOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: start, count: count))
    // The input as the start of a connection: whole, and as a reader sees it grow, a piece at a time. The pieces'
    // sizes are the input's own bytes (1 to 8), so the fuzzer steers where they split.
    var seen = 0
    var step = 0
    var last: Result<StreamPreamble?, StreamPreambleError>
    while true {
        let prefix = input[..<seen]
        last = Result { () throws(StreamPreambleError) in try StreamPreamble.parse(prefix) }
        fuzzCheck(prefix, last)
        if case .failure = last { break }
        if seen == input.count { break }
        let piece = Int(input[step % input.count] % 8) + 1
        step += 1
        seen = min(input.count, seen + piece)
    }
    // Read whole, the same answer: a refusal is final (more bytes never make refused ones a preamble, nor change why).
    let whole = Result { () throws(StreamPreambleError) in try StreamPreamble.parse(input) }
    switch (last, whole) {
    case (.success(let piecewise), .success(let atOnce)):
        precondition(piecewise == atOnce, "read whole and in pieces, two different answers")
    case (.failure(let piecewise), .failure(let atOnce)):
        precondition(piecewise.code == atOnce.code, "refused in pieces as \(piecewise.code), whole as \(atOnce.code)")
    default:
        preconditionFailure("read whole and in pieces, one accepted and one refused")
    }
    // The input as a token: only 16 bytes make a preamble, and it writes back as magic, version and the token.
    do {
        let preamble = try StreamPreamble(token: Array(input.prefix(64)))
        precondition(input.count == StreamPreamble.tokenLength, "a token of \(input.count) bytes was taken")
        precondition(preamble.bytes == StreamPreamble.magic + [StreamPreamble.version] + input, "a preamble wrote other bytes")
        let again = try StreamPreamble.parse(preamble.bytes)
        precondition(again == preamble, "a preamble did not read back as itself")
    } catch {
        precondition(error.code == .badToken && min(input.count, 64) != StreamPreamble.tokenLength, "a good token refused: \(error)")
    }
    return 0
}

/// What parsing `bytes` may give: a preamble for exactly its own 21 bytes, nil for a shorter prefix of one, else the
/// code of the first byte that cannot be a preamble.
func fuzzCheck(_ bytes: ArraySlice<UInt8>, _ outcome: Result<StreamPreamble?, StreamPreambleError>) {
    switch outcome {
    case .success(let preamble?):
        precondition(bytes.count == StreamPreamble.length, "a preamble from \(bytes.count) bytes")
        precondition(preamble.bytes.elementsEqual(bytes), "a preamble that is not its bytes")
        precondition(preamble.token.count == StreamPreamble.tokenLength, "a token of \(preamble.token.count) bytes")
    case .success(nil):
        precondition(bytes.count < StreamPreamble.length, "nil for \(bytes.count) bytes")
        precondition(fuzzIsPreamblePrefix(bytes), "nil for bytes that cannot start a preamble")
    case .failure(let error):
        precondition(!fuzzIsPreamblePrefix(bytes), "a preamble's prefix refused as \(error.code)")
        // The first byte that cannot be a preamble decides the code.
        let bad = (1...bytes.count).first { !fuzzIsPreamblePrefix(bytes.prefix($0)) } ?? 0
        let expected: StreamPreambleError.Code =
            bad <= StreamPreamble.magic.count ? .notAPreamble : bad == StreamPreamble.magic.count + 1 ? .unsupportedVersion : .tooLong
        precondition(error.code == expected, "\(error.code) where the first bad byte (\(bad)) says \(expected)")
        precondition(!error.message.isEmpty, "an error without a message")
    }
}
