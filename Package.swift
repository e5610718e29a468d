// swift-tools-version:6.0
// Baton: Handoff for Swift on Linux. Module layout and the reasons for it: docs/ARCHITECTURE.md.
import PackageDescription

/// What the command line and its benchmarks both build on: the agent (to run or embed), the app library, the example
/// app `baton demo` runs, search, and NIO for talking to agents.
let commandLine: [Target.Dependency] = [
    "BatonAgentCommand",
    "BatonCore",
    "BatonProtocol",
    "BatonRegistry",
    "BatonAgent",
    "Baton",
    "BatonEmbedded",
    "BatonSearch",
    "ShopSnapKit",
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
    .product(name: "ArgumentParser", package: "swift-argument-parser"),
]

let package = Package(
    name: "Baton",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Baton", targets: ["Baton"]),
        .library(name: "BatonCore", targets: ["BatonCore"]),
        .library(name: "BatonEmbedded", targets: ["BatonEmbedded"]),
        .library(name: "BatonInMemory", targets: ["BatonInMemory"]),
        .library(name: "BatonAppleNames", targets: ["BatonAppleNames"]),
        .executable(name: "baton", targets: ["baton"]),
        .executable(name: "baton-agent", targets: ["baton-agent"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // On-device search (issue 15, G1-G3): SQLite with FTS5, through the system's libsqlite3.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // Values with no I/O: property lists and their codecs, the activity payload, limits, errors.
        .target(name: "BatonCore"),
        // Installed apps (bundles, Info.plist, entitlements; desktop files with X-Baton-* keys, issue 28 item 2), the
        // router, associated domains.
        .target(
            name: "BatonRegistry",
            dependencies: [
                "BatonCore",
                // Desktop files' key-file syntax and Exec lines (issue 28 item 2): the registry reads apps' .desktop files.
                "BatonActivitySources",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The synced folders' integration with Syncthing (issue 16 part 3, C9): its config.xml reader, behind `baton
        // folders syncthing`. Out of BatonProtocol, which holds what crosses the wire (issue 26 item 4); on BatonCore
        // alone, so the app library could read it too.
        .target(name: "BatonFolders", dependencies: ["BatonCore"]),
        // What crosses the wire, as pure values and state machines: the account roster, pairing, invites.
        .target(
            name: "BatonProtocol",
            dependencies: ["BatonCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The client side of an agent's app socket: connect, check it is this user's agent, frames. What apps link.
        .target(
            name: "BatonClient",
            dependencies: [
                "BatonCore",
                "BatonProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // sd-bus from libsystemd: the session D-Bus, for desktop notifications of what is nearby (issue 16). Loaded
        // with dlopen at run time (issue 24), so building needs no libsystemd-dev and running no libsystemd0.
        .target(name: "CSystemd"),
        // Desktop notifications of what is nearby (issue 16 part 2, C3) over the session D-Bus: the notification state
        // machine, the sd-bus thread and the notifier that drives them. Its own target (issue 26 item 4): what it knows
        // of the agent is a NearbyFeed (the nearby changes, the offers, Continue), never the Agent.
        .target(
            name: "BatonNotifications",
            dependencies: [
                "BatonCore",
                "BatonProtocol",
                "CSystemd",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Association files over HTTPS (issue 14, SEMANTICS E4), what the agent and `baton aasa` share: a GET client on
        // NIO (not async-http-client: ARCHITECTURE), the fetcher that verifies files, the cache on disk and the refresh
        // schedule. Its own target (issue 26 item 4), so its dependencies and its fuzzing stand apart from the agent's.
        .target(
            name: "BatonAssociations",
            dependencies: [
                "BatonCore",
                "BatonRegistry",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The per-device agent: state on disk, sessions, pairing.
        .target(
            name: "BatonAgent",
            dependencies: [
                // Association files over HTTPS (issue 14): fetched, cached and refreshed by the agent's association service.
                "BatonAssociations",
                "BatonClient",
                "BatonCore",
                "BatonProtocol",
                "BatonRegistry",
                // The search index (issue 15): GRDB brings the full Foundation into the agent (ARCHITECTURE, "A lean agent").
                "BatonSearch",
                // Desktop notifications over the session D-Bus (issue 16): sd-bus, on a thread of its own.
                "BatonNotifications",
                // What apps already publish (issue 27): recent documents and media players as activities.
                "BatonActivitySources",
                // The agent's D-Bus interface for apps in any language (issue 28 item 1; PROTOCOL.md §10, §11).
                "BatonDBus",
                "BatonDBusMessages",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // What apps already publish about themselves, read for issue 27 (items 1, 2, 4): GTK's recently-used.xbel, KDE's
        // RecentDocuments, desktop entries and their Exec lines, MPRIS metadata; pure, bounded decoders with no I/O.
        .target(name: "BatonActivitySources", dependencies: ["BatonCore"]),
        // D-Bus values and signatures, and the mapping between property lists and D-Bus values (issue 28 item 1): what the
        // agent's D-Bus interface for apps in any language is built on. Pure and bounded, on BatonCore alone, so it is
        // fuzzed on its own (`scripts/fuzz.sh dbus-plist`) and the interface's sd-bus code stays a thin layer over it.
        .target(name: "BatonDBus", dependencies: ["BatonCore"]),
        // The bridge between sd-bus messages and BatonDBus's values (issue 28 item 1): an incoming message's arguments read
        // as DBusValues within BatonDBus's limits, DBusValues appended to a message being built. What the agent's D-Bus
        // interface stands on; apart from BatonDBus so that stays pure (no CSystemd) and fuzzable on its own.
        .target(name: "BatonDBusMessages", dependencies: ["BatonDBus", "BatonCore", "CSystemd"]),
        // On-device search (issue 15, G1-G3): the index of activities eligible for search, SQLite FTS5 through GRDB.
        .target(
            name: "BatonSearch",
            dependencies: ["BatonCore", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // What apps import: a client of the device's agent.
        .target(
            name: "Baton",
            dependencies: [
                "BatonCore",
                "BatonProtocol",
                "BatonClient",
                // Continuation streams (F2, F3): each stream end is its own connection to the agent.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // Direct streams (issue 30): the two apps speak TLS 1.3 to each other. Built for the agent already.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // Apple's names (UIApplication, UIResponder, CSSearchableItemAttributeSet, ...) for Baton's types, opt-in.
        .target(name: "BatonAppleNames", dependencies: ["Baton"]),
        // Agents inside the process (tests, benchmarks, `baton demo`, single-binary tools), with the app library.
        .target(
            name: "BatonEmbedded",
            dependencies: [
                "Baton",
                "BatonAgent",
                "BatonRegistry",
                .product(name: "Logging", package: "swift-log"),
                // Each device's services run in a ServiceGroup of LocalDevices' own (issue 26 item 1).
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Agents wholly inside the process (issue 26 item 3): LocalDevices' agents on one in-memory network, apps
        // connected in memory, time virtual; no socket. Beside BatonEmbedded, as grpc-swift-2's in-process transport.
        .target(name: "BatonInMemory", dependencies: ["BatonEmbedded", "BatonAgent", "BatonRegistry"]),
        // `baton agent`'s options and running it, shared by `baton` and the lean `baton-agent`.
        .target(
            name: "BatonAgentCommand",
            dependencies: [
                "BatonAgent",
                "BatonAssociations",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The agent alone, what `baton agent` runs: no command line, no example apps, no full Foundation (so an agent
        // that runs all day maps less memory: docs/ARCHITECTURE.md, "A lean agent").
        .executableTarget(name: "baton-agent", dependencies: ["BatonAgentCommand"]),
        // The least an agent on the same libraries could be, measured beside the real one by scripts/idle.py.
        .executableTarget(
            name: "idle-floor",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The command line.
        // `baton bench` (issue 26 item 4: the benchmarks their own target): each figure against a baseline measured in
        // the same run, for `plist`, `route`, `handoff`, `stream` and `search`.
        .target(
            name: "BatonBench",
            dependencies: commandLine + [
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                // `bench search`: raw FTS5 through GRDB beside the index (issue 15).
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "baton",
            dependencies: commandLine + [
                "BatonBench",
                // `baton aasa` (issue 14).
                "BatonAssociations",
                // `baton doctor`'s notifications check (issue 16).
                "BatonNotifications",
                // `baton folders syncthing` (issue 16 part 3).
                "BatonFolders",
                "BatonClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The seeds' ShopSnap tutorial as a Linux app (Examples/ShopSnap.app runs `shopsnap`), and its screens as a
        // library so `baton demo` can run two copies in one process. Written with Apple's names, as the tutorial is.
        .target(name: "ShopSnapKit", dependencies: ["Baton", "BatonAppleNames"], path: "Examples/ShopSnapKit"),
        .executableTarget(name: "shopsnap", dependencies: ["Baton", "BatonAppleNames", "ShopSnapKit"], path: "Examples/shopsnap"),
        // A document-based example (issue 16): a line editor whose open note is an ActivityDocument (B4-B6, C9);
        // Examples/Notes.app runs `notes`. The editor, document and app as a library, so they can be tested.
        .target(name: "NotesKit", dependencies: ["Baton"], path: "Examples/NotesKit"),
        .executableTarget(name: "notes", dependencies: ["Baton", "NotesKit"], path: "Examples/notes"),
        // An app that says on which thread each of Baton's calls to it ran (issue 25 item 5); ThreadProbeCLITests
        // installs it as ShopSnap and continues it through real agents.
        .executableTarget(name: "thread-probe", dependencies: ["Baton", "BatonAppleNames"], path: "Tests/ThreadProbe"),
        // `baton-debug`: commands for tests and the load scripts (roster churn, sealing, synthetic stream apps), kept
        // out of the shipped `baton` (issue 26 item 4).
        .executableTarget(
            name: "baton-debug",
            dependencies: [
                "Baton", "BatonAgent", "BatonAgentCommand", "BatonTestKit", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/BatonDebug"
        ),
        // What tests need from outside the package (programs, Python modules, root) and the Debian packages that bring
        // it, as Swift Testing traits: a test whose need is missing is skipped naming the package, or fails under
        // BATON_TEST_REQUIRE_ALL=1 (issue 24; scripts/test-deps.sh installs them all). Not a test target, so every test
        // target can use it.
        .target(name: "BatonTestSupport", dependencies: ["BatonTestKit"], path: "Tests/Support"),
        // What the tests and `baton-debug` both use, without Swift Testing: a stream's tally, a seeded generator.
        .target(name: "BatonTestKit", path: "Tests/Kit"),
        .testTarget(name: "BatonCoreTests", dependencies: ["BatonCore", "Baton", "BatonTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "BatonRegistryTests", dependencies: ["BatonRegistry", "BatonTestSupport"]),
        .testTarget(name: "BatonProtocolTests", dependencies: ["BatonProtocol"]),
        .testTarget(name: "BatonFoldersTests", dependencies: ["BatonFolders"]),
        .testTarget(name: "BatonActivitySourcesTests", dependencies: ["BatonActivitySources"], exclude: ["Fixtures"]),
        .testTarget(name: "BatonDBusTests", dependencies: ["BatonDBus", "BatonCore", "BatonTestSupport"]),
        // Against a real dbus-daemon with dbus-python as the peer (issue 28 item 1).
        .testTarget(
            name: "BatonDBusMessagesTests",
            dependencies: ["BatonDBusMessages", "BatonDBus", "BatonCore", "BatonNotifications", "CSystemd", "BatonTestSupport"]
        ),
        .testTarget(name: "NotesKitTests", dependencies: ["NotesKit", "Baton"]),
        .testTarget(name: "BatonSearchTests", dependencies: ["BatonSearch", "BatonCore", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "BatonAgentTests",
            dependencies: [
                "BatonAgent",
                "BatonAssociations",
                "BatonNotifications",
                "BatonClient",
                "BatonRegistry",
                "BatonTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "BatonTests", dependencies: ["Baton", "BatonEmbedded", "BatonInMemory", "BatonRegistry", "BatonAgent", "BatonAssociations", "BatonTestSupport"]),
        // Handoff code written as for iOS and macOS, compiled against BatonAppleNames and run on embedded devices.
        .testTarget(
            name: "AppleShapedTests",
            // On agents in memory (issue 26 item 3): no socket, time virtual.
            dependencies: ["BatonAppleNames", "BatonEmbedded", "BatonInMemory"],
            // As most Handoff code out there is written.
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Runs the built `baton` (and `baton-agent`, and the `notes` example) executables as a person would; depends on
        // them so `swift test` builds them first.
        .testTarget(
            name: "BatonCLITests",
            dependencies: ["baton", "baton-agent", "baton-debug", "notes", "thread-probe", "BatonCore", "BatonProtocol", "BatonTestSupport"],
            exclude: ["Fixtures"]
        ),
    ]
)

// `scripts/fuzz.sh frames`: the frame decoder needs NIO, so SwiftPM builds its libFuzzer target (Fuzz/FrameFuzzer.swift,
// with --sanitize=fuzzer,address, in a scratch folder of its own). It is part of the package only then: a fuzzer has no
// `main` of its own, so no ordinary build could link it.
if Context.environment["BATON_FUZZ_FRAMES"] != nil {
    package.targets.append(
        .executableTarget(
            name: "frame-fuzzer",
            dependencies: [
                "BatonClient",
                "BatonCore",
                "BatonProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            path: "Fuzz",
            exclude: [
                "AssociationCacheFuzzer.swift", "AssociationFuzzer.swift", "MessageFuzzer.swift", "NativeMessageFuzzer.swift",
                "PlistFuzzer.swift", "SearchIndexFuzzer.swift", "SearchQueryFuzzer.swift", "SyncthingConfigFuzzer.swift", "corpus",
                "corpus-associations", "corpus-association-cache", "corpus-browser", "corpus-messages", "corpus-frames",
                "corpus-search-index", "corpus-search-query", "corpus-syncthing",
            ],
            sources: ["FrameFuzzer.swift"]
        )
    )
}

// `scripts/fuzz.sh search-index`: hostile index files need GRDB, so SwiftPM builds this libFuzzer target too
// (Fuzz/SearchIndexFuzzer.swift), only while BATON_FUZZ_SEARCH_INDEX is set, as the frames fuzzer above.
if Context.environment["BATON_FUZZ_SEARCH_INDEX"] != nil {
    package.targets.append(
        .executableTarget(
            name: "search-index-fuzzer",
            dependencies: ["BatonSearch"],
            path: "Fuzz",
            exclude: [
                "AssociationCacheFuzzer.swift", "AssociationFuzzer.swift", "FrameFuzzer.swift", "MessageFuzzer.swift",
                "NativeMessageFuzzer.swift", "PlistFuzzer.swift", "SearchQueryFuzzer.swift", "SyncthingConfigFuzzer.swift", "corpus",
                "corpus-associations", "corpus-association-cache", "corpus-browser", "corpus-messages", "corpus-frames",
                "corpus-search-query", "corpus-search-index", "corpus-syncthing",
            ],
            sources: ["SearchIndexFuzzer.swift"]
        )
    )
}

// `scripts/fuzz.sh adverts`: the advert seal needs swift-crypto, so SwiftPM builds this libFuzzer target too
// (Fuzz/AdvertFuzzer.swift), only while BATON_FUZZ_ADVERTS is set, as the frames fuzzer above.
if Context.environment["BATON_FUZZ_ADVERTS"] != nil {
    package.targets.append(
        .executableTarget(
            name: "advert-fuzzer",
            dependencies: ["BatonProtocol", .product(name: "Crypto", package: "swift-crypto")],
            path: "Fuzz",
            sources: ["AdvertFuzzer.swift"]
        )
    )
}
