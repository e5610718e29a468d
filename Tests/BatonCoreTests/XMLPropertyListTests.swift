import BatonCore
import Foundation
import Testing

@Suite("XML property lists")
struct XMLPropertyListTests {
    static func decode(_ text: String) throws -> PropertyList {
        try XMLPropertyListDecoder.decode(Data(text.utf8))
    }

    static func expectError(_ code: BatonCoreError.Code, line: Int? = nil, _ text: String) {
        let error = #expect(throws: BatonCoreError.self) { try decode(text) }
        #expect(error?.code == code, "\(String(describing: error))")
        if let line { #expect(error?.line == line, "\(String(describing: error))") }
    }

    @Test("reads what Info.plist files contain: prolog, DOCTYPE, comments, every element")
    func readsDocument() throws {
        let value = try Self.decode(
            """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <!-- a comment before the root -->
            <plist version="1.0">
            <dict>
            \t<key>CFBundleIdentifier</key>
            \t<string>com.example.ShopSnap</string>
            \t<!-- a comment between entries -->
            \t<key>NSUserActivityTypes</key>
            \t<array>
            \t\t<string>com.example.shopsnap.view</string>
            \t\t<string/>
            \t</array>
            \t<key>Count</key><integer> -42 </integer>
            \t<key>Hex</key><integer>0x1F</integer>
            \t<key>Ratio</key><real>0.25</real>
            \t<key>Yes</key><true/>
            \t<key>No</key><false></false>
            \t<key>When</key><date>1969-07-20T20:17:40Z</date>
            \t<key>Blob</key><data>
            \t\tAAEC
            \t\tAw==
            \t</data>
            \t<key>Empty</key><dict/>
            </dict>
            </plist>
            """
        )
        #expect(
            value == [
                "CFBundleIdentifier": "com.example.ShopSnap",
                "NSUserActivityTypes": ["com.example.shopsnap.view", ""],
                "Count": -42, "Hex": 31, "Ratio": 0.25, "Yes": true, "No": false,
                "When": .date(Fixtures.date(1969, 7, 20, 20, 17, 40)),
                "Blob": .data(Data([0, 1, 2, 3])), "Empty": [:],
            ]
        )
    }

    @Test("entities, character references, CDATA and line-end normalisation")
    func text() throws {
        let value = try Self.decode(
            "<plist><array><string>a &lt; b &amp;&amp; c &gt; d &quot;&apos;</string>"
                + "<string>&#x1F600;&#233;</string><string><![CDATA[<not> & markup]]></string>"
                + "<string>one\r\ntwo\rthree&#13;</string><string>x<!-- hidden -->y</string></array></plist>"
        )
        #expect(value == ["a < b && c > d \"'", "😀é", "<not> & markup", "one\ntwo\nthree\r", "xy"])
    }

    @Test("a bare value without <plist> is accepted, as Foundation does")
    func bareValue() throws {
        #expect(try Self.decode("<string>x</string>") == "x")
    }

    @Test("reals: Apple's and Python's spellings of infinity and NaN")
    func reals() throws {
        let value = try Self.decode(
            "<array><real>nan</real><real>+infinity</real><real>-infinity</real><real>inf</real><real>-inf</real>"
                + "<real>1e-05</real><real>-0.0</real><real>1</real></array>"
        )
        guard case .array(let reals) = value else { throw BatonCoreError(.invalidObject, "not an array") }
        #expect(reals[0].doubleValue?.isNaN == true)
        #expect(reals[1] == .real(.infinity) && reals[3] == .real(.infinity))
        #expect(reals[2] == .real(-.infinity) && reals[4] == .real(-.infinity))
        #expect(reals[5] == 1e-05 && reals[7] == 1.0)
        #expect(reals[6].doubleValue?.sign == .minus)
    }

    @Test("dates: every form plistlib writes and reads, leap days, years 1 to 9999")
    func dates() throws {
        #expect(try Self.decode("<date>2024-02-29T12:00:00Z</date>") == .date(Fixtures.date(2024, 2, 29, 12)))
        #expect(try Self.decode("<date>1900Z</date>") == .date(Fixtures.date(1900, 1, 1)))
        #expect(try Self.decode("<date>2001-01-01T00:00:00.5Z</date>") == .date(Date(timeIntervalSinceReferenceDate: 0.5)))
        // Proleptic Gregorian, as CF and Python count (Foundation's Calendar turns Julian before 1582):
        // Python's (datetime(2001,1,1) - datetime(1,1,1)).total_seconds() is 63113904000.
        #expect(try Self.decode("<date>0001-01-01T00:00:00Z</date>") == .date(Date(timeIntervalSinceReferenceDate: -63_113_904_000)))
        #expect(try Self.decode("<date>9999-12-31T23:59:59Z</date>") == .date(Fixtures.date(9999, 12, 31, 23, 59, 59)))
        Self.expectError(.invalidDate, "<date>2023-02-29T00:00:00Z</date>")
        Self.expectError(.invalidDate, "<date>2024-01-01T00:00:00</date>")
        Self.expectError(.invalidDate, "<date>yesterday</date>")
    }

