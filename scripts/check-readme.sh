#!/usr/bin/env bash
# Runs every command in README.md's ```sh blocks, as written, from the package root; fails on the first that fails.
#
# Skipped, and why: `swift test` (CI runs it right after this script) and `scripts/fuzz*.sh` (coverage-guided
# fuzzing is non-deterministic; CI runs the deterministic garbage-input test instead), and lines that begin with a
# bare `baton ` (typed on two real machines with a browser: BrowserCLITests runs them instead, with a real Chromium),
# and "Use Baton on your machines": `scripts/install.sh` (it would install into this user's home; InstallTests runs it
# into temporary folders) and the installed Notes under `~/` (NotesCLITests and SyncthingNotesTests run it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# The README's examples write here; start clean so a second run behaves like the first.
rm -rf /tmp/baton-laptop /tmp/baton-desktop /tmp/ShopSnap-Info.bplist

script="$(mktemp)"
trap 'rm -f "$script"; jobs -p | xargs -r kill 2>/dev/null || true' EXIT
{
    echo 'set -euo pipefail'
    awk '/^```sh$/ { inside = 1; next } /^```$/ { inside = 0; next } inside { print }' README.md \
        | grep -v -E '^swift test( |$)' | grep -v -E '^scripts/fuzz' | grep -v -E '^baton ' \
        | grep -v -E '^scripts/install\.sh' | grep -v -E '^~/'
    echo 'wait'
} > "$script"

echo "running $(grep -c -v -E '^(set|wait)' "$script") README commands"
bash -x "$script"
echo "README commands: all passed"
