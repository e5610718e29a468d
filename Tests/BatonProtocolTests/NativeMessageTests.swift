import BatonProtocol
import Foundation
import Testing

@Suite("The browser's native messages: framing, limits, garbage (issue 14)")
struct NativeMessageTests {
    static func framed(_ json: String) throws -> Data {
        try NativeMessageReader.frame(Data(json.utf8))
    }

    static func code(_ body: () throws -> Void) -> BatonProtocolError.Code? {
        do {
            try body()
            return nil
        } catch let error as BatonProtocolError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test("a tab and a none message read back as themselves, split anywhere across reads")
    func roundTrip() throws {
        let messages: [BrowserMessage] = [
            .tab(url: "https://example.com/a?b=c", title: "Ünïcode \"quoted\" / slashed", incognito: false),
            .none,
            .tab(url: "http://127.0.0.1:8080/", title: "", incognito: true),
        ]
        var stream = Data()
        for message in messages { stream += try NativeMessageReader.frame(message.json) }
        for split in [1, 3, 4, 5, 17, stream.count] {
            var reader = NativeMessageReader()
            var read: [BrowserMessage] = []
            var offset = 0
            while offset < stream.count {
                let end = min(offset + split, stream.count)
                reader.append(stream[offset..<end])
                offset = end
                while let body = try reader.next() { read.append(try BrowserMessage(json: body)) }
            }
            try reader.finish()
            #expect(read == messages, "split every \(split) bytes")
        }
        let open = HostMessage.open(url: "https://example.com/continued")
        #expect(try HostMessage(json: open.json) == open)
        #expect(String(decoding: open.json, as: UTF8.self) == #"{"type":"open","url":"https://example.com/continued"}"#)
    }

    @Test("docs/PROTOCOL.md §9's test vectors, byte for byte, and back")
    func vectors() throws {
        let tab = BrowserMessage.tab(url: "https://example.com/", title: "Milk", incognito: false)
        let framed = try NativeMessageReader.frame(tab.json)
        #expect(framed.count == 80 && Array(framed.prefix(4)) == [0x4c, 0, 0, 0])
        #expect(String(decoding: framed.dropFirst(4), as: UTF8.self) == #"{"incognito":false,"title":"Milk","type":"tab","url":"https://example.com/"}"#)
        let none = try NativeMessageReader.frame(BrowserMessage.none.json)
        #expect(none == Data([0x0f, 0, 0, 0]) + Data(#"{"type":"none"}"#.utf8))
        let open = try NativeMessageReader.frame(HostMessage.open(url: "https://example.com/").json)
        #expect(open == Data([0x2c, 0, 0, 0]) + Data(#"{"type":"open","url":"https://example.com/"}"#.utf8))
        var reader = NativeMessageReader()
        reader.append(framed + none)
        #expect(try reader.next().map(BrowserMessage.init(json:)) == tab)
        #expect(try reader.next().map(BrowserMessage.init(json:)) == BrowserMessage.none)
    }

    @Test("the length is 4 bytes little-endian, as Chromium and Firefox write it on Linux")
    func lengthIsLittleEndian() throws {
        let framed = try Self.framed(#"{"type":"none"}"#)
        #expect(Array(framed.prefix(4)) == [15, 0, 0, 0])
    }

    @Test("limits: a length of 0 or over 64 KiB is refused before its body arrives; a cut message is truncated")
    func limits() throws {
        var reader = NativeMessageReader()
        reader.append([0x01, 0x00, 0x01, 0x00])  // 65537
        #expect(Self.code { _ = try reader.next() } == .nativeMessageSize)
        var empty = NativeMessageReader()
        empty.append([0, 0, 0, 0])
        #expect(Self.code { _ = try empty.next() } == .nativeMessageSize)
        var huge = NativeMessageReader()
        huge.append([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(Self.code { _ = try huge.next() } == .nativeMessageSize)
        var exact = NativeMessageReader()
        let padding = String(repeating: " ", count: NativeMessageReader.maximumIncomingBytes - 15)
        exact.append(try Self.framed(#"{"type":"none"}"# + padding))
        #expect(try exact.next().map { try BrowserMessage(json: $0) } == BrowserMessage.none, "exactly 64 KiB is accepted")

        var cut = NativeMessageReader()
        cut.append(try Self.framed(#"{"type":"none"}"#).prefix(10))
        #expect(try cut.next() == nil)
        #expect(Self.code { try cut.finish() } == .nativeMessageTruncated)
        var cutLength = NativeMessageReader()
        cutLength.append([5, 0])
        #expect(Self.code { try cutLength.finish() } == .nativeMessageTruncated)
        #expect(Self.code { _ = try NativeMessageReader.frame(Data(count: NativeMessageReader.maximumOutgoingBytes + 1)) } == .nativeMessageSize)
    }

    @Test("fields: a URL over 8 KiB is refused, a title over 1 KiB is cut at a character, a tab must say whether it is private")
    func fields() throws {
        let long = "https://example.com/" + String(repeating: "a", count: BrowserMessage.maximumURLBytes)
        #expect(Self.code { _ = try BrowserMessage(json: BrowserMessage.tab(url: long, title: "", incognito: false).json) } == .nativeMessageField)
        let title = String(repeating: "é", count: 600)  // 1200 bytes
        guard case .tab(_, let kept, _) = try BrowserMessage(json: BrowserMessage.tab(url: "https://a.example/", title: title, incognito: false).json) else {
            Issue.record("not a tab")
            return
        }
        #expect(kept.utf8.count == 1024 && kept.allSatisfy { $0 == "é" })
        #expect(Self.code { _ = try BrowserMessage(json: Data(#"{"type":"tab","url":"https://a.example/","title":"t"}"#.utf8)) } == .nativeMessageField)
        #expect(Self.code { _ = try BrowserMessage(json: Data(#"{"type":"tab","title":"t","incognito":false}"#.utf8)) } == .nativeMessageField)
        #expect(Self.code { _ = try BrowserMessage(json: Data(#"{"type":"tab","url":5,"incognito":false}"#.utf8)) } == .nativeMessageField)
        #expect(Self.code { _ = try BrowserMessage(json: Data(#"{"url":"https://a.example/"}"#.utf8)) } == .nativeMessageField)
        #expect(Self.code { _ = try BrowserMessage(json: Data(#"{"type":"focus"}"#.utf8)) } == .nativeMessageUnknownType)
        #expect(Self.code { _ = try HostMessage(json: Data(#"{"type":"tab"}"#.utf8)) } == .nativeMessageUnknownType)
    }

    @Test("garbage: every decoder error is typed, never a trap, for random bytes, cut JSON and deep nesting")
    func garbage() throws {
        let bodies: [Data] = [
            Data(), Data([0xFF, 0xFE]), Data("null".utf8), Data("[1,2]".utf8), Data("\"tab\"".utf8), Data("{".utf8),
            Data(#"{"type":"tab","url":"https://a.example/","incognito":false"#.utf8),
            Data((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8),
            Data((#"{"type":"none","x":"# + String(repeating: "{\"a\":", count: 5_000) + "1" + String(repeating: "}", count: 5_001)).utf8),
        ]
        for body in bodies {
            #expect(Self.code { _ = try BrowserMessage(json: body) } != nil, "\(body.prefix(40))")
        }
        #expect(Self.code { _ = try BrowserMessage(json: Data("[1,2]".utf8)) } == .nativeMessageNotJSON)
        #expect(Self.code { _ = try BrowserMessage(json: Data([0xFF, 0xFE])) } == .nativeMessageNotJSON)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let bytes = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var reader = NativeMessageReader()
            reader.append(bytes)
            do {
                while let body = try reader.next() { _ = try? BrowserMessage(json: body) }
            } catch let error as BatonProtocolError {
                #expect(error.code == .nativeMessageSize)
            }
        }
    }
}

@Suite("BrowserFocus: what the host offers of the browser's focus (issue 14, A5, A9)")
struct BrowserFocusTests {
    @Test("a web tab is shown, the same page again changes nothing, a new title or URL updates it")
    func followsTheFocusedTab() {
        var focus = BrowserFocus()
        let url = URL(string: "https://example.com/a")!
        #expect(focus.received(.tab(url: url.absoluteString, title: "A", incognito: false)) == .show(url: url, title: "A"))
        #expect(focus.received(.tab(url: url.absoluteString, title: "A", incognito: false)) == .keep(reason: nil))
        #expect(focus.received(.tab(url: url.absoluteString, title: "A2", incognito: false)) == .show(url: url, title: "A2"))
        #expect(focus.isShowing)
    }

    @Test("A5: private windows and pages that are not http(s) are never offered, and hide what was shown")
    func neverPrivateOrLocal() {
        var focus = BrowserFocus()
        for text in ["file:///etc/passwd", "chrome://settings", "about:blank", "javascript:alert(1)", "https://", "not a url"] {
            guard case .keep = focus.received(.tab(url: text, title: "x", incognito: false)) else {
                Issue.record("\(text) was offered")
                continue
            }
        }
        guard case .keep = focus.received(.tab(url: "https://example.com/", title: "secret", incognito: true)) else {
            Issue.record("a private window's tab was offered")
            return
        }
        _ = focus.received(.tab(url: "https://example.com/", title: "shown", incognito: false))
        guard case .resign = focus.received(.tab(url: "https://example.com/", title: "secret", incognito: true)) else {
            Issue.record("switching to a private window left the page offered")
            return
        }
        _ = focus.received(.tab(url: "https://example.com/", title: "shown", incognito: false))
        guard case .resign = focus.received(.tab(url: "chrome://newtab/", title: "New Tab", incognito: false)) else {
            Issue.record("switching to chrome:// left the page offered")
            return
        }
    }

    @Test("A9: none resigns and a later tab shows again; the end of input resigns for good")
    func noneAndEnd() {
        var focus = BrowserFocus()
        _ = focus.received(.tab(url: "https://example.com/", title: "t", incognito: false))
        guard case .resign = focus.received(.none) else {
            Issue.record("none did not resign")
            return
        }
        guard case .show = focus.received(.tab(url: "https://example.com/", title: "t", incognito: false)) else {
            Issue.record("the page did not come back")
            return
        }
        guard case .resign = focus.ended() else {
            Issue.record("the end of input did not resign")
            return
        }
        guard case .keep = focus.received(.tab(url: "https://example.com/", title: "t", incognito: false)) else {
            Issue.record("a message after the end was acted on")
            return
        }
    }
}
