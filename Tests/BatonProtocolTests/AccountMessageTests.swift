import BatonCore
import BatonProtocol
import Foundation
import Testing

extension MessageSamples {
    static let nonce = Data(repeating: 0x01, count: AccountMessage.nonceLength)
    static let secret = Data(repeating: 0x07, count: AccountMessage.secretLength)

    /// One of every account message (docs/PROTOCOL.md §4), optional fields both present and absent.
    static let account: [AccountMessage] = [
        .pairHello(nonce: nonce, name: "laptop"),
        .pairConfirm(accepted: true),
        .pairConfirm(accepted: false),
        .roster(roster),
        .join(secret: secret, name: "phone", roster: roster),
        .welcome(roster: roster),
        .sync(roster: roster, agentPort: 47_810),
        .sync(roster: Data(), agentPort: nil),
        .sync(roster: roster, agentPort: 65_535),
        .error(message: "this device is not a member of the account"),
    ]
}

extension MessageFamily {
    static let account = MessageFamily(
        description: "account",
        samples: MessageSamples.account.map(\.propertyList),
        required: [
            "pair-hello": ["nonce", "name"], "pair-confirm": ["ok"], "roster": ["roster"], "join": ["secret", "name", "roster"],
            "welcome": ["roster"], "sync": ["roster"], "error": ["message"],
        ],
        limits: [:],
        reread: { try AccountMessage($0).propertyList }
    )
}

@Suite("Account messages: pairing, invites, sync (docs/PROTOCOL.md §4)")
struct AccountMessageTests {
    typealias Support = MessageTestSupport

    /// How BatonAgent's AccountFlows built each message by hand before the messages were typed (`message(type,
    /// fields)`: the fields and `t`). The typed messages must put exactly these dictionaries on the wire.
    static let handBuilt: [(AccountMessage, PropertyList)] = [
        (.pairHello(nonce: MessageSamples.nonce, name: "laptop"), ["t": "pair-hello", "nonce": .data(MessageSamples.nonce), "name": "laptop"]),
        (.pairConfirm(accepted: true), ["t": "pair-confirm", "ok": true]),
        (.pairConfirm(accepted: false), ["t": "pair-confirm", "ok": false]),
        (.roster(MessageSamples.roster), ["t": "roster", "roster": .data(MessageSamples.roster)]),
        (
            .join(secret: MessageSamples.secret, name: "phone", roster: MessageSamples.roster),
            ["t": "join", "secret": .data(MessageSamples.secret), "name": "phone", "roster": .data(MessageSamples.roster)]
        ),
        (.welcome(roster: MessageSamples.roster), ["t": "welcome", "roster": .data(MessageSamples.roster)]),
        (.sync(roster: MessageSamples.roster, agentPort: 47_810), ["t": "sync", "roster": .data(MessageSamples.roster), "agentPort": .integer(47_810)]),
        (.sync(roster: MessageSamples.roster, agentPort: nil), ["t": "sync", "roster": .data(MessageSamples.roster)]),
        (.error(message: "no"), ["t": "error", "message": "no"]),
    ]

    @Test("every account message round-trips through its property list and through bplist00 bytes")
    func roundTrips() throws {
        for message in MessageSamples.account {
            #expect(try AccountMessage(message.propertyList) == message)
            let bytes = try message.encoded()
            #expect(bytes.starts(with: Array("bplist00".utf8)))
            #expect(bytes == (try BinaryPropertyListEncoder.encode(message.propertyList)), "encoded() is the property list's bytes")
            #expect(try AccountMessage(decoding: bytes) == message, "\(message)")
            #expect(Support.type(message.propertyList) == message.kind.rawValue)
        }
        #expect(Set(MessageSamples.account.map(\.kind)) == Set(AccountMessage.Kind.allCases))
    }

    @Test("the wire is unchanged: each message is the dictionary the flows wrote by hand, to the byte")
    func sameAsHandBuilt() throws {
        for (message, dictionary) in Self.handBuilt {
            #expect(message.propertyList == dictionary, "\(message.kind)")
            #expect(try message.encoded() == BinaryPropertyListEncoder.encode(dictionary), "\(message.kind)")
            #expect(try AccountMessage(dictionary) == message)
        }
    }

    @Test("the agent's sessions read the one-shot sync and error as the same session messages, and write the same bytes")
    func sharedWithSessions() throws {
        let pairs: [(AccountMessage, SessionMessage)] = [
            (.sync(roster: MessageSamples.roster, agentPort: 47_810), .sync(id: nil, roster: MessageSamples.roster, agentPort: 47_810)),
            (.sync(roster: MessageSamples.roster, agentPort: nil), .sync(id: nil, roster: MessageSamples.roster, agentPort: nil)),
            (.error(message: "refused"), .error(message: "refused")),
        ]
        for (account, session) in pairs {
            #expect(try SessionMessage(account.propertyList) == session)
            #expect(try AccountMessage(session.propertyList) == account)
            #expect(try account.encoded() == BinaryPropertyListEncoder.encode(session.propertyList))
        }
    }

