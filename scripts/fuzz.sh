#!/usr/bin/env bash
# Fuzz one of Baton's decoders with libFuzzer and AddressSanitizer, for a bounded time.
#
#   scripts/fuzz.sh plist [SECONDS]       the property-list codecs and the payload decoder (Fuzz/PlistFuzzer.swift)
#   scripts/fuzz.sh messages [SECONDS]    the account, session and IPC message decoders (Fuzz/MessageFuzzer.swift)
#   scripts/fuzz.sh associations [SECONDS]  apple-app-site-association and assetlinks.json (Fuzz/AssociationFuzzer.swift)
#
# SECONDS defaults to 60; run from anywhere. Builds the target's sources into one instrumented binary, starts from
# its committed seed corpus, keeps what it learns in Fuzz/.work/ (ignored by git), and leaves any crashing input in
# the crashes/ folder there. Exits non-zero when the fuzzer found a crash, a leak or a slow input (> 5 s).
set -euo pipefail
target="${1:?usage: scripts/fuzz.sh plist|messages|associations [SECONDS]}"
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
        "$protocol/Session/SessionMessage.swift" "$protocol/Handoff/ContinuationFailure.swift" "$protocol/IPC/IPCMessage.swift" "$protocol/Account/AccountMessage.swift"
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
*)
    echo "unknown fuzz target $target: plist, messages or associations" >&2
    exit 64
    ;;
esac
mkdir -p "$work/corpus" "$work/crashes"

echo "building the $target fuzzer (-sanitize=fuzzer,address)..."
# One module (the BatonProtocol files' `import BatonCore` is then ignored, with a warning: warnings are off here;
# the package build reports them).
swiftc -sanitize=fuzzer,address -parse-as-library -O -suppress-warnings -module-name BatonCore -package-name Baton "${sources[@]}" \
    -o "$work/$target-fuzzer" 2> >(grep -v "Cannot export local symbol" >&2)

echo "fuzzing for ${seconds}s (2 GiB memory cap, 5 s per input)..."
# Swift's own backtracer would run inside the sanitizer and report noise; libFuzzer reports the trap itself.
set +e
SWIFT_BACKTRACE=enable=no "$work/$target-fuzzer" "$work/corpus" "$seeds" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -max_len=65536 \
    -artifact_prefix="$work/crashes/" -print_final_stats=1 > "$work/last-run.log" 2>&1
status=$?
set -e
grep -E "Done|ERROR|SUMMARY|Fatal|stat::" "$work/last-run.log" || true
if [ "$status" -ne 0 ]; then
    echo "fuzzer stopped with status $status: see $work/last-run.log and $work/crashes/" >&2
    exit "$status"
fi
echo "no crash in ${seconds}s; corpus now $(ls "$work/corpus" | wc -l) inputs"
