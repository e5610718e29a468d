#!/usr/bin/env bash
# Fuzz the account, session and IPC message decoders: `scripts/fuzz.sh messages`.
#
#   scripts/fuzz-messages.sh [SECONDS]  default 60; run from anywhere
exec "$(dirname "$0")/fuzz.sh" messages "$@"
