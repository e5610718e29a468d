#!/usr/bin/env bash
# Fuzz Baton's decoders with libFuzzer and AddressSanitizer, for a bounded time: one target, or every one in turn.
#
#   scripts/fuzz.sh --list               every target, one a line: its name and what it decodes
#   scripts/fuzz.sh TARGET [SECONDS]     fuzz one target (SECONDS defaults to 60)
#   scripts/fuzz.sh all [SECONDS]        fuzz every target for SECONDS each (default 60), then print a table of
#                                        executions, executions per second, corpus and crashes per target
#   scripts/fuzz.sh --help               this text
#
# Run from anywhere. Each target is built into one instrumented binary (with swiftc from its sources, or, for the
# targets that need NIO, swift-crypto or GRDB, by SwiftPM in Fuzz/.work/build, a scratch folder of its own: minutes the
# first time), starts from its committed seed corpus Fuzz/corpus-NAME (plist's is Fuzz/corpus), keeps what it learns in
# Fuzz/.work/NAME/corpus (ignored by git), and leaves any crashing input in Fuzz/.work/NAME/crashes/; its last run's
# output is Fuzz/.work/NAME/last-run.log. Exits non-zero when a fuzzer found a crash, a leak or a slow input (> 5 s),
# or a target did not build; `all` runs every target before it exits so.
#
# Reproduce a crash: Fuzz/.work/NAME/NAME-fuzzer Fuzz/.work/NAME/crashes/crash-...; every crash found so far is a
# regression test in `swift test` (docs/RELIABILITY.md, "Fuzzing").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

# name|what it decodes (docs/RELIABILITY.md lists the same)
targets=(
    "adverts|sealed advert datagrams from the LAN: open, plaintext decode, replay window, nonces, membership, rate, nearby table (Fuzz/AdvertFuzzer.swift)"
    "beacon|the pairing beacon anyone on the LAN can send, and the list baton pair --find builds (Fuzz/PairingBeaconFuzzer.swift)"
    "messages|account, session and IPC messages: the body of one frame from a peer or an app (Fuzz/MessageFuzzer.swift)"
    "frames|session and stream frames: the frame decoder with data frames, its message handler, stream flow control (Fuzz/FrameFuzzer.swift)"
    "plist|binary and XML property lists and the activity payload (Fuzz/PlistFuzzer.swift)"
    "bundles|app bundles: Info.plist and entitlements loading, build variables, team, domains, executable (Fuzz/BundleFuzzer.swift)"
    "associations|apple-app-site-association and assetlinks.json as an HTTPS server sends them (Fuzz/AssociationFuzzer.swift)"
    "association-cache|the agent's cached association records, associations/DOMAIN.json (Fuzz/AssociationCacheFuzzer.swift)"
    "browser|native messages from the browser extension to baton browser-host (Fuzz/NativeMessageFuzzer.swift)"
    "syncthing|Syncthing's config.xml and synced-folder URLs from other devices (Fuzz/SyncthingConfigFuzzer.swift)"
    "dbus|the notification server's D-Bus answers and signals: Notify ids, ActionInvoked, NotificationClosed, NameOwnerChanged (Fuzz/NotificationsFuzzer.swift)"
    "search-query|search text to FTS5 match expressions; a result's words marked (Fuzz/SearchQueryFuzzer.swift)"
    "search-index|whole search.sqlite files opened, searched and written (Fuzz/SearchIndexFuzzer.swift)"
    "xbel|GTK's recently-used.xbel, desktop files and their Exec lines, KDE's RecentDocuments (Fuzz/XbelFuzzer.swift)"
    "mpris-metadata|a media player's MPRIS metadata, status, position and rate, and the position now (Fuzz/MPRISMetadataFuzzer.swift)"
    "dbus-plist|D-Bus values from apps as property lists and back: a userInfo's a{sv}, signatures (Fuzz/DBusPlistFuzzer.swift)"
    "dbus-activity|an activity's properties from a D-Bus app (CreateActivity, UpdateActivity, Save), applied and sent back as Continue's (Fuzz/DBusActivityFuzzer.swift)"
    "desktop-apps|apps registered by desktop file: X-Baton- keys, team, types, domains, TryExec/Exec program (Fuzz/DesktopAppFuzzer.swift)"
    "stream-preamble|a direct stream's preamble, the first bytes on the session port that are not TLS, whole and in pieces (Fuzz/StreamPreambleFuzzer.swift)"
)
names=()
for entry in "${targets[@]}"; do names+=("${entry%%|*}"); done

