#!/usr/bin/env bash
# Load on one agent (issue 25 item 10, docs/RELIABILITY.md), on loopback: 500 advertisers of another account at 10
# adverts a second each (under 5 % of a core, memory flat), 50 devices of the same account advertising to one agent,
# 1,000 continuations in a row (all continued; descriptors and memory flat), and 100 continuation streams at once
# through one agent (every echo checked; descriptors back once they end). Release builds give the figures that
# count; debug builds are several times slower per datagram.
#
#   bash scripts/load.sh --release                      # every scenario (about 10 minutes)
#   bash scripts/load.sh --only streams --seconds 30
#   bash scripts/load.sh --only foreign --seconds 20
#   bash scripts/load.sh --release --json /tmp/load.json
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/python-script.sh
run_python_script load "$@"
