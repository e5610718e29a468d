import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One message of the account sessions: pairing, invites and the one-shot sync (docs/PROTOCOL.md §4). Like
/// ``SessionMessage`` it travels as a binary property-list dictionary whose type is under `t`; the agent's
/// multiplexed sessions (§6) read the `sync` and `error` of this family as ``SessionMessage/sync(id:roster:agentPort:)``
/// without an id and ``SessionMessage/error(message:)``, byte for byte the same.
public enum AccountMessage: Sendable, Hashable {
    /// Opens a pairing: this side's random nonce (``nonceLength`` bytes) and its device name.
    case pairHello(nonce: Data, name: String)
    /// Whether the person on this side confirmed the code.
    case pairConfirm(accepted: Bool)
    /// A pairing's roster (docs/PROTOCOL.md §4, encoded ``Roster``): the initiator's, then the merged one.
    case roster(Data)
    /// A joiner presents the invite's secret (``secretLength`` bytes), its name and its roster.
    case join(secret: Data, name: String, roster: Data)
    /// The inviter admitted the joiner: the roster with it added.
    case welcome(roster: Data)
    /// The one-shot roster exchange of `baton sync`, and the port the sender's agent listens on.
    case sync(roster: Data, agentPort: Int?)
    /// The other side refuses: the flow ends.
    case error(message: String)

    /// The message types, as `t` names them on the wire.
    public enum Kind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case pairHello = "pair-hello"
        case pairConfirm = "pair-confirm"
        case roster
        case join
        case welcome
        case sync
        case error

        public var description: String { rawValue }
    }

    /// The length of a pairing nonce: 128 bits, as each side draws it for the pairing code (``PairingCode``).
    public static let nonceLength = 16
    /// The length of an invite's secret, as the token carries it (``InviteToken/secret``).
    public static let secretLength = 16
    /// The longest device name or error text read, in UTF-8 bytes (the default for free text, docs/PROTOCOL.md §6);
    /// a sender cuts longer text to fit, so a receiver never sees it.
    public static let maximumTextLength = 4_096
    /// What a message's bytes may be: the frame limit of every session (4 MiB), and the nesting of a flat message
    /// with room to spare (a deeper one is hostile, not a newer version).
    public static let limits = PropertyListLimits(maximumInputBytes: 4 << 20, maximumDepth: 16)

    /// The message's type.
    public var kind: Kind {
        switch self {
        case .pairHello: .pairHello
        case .pairConfirm: .pairConfirm
        case .roster: .roster
        case .join: .join
        case .welcome: .welcome
        case .sync: .sync
        case .error: .error
        }
    }

    /// The message as a property list, ready to frame.
    public var propertyList: PropertyList {
        let text = Self.maximumTextLength
        switch self {
        case .pairHello(let nonce, let name):
            return makeMessage(kind.rawValue, ["nonce": .data(nonce), "name": .string(bounded(name, text))])
        case .pairConfirm(let accepted):
            return makeMessage(kind.rawValue, ["ok": .bool(accepted)])
        case .roster(let roster), .welcome(let roster):
            return makeMessage(kind.rawValue, ["roster": .data(roster)])
        case .join(let secret, let name, let roster):
            return makeMessage(kind.rawValue, ["secret": .data(secret), "name": .string(bounded(name, text)), "roster": .data(roster)])
        case .sync(let roster, let port):
            return makeMessage(kind.rawValue, ["roster": .data(roster), "agentPort": port.map { .integer(Int64($0)) }])
        case .error(let message):
            return makeMessage(kind.rawValue, ["message": .string(bounded(message, text))])
        }
    }

    /// Reads a message.
    /// - Throws: ``BatonProtocolError`` `malformedMessage` naming the type or field that is wrong: a missing or
    ///   mistyped field, a nonce or secret not of its length, text over ``maximumTextLength``, a port outside 1 to
    ///   65535, or a type this family does not have.
    public init(_ plist: PropertyList) throws {
        let fields = try MessageFields(plist)
        guard let kind = Kind(rawValue: fields.type) else { throw fields.unexpected() }
        let text = Self.maximumTextLength
        switch kind {
        case .pairHello:
            self = .pairHello(nonce: try fields.data("nonce", count: Self.nonceLength), name: try fields.string("name", maximumLength: text))
        case .pairConfirm:
            self = .pairConfirm(accepted: try fields.bool("ok"))
        case .roster:
            self = .roster(try fields.data("roster"))
        case .join:
            self = .join(
                secret: try fields.data("secret", count: Self.secretLength),
                name: try fields.string("name", maximumLength: text),
                roster: try fields.data("roster")
            )
        case .welcome:
            self = .welcome(roster: try fields.data("roster"))
        case .sync:
            self = .sync(roster: try fields.data("roster"), agentPort: try fields.port("agentPort"))
        case .error:
            self = .error(message: try fields.string("message", maximumLength: text))
        }
    }

    /// The message as the body of a frame: a binary property list.
    public func encoded() throws -> Data {
        do {
            return try BinaryPropertyListEncoder.encode(propertyList)
        } catch {
            throw BatonProtocolError(.malformedMessage, "\(kind) message cannot be encoded: \(error)")
        }
    }

    /// Reads the body of a frame.
    /// - Throws: ``BatonProtocolError`` `malformedMessage` for bytes that are not a binary property list within
    ///   ``limits``, or not a message of this family (see ``init(_:)``).
    public init(decoding data: Data) throws {
        let plist: PropertyList
        do {
            plist = try BinaryPropertyListDecoder.decode(data, limits: Self.limits)
        } catch {
            throw BatonProtocolError(.malformedMessage, "an account message must be a binary property list: \(error)")
        }
        try self.init(plist)
    }
}