    @Test("a nonce or secret of another length than 16 bytes is malformedMessage naming it")
    func fixedLengths() throws {
        for (type, key) in [("pair-hello", "nonce"), ("join", "secret")] {
            let sample = try #require(MessageFamily.account.samples.first { Support.type($0) == type })
            for count in [0, 15, 17, 1_024] {
                let error = #expect(throws: BatonProtocolError.self, "\(type).\(key) of \(count) bytes") {
                    try AccountMessage(Support.setting(sample, key, to: .data(Data(repeating: 9, count: count))))
                }
                #expect(error?.code == .malformedMessage)
                #expect(error?.message.contains("\"\(key)\"") == true, "\(error?.message ?? "")")
                #expect(error?.message.contains("16 bytes") == true, "\(error?.message ?? "")")
            }
        }
    }

    @Test("a sender cuts an over-long name or error text to the limit, so the receiver reads it")
    func boundedText() throws {
        let long = String(repeating: "é", count: AccountMessage.maximumTextLength)
        for message: AccountMessage in [
            .pairHello(nonce: MessageSamples.nonce, name: long), .join(secret: MessageSamples.secret, name: long, roster: Data()), .error(message: long),
        ] {
            let read = try AccountMessage(decoding: try message.encoded())
            #expect(read.kind == message.kind)
            let text = read.propertyList["name"]?.stringValue ?? read.propertyList["message"]?.stringValue ?? ""
            #expect(text.utf8.count <= AccountMessage.maximumTextLength && text.hasSuffix("…"))
        }
    }

    @Test("the one-shot sync's agentPort must be a port number, 1 to 65535")
    func agentPort() throws {
        let base = AccountMessage.sync(roster: MessageSamples.roster, agentPort: nil).propertyList
        for port in [1, 65_535] {
            #expect(try AccountMessage(Support.setting(base, "agentPort", to: .integer(Int64(port)))) == .sync(roster: MessageSamples.roster, agentPort: port))
        }
        for port: PropertyList in [0, 65_536, -1, .unsignedInteger(.max), "47810", .real(47_810), true] {
            let error = #expect(throws: BatonProtocolError.self, "\(port)") { try AccountMessage(Support.setting(base, "agentPort", to: port)) }
            #expect(error?.code == .malformedMessage)
            #expect(error?.message.contains("agentPort") == true)
        }
    }

    @Test("garbage that is not an account message is malformedMessage: no dictionary, no type, a type of another family")
    func notMessages() {
        let garbage: [PropertyList] = [
            "pair-hello", 1, .null, .data(Data("bplist00".utf8)), ["t", "join"], .set(["t"]), [:], ["nonce": .data(MessageSamples.nonce)],
            ["t": 1], ["t": .data(Data("sync".utf8))], ["t": ""], ["t": "PAIR-HELLO"], ["t": "synced", "id": 1, "roster": .data(Data())],
            ["t": "fetch", "id": 1, "seq": 1, "deadline": 1], ["t": .string(String(repeating: "x", count: 100_000))],
            ["t": "pair-confirm", "ok": 1], ["t": "pair-confirm", "ok": "true"], ["t": "welcome", "roster": "roster"],
        ]
        for plist in garbage {
            let error = #expect(throws: BatonProtocolError.self, "\(plist)") { try AccountMessage(plist) }
            #expect(error?.code == .malformedMessage)
        }
    }

    @Test("garbage bytes: random, truncated, mutated and over-limit inputs only ever throw malformedMessage or decode to a message that re-encodes to itself", arguments: 0..<8)
    func garbageBytes(seed: UInt64) throws {
        var random = SeededRandom(state: seed)
        let frames = try MessageSamples.account.map { [UInt8](try $0.encoded()) }
        var outcomes: [SessionMessageTests.Outcome: Int] = [:]
        func read(_ bytes: [UInt8]) {
            do {
                let message = try AccountMessage(decoding: Data(bytes))
                #expect(try AccountMessage(decoding: message.encoded()) == message)
                outcomes[.decoded, default: 0] += 1
            } catch let error as BatonProtocolError {
                #expect(error.code == .malformedMessage, "\(error)")
                outcomes[.refused, default: 0] += 1
            } catch {
                Issue.record("untyped error \(error) for \(bytes)")
            }
        }
        for frame in frames {
            // Every truncation of every message.
            for end in 0..<frame.count { read(Array(frame[..<end])) }
            read(frame)
        }
        for _ in 0..<300 {
            // Random bytes, with and without the header.
            let length = Int(random.next() % 200)
            let noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            read(noise)
            read(Array("bplist00".utf8) + noise)
            // A message with a few bytes changed, inserted or removed.
            var bytes = frames[Int(random.next() % UInt64(frames.count))]
            for _ in 0...(random.next() % 4) where !bytes.isEmpty {
                let index = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 4 {
                case 0: bytes[index] ^= UInt8(1 << (random.next() % 8))
                case 1: bytes[index] = UInt8(truncatingIfNeeded: random.next())
                case 2: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
                default: bytes.remove(at: index)
                }
            }
            read(bytes)
        }
        // Past the 4 MiB frame limit, before parsing.
        read(Array("bplist00".utf8) + [UInt8](repeating: 0, count: AccountMessage.limits.maximumInputBytes))
        #expect(outcomes[.decoded, default: 0] > 0 && outcomes[.refused, default: 0] > 0, "\(outcomes)")
    }

    @Test("garbage fields: messages with fields removed, retyped, swapped between types only ever throw malformedMessage or decode", arguments: 0..<8)
    func garbageFields(seed: UInt64) {
        var random = SeededRandom(state: seed)
        let samples = MessageFamily.account.samples
        let types = AccountMessage.Kind.allCases.map(\.rawValue) + ["sync", "synced", "fail", "hello"]
        let keys = Array(Set(samples.flatMap { Support.fields($0).keys })).sorted()
        let values: [PropertyList] = [
            .integer(-1), 0, 1, 47_810, 65_536, .unsignedInteger(.max), .real(.nan), "", "x", .string(String(repeating: "é", count: 3_000)),
            true, false, .data(Data()), .data(MessageSamples.nonce), .data(Data(repeating: 0xFF, count: 17)), .date(.distantPast), .null,
            .set([1]), [], [:], ["t": "roster"],
        ]
        var outcomes: [SessionMessageTests.Outcome: Int] = [:]
        for _ in 0..<400 {
            let plist = Support.mutateFields(of: samples[Int(random.next() % UInt64(samples.count))], keys: keys, types: types, values: values, &random)
            outcomes[SessionMessageTests.outcome(.account, plist), default: 0] += 1
        }
        #expect(outcomes[.decoded, default: 0] > 0 && outcomes[.refused, default: 0] > 0, "\(outcomes)")
    }
}

