// libFuzzer entry point for a media player's metadata and position as they come off the session bus (issue 27 items
// 1, 4): the bytes are read as a small program that builds the `a{sv}` dictionary (keys MPRIS names or others, each
// value of any of the types the bus carries) and the PlaybackStatus, Position and Rate beside it.
//
// Compiled together with BatonCore's sources and BatonActivitySources' into one module by scripts/fuzz.sh
// mpris-metadata. A trap, a sanitizer report, an untyped error, a title or artist over its size, a refused URL
// accepted, or a position "now" outside 0 and the maximum stops the fuzzer with the input saved.
import Foundation

/// Reads values off the fuzzer's bytes; zeros when they run out.
struct FuzzBytes {
    var bytes: UnsafeBufferPointer<UInt8>
    var offset = 0

    var atEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        defer { offset += 1 }
        return offset < bytes.count ? bytes[offset] : 0
    }

    mutating func int64() -> Int64 {
        (0..<8).reduce(Int64(0)) { value, _ in value << 8 | Int64(byte()) }
    }

    mutating func text() -> String {
        let count = Int(byte()) * (byte() & 0x80 != 0 ? 64 : 1)
        let end = min(bytes.count, offset + count)
        defer { offset = max(offset, end) }
        return offset < end ? String(decoding: UnsafeBufferPointer(rebasing: bytes[offset..<end]), as: UTF8.self) : ""
    }

    mutating func value() -> MPRISValue {
        switch byte() % 6 {
        case 0: .string(text())
        case 1: .strings((0..<Int(byte() % 32)).map { _ in text() })
        case 2: .int64(int64())
        case 3: .uint64(UInt64(bitPattern: int64()))
        case 4: .double(Double(bitPattern: UInt64(bitPattern: int64())))
        default: .bool(byte() & 1 == 1)
        }
    }
}

let fuzzKeys = ["mpris:trackid", "xesam:title", "xesam:artist", "xesam:url", "mpris:length", "xesam:album", "mpris:artUrl"]

@_cdecl("LLVMFuzzerTestOneInput")
public func mprisMetadataFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    var input = FuzzBytes(bytes: UnsafeBufferPointer(start: bytes, count: count))
    var metadata: [String: MPRISValue] = [:]
    let entries = Int(input.byte())
    for _ in 0..<entries where !input.atEnd {
        let selector = input.byte()
        let key = Int(selector) < fuzzKeys.count ? fuzzKeys[Int(selector)] : input.text()
        metadata[key] = input.value()
    }
    var length: Int64?
    do {
        let track = try MPRISMetadata(metadata)
        precondition((track.title?.utf8.count ?? 0) <= MPRISMetadata.maximumTitleBytes, "a title over the limit")
        precondition(track.artists.count <= MPRISMetadata.maximumArtists, "more artists than the limit")
        precondition(track.artists.allSatisfy { $0.utf8.count <= MPRISMetadata.maximumArtistBytes }, "an artist over the limit")
        if let url = track.url {
            precondition([ActivityURL.Scheme.http, .https, .file].contains(url.scheme), "a scheme offered that is not allowed")
            if let path = url.filePath { precondition(!path.split(separator: "/").contains(".."), "a '..' offered") }
        }
        length = track.length
        _ = track.displayTitle
    } catch let error as ActivitySourceError {
        precondition([.tooLarge, .invalidMetadata, .urlRefused].contains(error.code), "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    let status = input.byte() & 1 == 0 ? MPRISValue.string(["Playing", "Paused", "Stopped"][Int(input.byte() % 3)]) : input.value()
    let position = input.value()
    let rate: MPRISValue? = input.byte() & 1 == 0 ? nil : input.value()
    do {
        let playback = try MPRISPlayback(status: status, position: position, rate: rate, readAt: input.int64(), length: length)
        let now = playback.position(at: input.int64(), length: length)
        precondition(now >= 0 && now <= MPRISMetadata.maximumMicroseconds, "a position now of \(now)")
        if let length { precondition(playback.position <= length && now <= max(length, playback.position), "past the end") }
    } catch let error as ActivitySourceError {
        precondition(error.code == .invalidMetadata, "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    return 0
}
