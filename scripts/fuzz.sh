#!/usr/bin/env bash
# Fuzz one of Baton's decoders with libFuzzer and AddressSanitizer, for a bounded time.
#
#   scripts/fuzz.sh plist [SECONDS]       the property-list codecs and the payload decoder (Fuzz/PlistFuzzer.swift)
#   scripts/fuzz.sh messages [SECONDS]    the account, session and IPC message decoders (Fuzz/MessageFuzzer.swift)
#   scripts/fuzz.sh associations [SECONDS]  apple-app-site-association and assetlinks.json (Fuzz/AssociationFuzzer.swift)
#   scripts/fuzz.sh browser [SECONDS]     the browser's native messages to `baton browser-host` (Fuzz/NativeMessageFuzzer.swift)
#   scripts/fuzz.sh association-cache [SECONDS]  the agent's cached association records (Fuzz/AssociationCacheFuzzer.swift)
#   scripts/fuzz.sh search-query [SECONDS]  search text to FTS5 match expressions; a result's words marked
#   scripts/fuzz.sh search-index [SECONDS]  whole search index files opened, searched and written (Fuzz/SearchIndexFuzzer.swift;
#                                         built by SwiftPM, as it needs GRDB: minutes the first time)
#                                         (Fuzz/SearchQueryFuzzer.swift)
#   scripts/fuzz.sh syncthing [SECONDS]  Syncthing's config.xml and synced-folder URLs from other devices (Fuzz/SyncthingConfigFuzzer.swift)
#   scripts/fuzz.sh beacon [SECONDS]     the pairing beacon anyone on the LAN can send, and the list built from them
#                                         (Fuzz/PairingBeaconFuzzer.swift)
#   scripts/fuzz.sh frames [SECONDS]      frames with data frames allowed, the messages in them, and stream flow control
#                                         (Fuzz/FrameFuzzer.swift; built by SwiftPM, as it needs NIO: minutes the first time)
#
# SECONDS defaults to 60; run from anywhere. Builds the target's sources into one instrumented binary, starts from
# its committed seed corpus, keeps what it learns in Fuzz/.work/ (ignored by git), and leaves any crashing input in
# the crashes/ folder there. Exits non-zero when the fuzzer found a crash, a leak or a slow input (> 5 s).
set -euo pipefail
target="${1:?usage: scripts/fuzz.sh plist|messages|associations|association-cache|browser|search-query|search-index|syncthing|beacon|frames [SECONDS]}"
seconds="${2:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
core=("$root"/Sources/BatonCore/*.swift "$root"/Sources/BatonCore/*/*.swift)
case "$target" in
plist)
    work="$root/Fuzz/.work"
    seeds="$root/Fuzz/corpus"
    sources=("${core[@]}" "$root/Fuzz/PlistFuzzer.swift")
    ;;
messages)
    work="$root/Fuzz/.work/messages"
    seeds="$root/Fuzz/corpus-messages"
    # The message decoders and what they use; the rest of BatonProtocol needs swift-crypto, which these do not.
    protocol="$root/Sources/BatonProtocol"
    sources=("${core[@]}" "$protocol/BatonProtocolError.swift" "$protocol/Session/MessageFields.swift"
        "$protocol/Session/SessionMessage.swift" "$protocol/Session/StreamFlow.swift" "$protocol/Handoff/ContinuationFailure.swift" "$protocol/IPC/IPCMessage.swift" "$protocol/Account/AccountMessage.swift"
        "$root/Fuzz/MessageFuzzer.swift")
    ;;
associations)
    work="$root/Fuzz/.work/associations"
    seeds="$root/Fuzz/corpus-associations"
    # The JSON readers and matching; the CMS verifier beside them needs swift-crypto, which these do not.
    registry="$root/Sources/BatonRegistry"
    sources=("${core[@]}" "$registry/BatonRegistryError.swift" "$registry/Bundles/AssociatedDomain.swift"
        "$registry/Associations/AppSiteAssociation.swift" "$registry/Associations/AppSiteAssociation+Matching.swift"
        "$registry/Associations/AssetLinks.swift" "$registry/Associations/JSONTree.swift" "$registry/Associations/URLPattern.swift"
        "$root/Fuzz/AssociationFuzzer.swift")
    ;;
browser)
    work="$root/Fuzz/.work/browser"
    seeds="$root/Fuzz/corpus-browser"
    protocol="$root/Sources/BatonProtocol"
    sources=("${core[@]}" "$protocol/BatonProtocolError.swift" "$protocol/Browser/NativeMessage.swift"
        "$protocol/Browser/BrowserFocus.swift" "$root/Fuzz/NativeMessageFuzzer.swift")
    ;;
syncthing)
    work="$root/Fuzz/.work/syncthing"
    seeds="$root/Fuzz/corpus-syncthing"
    # The config reader and the folder mapping; the rest of BatonProtocol needs swift-crypto, which these do not.
    protocol="$root/Sources/BatonProtocol"
    sources=("${core[@]}" "$protocol/BatonProtocolError.swift" "$protocol/Folders/SyncedFolders.swift"
        "$protocol/Folders/SyncthingConfig.swift" "$root/Fuzz/SyncthingConfigFuzzer.swift")
    ;;
beacon)
    work="$root/Fuzz/.work/beacon"
    seeds="$root/Fuzz/corpus-beacon"
    # The beacon codec and the sightings list need nothing but the module's error type (no swift-crypto, no BatonCore).
    protocol="$root/Sources/BatonProtocol"
    sources=("$protocol/BatonProtocolError.swift" "$protocol/Account/PairingBeacon.swift"
        "$protocol/Account/PairingBeaconSightings.swift" "$root/Fuzz/PairingBeaconFuzzer.swift")
    ;;
