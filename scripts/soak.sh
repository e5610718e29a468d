#!/usr/bin/env bash
# The soak test of docs/RELIABILITY.md (issue 10): two paired agents (sync retries after 0.2 s), an app making activities
# current and the other device continuing each one, a datagram flood at both advert ports and connection churn on
# every port, for --minutes (default 10). Samples descriptors, TCP sockets and resident memory (every 10 s, every
# second in a 1-minute run) and fails when descriptors or sockets grow, when memory grows with the continuations after
# the warm-up (over --max-slope KiB per 1,000; issue 25 item 0), when an agent restarts, or when a continuation fails
# without a typed reason.
#
#   bash scripts/soak.sh                      # 10 minutes, debug build
#   bash scripts/soak.sh --minutes 1          # the short version CI runs
#   bash scripts/soak.sh --release --json /tmp/soak.json
set -euo pipefail
cd "$(dirname "$0")/.."

command -v openssl >/dev/null || { echo "soak: openssl is needed (it converts the device key for the TLS churn)" >&2; exit 2; }
source scripts/lib/python-script.sh
run_python_script soak "$@"
