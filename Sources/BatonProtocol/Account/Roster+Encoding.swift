import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Roster {
    /// The roster format this build writes and reads.
    public static let formatVersion: Int64 = 1

    /// The roster as a binary property list (docs/PROTOCOL.md, "Roster"): what is stored on disk and sent to members.
    public func encoded() throws -> Data {
        let memberList: [PropertyList] = members.values.sorted { $0.id < $1.id }.map { member in
            [
                "cert": .data(member.certificate), "name": .string(member.name),
                "addedBy": .data(Data(member.addedBy.bytes)), "addedAt": .date(member.addedAt),
            ]
        }
        let revocationList: [PropertyList] = revocations.values.sorted { $0.id < $1.id }.map { revocation in
            [
                "id": .data(Data(revocation.id.bytes)), "by": .data(Data(revocation.revokedBy.bytes)),
                "at": .date(revocation.revokedAt),
            ]
        }
        let key: PropertyList = [
            "epoch": .integer(Int64(clamping: accountKey.epoch)), "key": .data(Data(accountKey.key)),
            "excludes": .array(accountKey.excludes.sorted().map { .data(Data($0.bytes)) }),
        ]
        let document: PropertyList = [
            "v": .integer(Self.formatVersion), "members": .array(memberList), "revocations": .array(revocationList), "key": key,
        ]
        return try BinaryPropertyListEncoder.encode(document)
    }

    /// Reads a roster. Every member's id is recomputed from its certificate, so a roster cannot name a device with
    /// someone else's certificate.
    /// - Throws: ``BatonProtocolError`` `invalidRoster` or `unsupportedVersion`.
    public init(decoding data: Data) throws {
        let document: PropertyList
        do {
            document = try BinaryPropertyListDecoder.decode(data, limits: PropertyListLimits(maximumInputBytes: 16 << 20, maximumDepth: 8))
        } catch {
            throw BatonProtocolError(.invalidRoster, "the roster is not a valid property list: \(error)")
        }
        func invalid(_ message: String) -> BatonProtocolError { BatonProtocolError(.invalidRoster, message) }
        guard let version = document["v"]?.integerValue else { throw invalid("no version") }
        guard version <= Self.formatVersion else {
            throw BatonProtocolError(.unsupportedVersion, "roster format \(version) is newer than this Baton's \(Self.formatVersion)")
        }
        func id(_ value: PropertyList?, _ what: String) throws -> DeviceID {
            guard let bytes = value?.dataValue, let id = DeviceID(bytes: Array(bytes)) else { throw invalid("\(what) is not a device id") }
            return id
        }
        var members: [DeviceID: Member] = [:]
        for entry in document["members"]?.arrayValue ?? [] {
            guard let certificate = entry["cert"]?.dataValue, let name = entry["name"]?.stringValue,
                let addedAt = entry["addedAt"]?.dateValue
            else { throw invalid("a member lacks its certificate, name or date") }
            let member = Member(certificate: certificate, name: name, addedBy: try id(entry["addedBy"], "addedBy"), addedAt: addedAt)
            members[member.id] = member
        }
        var revocations: [DeviceID: Revocation] = [:]
        for entry in document["revocations"]?.arrayValue ?? [] {
            guard let at = entry["at"]?.dateValue else { throw invalid("a revocation lacks its date") }
            let revocation = Revocation(id: try id(entry["id"], "revocation id"), revokedBy: try id(entry["by"], "revokedBy"), revokedAt: at)
            revocations[revocation.id] = revocation
        }
        guard let keyEntry = document["key"], let epoch = keyEntry["epoch"]?.integerValue, epoch >= 1,
            let key = keyEntry["key"]?.dataValue, key.count == 32
        else { throw invalid("the account key is missing or malformed") }
        let excludes = try (keyEntry["excludes"]?.arrayValue ?? []).map { try id($0, "excluded device") }
        guard !members.isEmpty else { throw invalid("the roster has no members") }
        self.init(
            members: members,
            revocations: revocations,
            accountKey: AccountKey(epoch: UInt64(epoch), key: Array(key), excludes: Set(excludes))
        )
    }
}
