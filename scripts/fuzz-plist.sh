#!/usr/bin/env bash
# Fuzz the property-list codecs and the payload decoder with libFuzzer and AddressSanitizer, for a bounded time.
#
#   scripts/fuzz-plist.sh [SECONDS]     default 60; run from anywhere
#
# Builds BatonCore's sources plus Fuzz/PlistFuzzer.swift into one instrumented binary, starts from the committed
# seed corpus (Fuzz/corpus), keeps what it learns in Fuzz/.work/corpus (ignored by git), and leaves any crashing
# input in Fuzz/.work/crashes/. Exits non-zero when the fuzzer found a crash, a leak or a slow input (> 5 s).
set -euo pipefail
seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/Fuzz/.work"
mkdir -p "$work/corpus" "$work/crashes"

echo "building the fuzzer (BatonCore + Fuzz/PlistFuzzer.swift, -sanitize=fuzzer,address)..."
swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name BatonCore \
    "$root"/Sources/BatonCore/*.swift "$root"/Sources/BatonCore/*/*.swift "$root/Fuzz/PlistFuzzer.swift" \
    -o "$work/plist-fuzzer" 2> >(grep -v "Cannot export local symbol" >&2)

echo "fuzzing for ${seconds}s (2 GiB memory cap, 5 s per input)..."
# Swift's own backtracer would run inside the sanitizer and report noise; libFuzzer reports the trap itself.
set +e
SWIFT_BACKTRACE=enable=no "$work/plist-fuzzer" "$work/corpus" "$root/Fuzz/corpus" \
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