@Suite("Account message test vectors (docs/PROTOCOL.md §4)")
struct AccountVectorMessageTests {
    typealias Support = MessageTestSupport

    /// The documented frames: length prefix and bplist00. Python's `plistlib.loads(frame[4:])` reads them as
    /// `{'name': 'laptop', 'nonce': b'\x01' * 16, 't': 'pair-hello'}`, `{'ok': True, 't': 'pair-confirm'}`,
    /// `{'name': 'phone', 'roster': b'roster bytes', 'secret': b'\x07' * 16, 't': 'join'}` and
    /// `{'agentPort': 47810, 'roster': b'roster bytes', 't': 'sync'}`.
    static let pairHello =
        "0000006862706c6973743030d3010305020406546e616d65566c6170746f70556e6f6e63654f10100101010101010101"
        + "010101010101010151745a706169722d68656c6c6f080f141b2134360000000000000101000000000000000700000000"
        + "000000000000000000000041"
    static let pairConfirm =
        "0000004562706c6973743030d201030204526f6b0951745c706169722d636f6e6669726d080d10111300000000000001"
        + "01000000000000000500000000000000000000000000000020"
    static let join =
        "0000007a62706c6973743030d40103050702040608546e616d655570686f6e6556726f737465724c726f737465722062"
        + "79746573567365637265744f1010070707070707070707070707070707075174546a6f696e0811161c2330374a4c0000"
        + "000000000101000000000000000900000000000000000000000000000051"
    static let sync =
        "0000005e62706c6973743030d3010305020406596167656e74506f727411bac256726f737465724c726f737465722062"
        + "7974657351745473796e63080f191c233032000000000000010100000000000000070000000000000000000000000000"
        + "0037"

    static let vectors: [(AccountMessage, String)] = [
        (.pairHello(nonce: MessageSamples.nonce, name: "laptop"), pairHello),
        (.pairConfirm(accepted: true), pairConfirm),
        (.join(secret: MessageSamples.secret, name: "phone", roster: MessageSamples.roster), join),
        (.sync(roster: MessageSamples.roster, agentPort: 47_810), sync),
    ]

    @Test("pair-hello, pair-confirm, join and sync encode to the documented frames, and the frames decode to them")
    func vectors() throws {
        for (message, expected) in Self.vectors {
            let frame = try Support.frame(message.propertyList)
            #expect(Support.hex(frame) == expected, "\(message.kind): \(Support.hex(frame))")
            let documented = Support.bytes(hex: expected)
            let length = documented.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            #expect(length == documented.count - 4)
            #expect(try AccountMessage(decoding: Data(documented.dropFirst(4))) == message)
        }
    }
}
