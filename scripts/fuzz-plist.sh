#!/usr/bin/env bash
# Fuzz the property-list codecs and the payload decoder: `scripts/fuzz.sh plist`, kept under its old name.
#
#   scripts/fuzz-plist.sh [SECONDS]     default 60; run from anywhere
exec "$(dirname "$0")/fuzz.sh" plist "$@"