search-query)
    work="$root/Fuzz/.work/search-query"
    seeds="$root/Fuzz/corpus-search-query"
    # The query builder and the marked-text reader, and the two value types they name; none of these imports GRDB.
    search="$root/Sources/BatonSearch"
    sources=("$search/SearchQuery.swift" "$search/SearchResult.swift" "$search/SearchEntry.swift" "$search/TextMarker.swift"
        "$root/Fuzz/SearchQueryFuzzer.swift")
    ;;
association-cache)
    work="$root/Fuzz/.work/association-cache"
    seeds="$root/Fuzz/corpus-association-cache"
    # The record decoder, its error, and the association readers it checks the stored JSON with.
    registry="$root/Sources/BatonRegistry"
    sources=("${core[@]}" "$registry/BatonRegistryError.swift" "$registry/Bundles/AssociatedDomain.swift"
        "$registry/Associations/AppSiteAssociation.swift" "$registry/Associations/AppSiteAssociation+Matching.swift"
        "$registry/Associations/JSONTree.swift" "$registry/Associations/URLPattern.swift"
        "$root/Sources/BatonAgent/Associations/AssociationFetchError.swift" "$work/AssociationRecord.swift"
        "$root/Fuzz/AssociationCacheFuzzer.swift")
    # One module here: the record's `import BatonRegistry` names a module that does not exist in this build.
    mkdir -p "$work"
    sed '/^import BatonRegistry$/d' "$root/Sources/BatonAgent/Associations/AssociationRecord.swift" > "$work/AssociationRecord.swift"
    ;;
frames)
    work="$root/Fuzz/.work/frames"
    seeds="$root/Fuzz/corpus-frames"
    ;;
search-index)
    work="$root/Fuzz/.work/search-index"
    seeds="$root/Fuzz/corpus-search-index"
    ;;
*)
    echo "unknown fuzz target $target: plist, messages, associations, association-cache, browser, search-query, search-index, syncthing, beacon or frames" >&2
    exit 64
    ;;
esac
mkdir -p "$work/corpus" "$work/crashes"

echo "building the $target fuzzer (-sanitize=fuzzer,address)..."
max_len=65536
[ "$target" = association-cache ] && max_len=270000
if [ "$target" = frames ]; then
    # The frame decoder is NIO's ByteToMessageDecoder, so SwiftPM builds this one: the package's frame-fuzzer target,
    # which exists only with BATON_FUZZ_FRAMES set (Package.swift), in a scratch folder of its own so the ordinary
    # build is left as it is. Inputs may hold a whole data frame of 256 KiB.
    # SwiftPM 6.3 fails a rebuild there with "unknown build description" when its cached build plan is kept; the
    # plan is cheap to make again (the compiled files stay).
    rm -f "$work"/build/*/release/description.json "$work"/build/*/release/plugin-tools-description.json
    # --sanitize=fuzzer makes SwiftPM link libFuzzer's main instead of the target's own; the sanitizers then go to
    # swiftc once more as one flag, which comes last and wins: two --sanitize options become two -sanitize flags in
    # an order that changes from run to run, and swiftc keeps only the last, so coverage came and went.
    if ! (cd "$root" && BATON_FUZZ_FRAMES=1 swift build -c release --product frame-fuzzer \
        --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address \
        --scratch-path "$work/build" > "$work/build.log" 2>&1); then
        tail -n 30 "$work/build.log" >&2
        echo "the frames fuzzer did not build: see $work/build.log" >&2
        exit 1
    fi
    cp "$work/build/release/frame-fuzzer" "$work/$target-fuzzer"
    max_len=270000
elif [ "$target" = search-index ]; then
    # Whole index files (the seeds are real ones of 52 KiB), opened, searched and written through GRDB: SwiftPM builds
    # the package's search-index-fuzzer target, as for frames above.
    rm -f "$work"/build/*/release/description.json "$work"/build/*/release/plugin-tools-description.json
    if ! (cd "$root" && BATON_FUZZ_SEARCH_INDEX=1 swift build -c release --product search-index-fuzzer \
        --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address \
        --scratch-path "$work/build" > "$work/build.log" 2>&1); then
        tail -n 30 "$work/build.log" >&2
        echo "the search-index fuzzer did not build: see $work/build.log" >&2
        exit 1
    fi
    cp "$work/build/release/search-index-fuzzer" "$work/$target-fuzzer"
    max_len=65536
else
    # One module (the BatonProtocol files' `import BatonCore` is then ignored, with a warning: warnings are off here;
    # the package build reports them).
    swiftc -sanitize=fuzzer,address -parse-as-library -O -suppress-warnings -module-name BatonCore -package-name Baton "${sources[@]}" \
        -o "$work/$target-fuzzer" 2> >(grep -v "Cannot export local symbol" >&2)
fi

echo "fuzzing for ${seconds}s (2 GiB memory cap, 5 s per input)..."
# Swift's own backtracer would run inside the sanitizer and report noise; libFuzzer reports the trap itself.
set +e
SWIFT_BACKTRACE=enable=no "$work/$target-fuzzer" "$work/corpus" "$seeds" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -max_len="$max_len" \
    -artifact_prefix="$work/crashes/" -print_final_stats=1 > "$work/last-run.log" 2>&1
status=$?
set -e
grep -E "Done|ERROR|SUMMARY|Fatal|stat::" "$work/last-run.log" || true
if [ "$status" -ne 0 ]; then
    echo "fuzzer stopped with status $status: see $work/last-run.log and $work/crashes/" >&2
    exit "$status"
fi
echo "no crash in ${seconds}s; corpus now $(ls "$work/corpus" | wc -l) inputs"