usage() {
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    echo
    echo "Targets:"
    list
}

list() {
    for entry in "${targets[@]}"; do printf '  %-18s %s\n' "${entry%%|*}" "${entry#*|}"; done
}

# Builds target $1 into $work/$1-fuzzer; sets work, seeds and max_len.
build() {
    local target="$1"
    local core=("$root"/Sources/BatonCore/*.swift "$root"/Sources/BatonCore/*/*.swift)
    local protocol="$root/Sources/BatonProtocol" registry="$root/Sources/BatonRegistry"
    local sources=() product=""
    work="$root/Fuzz/.work/$target"
    seeds="$root/Fuzz/corpus-$target"
    max_len=65536
    case "$target" in
    plist)
        # Its seed folder predates the others'.
        seeds="$root/Fuzz/corpus"
        sources=("${core[@]}" "$root/Fuzz/PlistFuzzer.swift")
        ;;
    messages)
        # The message decoders and what they use; the rest of BatonProtocol needs swift-crypto, which these do not.
        sources=("${core[@]}" "$protocol/BatonProtocolError.swift" "$protocol/Session/MessageFields.swift"
            "$protocol/Session/SessionMessage.swift" "$protocol/Session/StreamFlow.swift" "$protocol/Handoff/ContinuationFailure.swift"
            "$protocol/IPC/IPCMessage.swift" "$protocol/IPC/IPCRefusal.swift" "$protocol/IPC/SearchIndexFailure.swift"
            "$protocol/Account/AccountMessage.swift" "$root/Fuzz/MessageFuzzer.swift")
        ;;
    associations)
        # The JSON readers and matching; the CMS verifier beside them needs swift-crypto, which these do not.
        sources=("${core[@]}" "$registry/BatonRegistryError.swift" "$registry/Bundles/AssociatedDomain.swift"
            "$registry/Associations/AppSiteAssociation.swift" "$registry/Associations/AppSiteAssociation+Matching.swift"
            "$registry/Associations/AssetLinks.swift" "$registry/Associations/JSONTree.swift" "$registry/Associations/URLPattern.swift"
            "$root/Fuzz/AssociationFuzzer.swift")
        ;;
    bundles)
        # The bundle loader and what it uses; the rest of BatonRegistry needs swift-crypto, which these do not.
        sources=("${core[@]}" "$registry/BatonRegistryError.swift" "$registry/Bundles/AppBundleLoader.swift"
            "$registry/Bundles/AppBundleLoader+Executable.swift" "$registry/Bundles/AppRecord.swift"
            "$registry/Bundles/AssociatedDomain.swift" "$registry/Bundles/BuildVariables.swift" "$root/Fuzz/AppRecordChecks.swift"
            "$root/Fuzz/BundleFuzzer.swift")
        ;;
    browser)
        sources=("${core[@]}" "$protocol/BatonProtocolError.swift" "$protocol/Browser/NativeMessage.swift"
            "$protocol/Browser/BrowserFocus.swift" "$root/Fuzz/NativeMessageFuzzer.swift")
        ;;
    syncthing)
        # The config reader (BatonFolders) and the folder mapping; the rest of BatonProtocol needs swift-crypto, which
        # these do not.
        sources=("${core[@]}" "$protocol/BatonProtocolError.swift" "$protocol/Folders/SyncedFolders.swift"
            "$root/Sources/BatonFolders/SyncthingConfig.swift" "$root/Sources/BatonFolders/SyncthingConfigError.swift"
            "$root/Fuzz/SyncthingConfigFuzzer.swift")
        ;;
    beacon)
        # The beacon codec and the sightings list need the module's error type and BatonCore's text helpers (no swift-crypto).
        sources=("${core[@]}" "$protocol/BatonProtocolError.swift" "$protocol/Account/PairingBeacon.swift"
            "$protocol/Account/PairingBeaconSightings.swift" "$root/Fuzz/PairingBeaconFuzzer.swift")
        ;;
    dbus)
        # The pure state machine that interprets the server's answers; the sd-bus adapter around it needs libsystemd.
        sources=("${core[@]}" "$root/Sources/BatonNotifications/NearbyNotifications.swift" "$root/Fuzz/NotificationsFuzzer.swift")
        ;;
    search-query)
        # The query builder and the marked-text reader, and the two value types they name; none of these imports GRDB.
        local search="$root/Sources/BatonSearch"
        sources=("$search/SearchQuery.swift" "$search/SearchResult.swift" "$search/SearchEntry.swift" "$search/TextMarker.swift"
            "$root/Fuzz/SearchQueryFuzzer.swift")
        ;;
    association-cache)
        # The record decoder, its error, and the association readers it checks the stored JSON with.
        mkdir -p "$work"
        sources=("${core[@]}" "$registry/BatonRegistryError.swift" "$registry/Bundles/AssociatedDomain.swift"
            "$registry/Associations/AppSiteAssociation.swift" "$registry/Associations/AppSiteAssociation+Matching.swift"
            "$registry/Associations/JSONTree.swift" "$registry/Associations/URLPattern.swift"
            "$root/Sources/BatonAssociations/AssociationFetchError.swift" "$work/AssociationRecord.swift"
            "$root/Fuzz/AssociationCacheFuzzer.swift")
        # One module here: the record's `import BatonRegistry` names a module that does not exist in this build.
        sed '/^import BatonRegistry$/d' "$root/Sources/BatonAssociations/AssociationRecord.swift" > "$work/AssociationRecord.swift"
        max_len=270000
        ;;
    xbel | mpris-metadata)
        # BatonActivitySources (issue 27) is pure and needs only BatonCore.
        sources=("${core[@]}" "$root"/Sources/BatonActivitySources/*.swift)
        if [ "$target" = xbel ]; then sources+=("$root/Fuzz/XbelFuzzer.swift"); else sources+=("$root/Fuzz/MPRISMetadataFuzzer.swift"); fi
        ;;
    dbus-plist)
        # BatonDBus (issue 28 item 1) is pure and needs only BatonCore. The value trees come from the garbage test's
        # builder, without its `import BatonDBus` (one module here, as for association-cache).
        mkdir -p "$work"
        sed '/^import BatonDBus$/d' "$root/Tests/BatonDBusTests/DBusValueBuilder.swift" > "$work/DBusValueBuilder.swift"
        sources=("${core[@]}" "$root"/Sources/BatonDBus/*.swift "$work/DBusValueBuilder.swift" "$root/Fuzz/DBusPlistFuzzer.swift")
        ;;
    dbus-activity)
        # The agent's reading of an activity's properties (issue 28 item 1): pure over BatonCore and BatonDBus; the two
        # names it takes from DBusAppSession (which needs BatonProtocol and NIO) stand in, from the same declarations.
        mkdir -p "$work"
        sed '/^import BatonDBus$/d' "$root/Tests/BatonDBusTests/DBusValueBuilder.swift" > "$work/DBusValueBuilder.swift"
        sed '/^import Baton/d' "$root/Sources/BatonAgent/DBus/DBusActivityProperties.swift" > "$work/DBusActivityProperties.swift"
        {
            echo 'enum DBusAppSession {'
            sed -n '/^    \/\/\/ A refusal of a call/,/^    }$/p' "$root/Sources/BatonAgent/DBus/DBusAppSession.swift"
            echo '}'
            echo 'enum DBusAppInterface {'
            sed -n '/^    enum Error {/,/^    }$/p' "$root/Sources/BatonAgent/DBus/DBusAppInterface.swift"
            echo '}'
        } > "$work/Session.swift"
        sources=("${core[@]}" "$root"/Sources/BatonDBus/*.swift "$work/DBusValueBuilder.swift" "$work/DBusActivityProperties.swift"
            "$work/Session.swift" "$root/Fuzz/DBusActivityFuzzer.swift")
        ;;
    desktop-apps)
        # The desktop-file loader (issue 28 item 2) and what it reads with: BatonActivitySources' key-file reader and the
        # bundle loader's checks; the rest of BatonRegistry needs swift-crypto, which these do not. The loader's
        # `import BatonActivitySources` names a module that does not exist here (one module, as for association-cache).
        mkdir -p "$work"
        sed '/^import BatonActivitySources$/d' "$registry/Desktop/DesktopAppLoader.swift" > "$work/DesktopAppLoader.swift"
        sources=("${core[@]}" "$root"/Sources/BatonActivitySources/*.swift "$registry/BatonRegistryError.swift"
            "$registry/Bundles/AppBundleLoader.swift" "$registry/Bundles/AppBundleLoader+Executable.swift"
            "$registry/Bundles/AppRecord.swift" "$registry/Bundles/AssociatedDomain.swift" "$registry/Bundles/BuildVariables.swift"
            "$work/DesktopAppLoader.swift" "$root/Fuzz/AppRecordChecks.swift" "$root/Fuzz/DesktopAppFuzzer.swift")
        ;;
    stream-preamble)
        # The preamble (issue 30) needs nothing but the standard library. Its inputs are the first bytes of a connection.
        sources=("$protocol/Session/StreamPreamble.swift" "$root/Fuzz/StreamPreambleFuzzer.swift")
        max_len=256
        ;;
    frames)
        # The frame decoder is NIO's ByteToMessageDecoder. Inputs may hold a whole data frame of 256 KiB.
        product=frame-fuzzer
        max_len=270000
        ;;
    search-index)
        # Whole index files (the seeds are real ones of 52 KiB), opened, searched and written through GRDB.
        product=search-index-fuzzer
        ;;
    adverts)
        # The seal is swift-crypto's AES-GCM.
        product=advert-fuzzer
        ;;
    *)
        echo "unknown fuzz target $target; scripts/fuzz.sh --list names them" >&2
        exit 64
        ;;
    esac
    mkdir -p "$work/corpus" "$work/crashes"
    echo "building the $target fuzzer (-sanitize=fuzzer,address)..."
    if [ -n "$product" ]; then
        # SwiftPM builds the package's libFuzzer targets, which exist only while their BATON_FUZZ_* variable is set
        # (Package.swift): all set at once, so the three share one scratch folder and its compiled dependencies, and
        # the ordinary build is left as it is.
        # SwiftPM 6.3 fails a rebuild there with "unknown build description" when its cached build plan is kept; the
        # plan is cheap to make again (the compiled files stay).
        local scratch="$root/Fuzz/.work/build"
        rm -f "$scratch"/*/release/description.json "$scratch"/*/release/plugin-tools-description.json
        # --sanitize=fuzzer makes SwiftPM link libFuzzer's main instead of the target's own; the sanitizers then go to
        # swiftc once more as one flag, which comes last and wins: two --sanitize options become two -sanitize flags in
        # an order that changes from run to run, and swiftc keeps only the last, so coverage came and went.
        if ! (cd "$root" && BATON_FUZZ_FRAMES=1 BATON_FUZZ_SEARCH_INDEX=1 BATON_FUZZ_ADVERTS=1 swift build -c release \
            --product "$product" --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address \
            --scratch-path "$scratch" > "$work/build.log" 2>&1); then
            tail -n 30 "$work/build.log" >&2
            echo "the $target fuzzer did not build: see $work/build.log" >&2
            return 1
        fi
        cp "$scratch/release/$product" "$work/$target-fuzzer"
    else
        # One module (the BatonProtocol files' `import BatonCore` is then ignored, with a warning: warnings are off
        # here; the package build reports them).
        if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -suppress-warnings -module-name BatonCore -package-name Baton \
            "${sources[@]}" -o "$work/$target-fuzzer" > "$work/build.log" 2>&1; then
            grep -v "Cannot export local symbol" "$work/build.log" | tail -n 30 >&2
            echo "the $target fuzzer did not build: see $work/build.log" >&2
            return 1
        fi
    fi
}

# Fuzzes target $1 for $2 seconds (after build); returns libFuzzer's status.
fuzz() {
    local target="$1" seconds="$2"
    echo "fuzzing $target for ${seconds}s (2 GiB memory cap, 5 s per input)..."
    # Swift's own backtracer would run inside the sanitizer and report noise; libFuzzer reports the trap itself.
    local status=0
    SWIFT_BACKTRACE=enable=no "$work/$target-fuzzer" "$work/corpus" "$seeds" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -max_len="$max_len" \
        -artifact_prefix="$work/crashes/" -print_final_stats=1 > "$work/last-run.log" 2>&1 || status=$?
    return "$status"
}

# The last run's figures: executions, per second, corpus units and size (libFuzzer's own count after its last
# reduction), as "EXECS|PER_SECOND|UNITS|SIZE".
figures() {
    local log="$work/last-run.log"
    local execs rate corpus
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    # "#123 DONE cov: 456 ft: 789 corp: 42/1234b ..." (or the last pulse line, when it stopped early).
    corpus=$(grep -Eo 'corp: [0-9]+/[0-9]+[bKM]b?' "$log" | tail -n 1 | sed 's/corp: //')
    echo "${execs:-0}|${rate:-0}|${corpus%%/*}|${corpus#*/}"
}

