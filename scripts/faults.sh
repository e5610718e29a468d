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

source scripts/lib/python-script.sh
run_python_script faults "$@"
