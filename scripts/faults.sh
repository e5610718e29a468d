#!/usr/bin/env bash
# Faults between two devices in network namespaces (issue 25 item 9, docs/RELIABILITY.md): packet loss (nftables),
# latency (scripts/delay-relay.py), a partition mid-fetch, a link down and up, an agent killed during a handoff,
# clocks 10 minutes apart (faketime) and a full disk while the roster and the search index are saved. Each
# continuation must end continued or with its typed failure within its bound, and continuing must work again after.
#
#   sudo bash scripts/faults.sh                        # every scenario, 5 continuations per level (about 3 minutes)
#   sudo bash scripts/faults.sh --only loss --rounds 20
#   sudo bash scripts/faults.sh --release --json /tmp/faults.json
set -euo pipefail
cd "$(dirname "$0")/.."

configuration=debug
arguments=()
while [ $# -gt 0 ]; do
    case "$1" in
        --release) configuration=release ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; python3 scripts/faults.py --help | sed -n '/^options:/,$p'; exit 0 ;;
        *) arguments+=("$1") ;;
    esac
    shift
done

command -v python3 >/dev/null || { echo "faults: python3 is needed" >&2; exit 2; }
swift build -c "$configuration" --product baton >/dev/null
swift build -c "$configuration" --product shopsnap >/dev/null
exec python3 scripts/faults.py --bin ".build/$configuration" "${arguments[@]}"