    @Test("integers at the 64-bit edges, and one past them")
    func integers() throws {
        #expect(try Self.decode("<integer>-9223372036854775808</integer>") == .integer(Int64.min))
        #expect(try Self.decode("<integer>18446744073709551615</integer>") == .unsignedInteger(UInt64.max))
        Self.expectError(.invalidNumber, "<integer>18446744073709551616</integer>")
        Self.expectError(.invalidNumber, "<integer>-9223372036854775809</integer>")
        Self.expectError(.invalidNumber, "<integer>12abc</integer>")
        Self.expectError(.invalidNumber, "<integer></integer>")
    }

    @Test("malformed documents give typed errors with the line")
    func malformed() {
        Self.expectError(.invalidXML, line: 3, "<plist>\n<dict>\n</array>\n</plist>")
        Self.expectError(.unexpectedElement, line: 2, "<plist><dict>\n<string>no key</string></dict></plist>")
        Self.expectError(.unexpectedElement, "<plist><dict><key>k</key></dict></plist>")
        Self.expectError(.unexpectedElement, "<plist><widget/></plist>")
        Self.expectError(.unexpectedElement, "<plist><string>a<b/>c</string></plist>")
        Self.expectError(.unexpectedElement, "<plist><key>k</key></plist>")
        Self.expectError(.truncated, "<plist><array><string>open")
        Self.expectError(.truncated, "<plist><array>")
        Self.expectError(.unknownEntity, "<string>&bogus;</string>")
        Self.expectError(.unknownEntity, "<string>AT&T</string>")
        Self.expectError(.unknownEntity, "<string>&#0;</string>")
        Self.expectError(.invalidData, "<data>!!!!</data>")
        Self.expectError(.invalidXML, "<plist><string>a</string></plist><extra/>")
        Self.expectError(.unknownFormat, "")
        Self.expectError(.unknownFormat, "plain text")
    }

    @Test("invalid UTF-8 in text is an error, not a replacement character")
    func invalidUTF8() {
        let data = Data("<string>".utf8) + Data([0xC3, 0x28]) + Data("</string>".utf8)
        let error = #expect(throws: BatonCoreError.self) { try XMLPropertyListDecoder.decode(data) }
        #expect(error?.code == .invalidString)
    }

    @Test("entities declared in a DTD are never expanded (no entity-expansion attack)")
    func noEntityExpansion() {
        Self.expectError(
            .unknownEntity,
            """
            <!DOCTYPE plist [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>
            <plist><string>&lol2;</string></plist>
            """
        )
    }

    @Test("an XML keyed archive is rejected like its binary form")
    func keyedArchive() {
        Self.expectError(
            .keyedArchiverNotSupported,
            "<plist><dict><key>$archiver</key><string>NSKeyedArchiver</string><key>$objects</key><array/></dict></plist>"
        )
    }

    @Test("nesting up to the limit decodes; one past it is tooDeep")
    func depthLimit() throws {
        let limit = PropertyListLimits.default.maximumDepth
        func nested(_ depth: Int) -> String {
            String(repeating: "<array>", count: depth) + "<true/>" + String(repeating: "</array>", count: depth)
        }
        #expect(try Self.decode(nested(limit)).nestingDepth == limit)
        Self.expectError(.tooDeep, nested(limit + 1))
    }

    // MARK: Writing

    @Test("writes Apple's layout, escapes markup, and reads back what it wrote")
    func writes() throws {
        let value: PropertyList = ["name": "a < b & c", "list": [1, 2.5, true], "cr": "x\ry", "empty": []]
        let data = try XMLPropertyListEncoder.encode(value)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC"))
        #expect(text.contains("\t<key>cr</key>\n\t<string>x&#13;y</string>\n"))
        #expect(text.contains("<string>a &lt; b &amp; c</string>"))
        #expect(text.contains("<array/>"))
        #expect(try XMLPropertyListDecoder.decode(data) == value)
    }

    @Test("values XML cannot carry are refused with their key path")
    func unrepresentable() {
        for (value, path) in [
            ((["a": ["b": .null]] as PropertyList), "a.b"),
            (["u": .uuid(UUID())], "u"),
            (["list": [1, "bell\u{7}"]], "list[1]"),
            (["d": .date(Date(timeIntervalSince1970: 1e13))], "d"),
        ] as [(PropertyList, String)] {
            let error = #expect(throws: BatonCoreError.self) { try XMLPropertyListEncoder.encode(value) }
            #expect(error?.code == .unrepresentable)
            #expect(error?.message.hasPrefix(path + ":") == true, "\(String(describing: error))")
        }
    }

    @Test("XML dates hold whole seconds: fractions are dropped, rounding down")
    func datePrecision() throws {
        let data = try XMLPropertyListEncoder.encode(.date(Date(timeIntervalSinceReferenceDate: -0.25)))
        #expect(String(decoding: data, as: UTF8.self).contains("<date>2000-12-31T23:59:59Z</date>"))
    }
}
