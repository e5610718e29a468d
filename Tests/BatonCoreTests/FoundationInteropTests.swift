import Baton  // userInfo values to and from property lists (NSNumber, NSData, NSNull) live in the app library
import BatonCore
import Foundation
import Testing

/// Foundation's `PropertyListSerialization` is an independent reader and writer: files must cross both ways.
@Suite("Interop with Foundation's PropertyListSerialization")
struct FoundationInteropTests {
    static let formats: [(PropertyListFormat, PropertyListSerialization.PropertyListFormat)] = [
        (.binary, .binary), (.xml, .xml),
    ]

    static let cases: [(String, PropertyList)] = [
        ("scalars at their edges", Fixtures.scalars),
        ("10,000-element array", Fixtures.bigArray),
        ("mixed userInfo", Fixtures.mixed),
        ("nesting at the depth limit", Fixtures.nested(depth: PropertyListLimits.default.maximumDepth)),
    ]

    @Test("Foundation writes, Baton reads", arguments: 0..<2, 0..<4)
    func foundationToBaton(format: Int, index: Int) throws {
        let (ours, theirs) = Self.formats[format]
        let (name, value) = Self.cases[index]
        let data = try PropertyListSerialization.data(fromPropertyList: value.anyValue, format: theirs, options: 0)
        let (decoded, detected) = try PropertyList.decode(data)
        #expect(detected == ours)
        #expect(differences(decoded, value) == [], "\(name) as \(ours)")
    }

    @Test("Baton writes, Foundation reads", arguments: 0..<2, 0..<4)
    func batonToFoundation(format: Int, index: Int) throws {
        let (ours, theirs) = Self.formats[format]
        let (name, value) = Self.cases[index]
        let data = try value.encoded(as: ours)
        var detected = PropertyListSerialization.PropertyListFormat.openStep
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: &detected)
        #expect(detected == theirs)
        #expect(differences(try PropertyList(any: object), value) == [], "\(name) as \(ours)")
    }

    @Test("one level past the depth limit, written by Foundation, is refused with tooDeep", arguments: 0..<2)
    func pastTheDepthLimit(format: Int) throws {
        let value = Fixtures.nested(depth: PropertyListLimits.default.maximumDepth + 1)
        let data = try PropertyListSerialization.data(fromPropertyList: value.anyValue, format: Self.formats[format].1, options: 0)
        let error = #expect(throws: BatonCoreError.self) { try PropertyList.decode(data) }
        #expect(error?.code == .tooDeep)
    }

    @Test("an NSKeyedArchiver file is refused with a clear error")
    func keyedArchive() throws {
        let archive = try NSKeyedArchiver.archivedData(withRootObject: ["a": 1] as NSDictionary, requiringSecureCoding: false)
        let error = #expect(throws: BatonCoreError.self) { try PropertyList.decode(archive) }
        #expect(error?.code == .keyedArchiverNotSupported)
    }

    @Test("real Info.plist and entitlements files read the same as Foundation reads them")
    func realWorldFiles() throws {
        let files = Fixtures.realWorldFiles("infoplists") + Fixtures.realWorldFiles("entitlements")
        #expect(files.count >= 15, "../shared/realworld must be beside the package")
        for file in files {
            let data = try Data(contentsOf: file)
            let (ours, _) = try PropertyList.decode(data)
            let theirs = try PropertyList(any: try PropertyListSerialization.propertyList(from: data, format: nil))
            #expect(differences(ours, theirs) == [], "\(file.lastPathComponent)")
            // And each survives conversion to binary and back, as `baton plist convert` does.
            #expect(try BinaryPropertyListDecoder.decode(try ours.encoded(as: .binary)) == ours)
        }
    }
}
