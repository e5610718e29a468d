#!/usr/bin/env bash
# Load on one agent (issue 25 item 10, docs/RELIABILITY.md), on loopback: 500 advertisers of another account at 10
# adverts a second each (under 5 % of a core, memory flat), 50 devices of the same account advertising to one agent,
# and 1,000 continuations in a row (all continued; descriptors and memory flat). Release builds give the figures
# that count; debug builds are several times slower per datagram.
#
#   bash scripts/load.sh --release                      # every scenario (about 8 minutes)
#   bash scripts/load.sh --only foreign --seconds 20
#   bash scripts/load.sh --release --json /tmp/load.json
set -euo pipefail
cd "$(dirname "$0")/.."

configuration=debug
arguments=()
while [ $# -gt 0 ]; do
    case "$1" in
        --release) configuration=release ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; python3 scripts/load.py --help | sed -n '/^options:/,$p'; exit 0 ;;
        *) arguments+=("$1") ;;
    esac
    shift
done

command -v python3 >/dev/null || { echo "load: python3 is needed" >&2; exit 2; }
swift build -c "$configuration" --product baton >/dev/null
swift build -c "$configuration" --product shopsnap >/dev/null
exec python3 scripts/load.py --bin ".build/$configuration" "${arguments[@]}"