if [ $# -lt 1 ]; then
    usage >&2
    exit 64
fi
case "$1" in
--help | -h)
    usage
    exit 0
    ;;
--list)
    list
    exit 0
    ;;
all)
    seconds="${2:-60}"
    rows=()
    failed=0
    for target in "${names[@]}"; do
        crashes_before=0
        result="ok"
        if ! build "$target"; then
            rows+=("$target|-|-|-|-|build failed")
            failed=1
            continue
        fi
        crashes_before=$(find "$work/crashes" -type f | wc -l)
        status=0
        fuzz "$target" "$seconds" || status=$?
        crashes=$(($(find "$work/crashes" -type f | wc -l) - crashes_before))
        if [ "$status" -ne 0 ]; then
            result="stopped ($status): $(find "$work/crashes" -type f -newer "$work/$target-fuzzer" | tail -n 1)"
            failed=1
        fi
        rows+=("$target|$(figures)|$crashes $result")
        grep -E "ERROR|SUMMARY|Fatal error|Precondition failed" "$work/last-run.log" | head -n 5 || true
    done
    echo
    echo "fuzzed $(date -u +%Y-%m-%d) at $(git -C "$root" rev-parse --short HEAD), ${seconds} s per target:"
    printf '%-18s %12s %8s %7s %9s  %s\n' target executions exec/s corpus size crashes
    for row in "${rows[@]}"; do
        IFS='|' read -r name execs rate units size crashes <<< "$row"
        printf '%-18s %12s %8s %7s %9s  %s\n' "$name" "$execs" "$rate" "$units" "$size" "$crashes"
    done
    exit "$failed"
    ;;
esac

target="$1"
seconds="${2:-60}"
if [[ ! " ${names[*]} " == *" $target "* ]]; then
    echo "unknown fuzz target $target; scripts/fuzz.sh --list names them" >&2
    exit 64
fi
build "$target" || exit 1
status=0
fuzz "$target" "$seconds" || status=$?
grep -E "Done|ERROR|SUMMARY|Fatal|stat::" "$work/last-run.log" || true
if [ "$status" -ne 0 ]; then
    echo "fuzzer stopped with status $status: see $work/last-run.log and $work/crashes/" >&2
    exit "$status"
fi
IFS='|' read -r execs rate units size <<< "$(figures)"
echo "no crash in ${seconds}s: $execs executions ($rate/s); corpus now $units inputs, $size"
