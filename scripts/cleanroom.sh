#!/usr/bin/env bash
# The fresh-machine path, for real (issue 24): a Debian 12 root made with debootstrap holding only the packages
# swift.org documents for the toolchain, with the toolchain (/opt/swift) and the Swift package mirror
# (/opt/swift-packages) bind-mounted read-only; a fresh `git clone` of the commit under test runs the README's
# `swift run baton demo` inside it.
#
#   scripts/cleanroom.sh [demo | test [--require-all]] [--rev REV] [--cache DIR] [--if-changed] [--keep]
#
#   demo            (default) build and run `swift run baton demo`; prints the demo's handoff lines and the times
#   test            run `swift test` instead (tests needing programs the root lacks skip, saying why);
#                   --require-all sets BATON_TEST_REQUIRE_ALL=1, under which such a skip is a failure
#   --rev REV       the commit to clone (default: HEAD of this clone; uncommitted changes are not tested)
#   --cache DIR     where the root is kept (default /var/cache/baton-cleanroom, or $BATON_CLEANROOM_CACHE); made
#                   again when missing, half made, or made from another package list or mirror
#   --if-changed    run only when the commit changed Package.swift, .ci/run, scripts/cleanroom.sh,
#                   scripts/lib/debian-root.sh or a C target (Sources/C*/) since its parent (or has no parent
#                   here); says why it skips
#   --keep          keep the run's folder (the clone and its .build) instead of removing it
#   --reuse DIR     use a run folder kept before (its clone and .build: `test` after `demo` builds only the
#                   tests); kept afterwards too
#
# Needs root, debootstrap and the network to the Debian mirror apt uses here (the first time). Fails, non-zero and
# saying why, when anything fails, including making the root: it never passes without running the demo.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
clone="$(cd "$here/.." && pwd)"

mode=demo
rev=HEAD
cache="${BATON_CLEANROOM_CACHE:-/var/cache/baton-cleanroom}"
if_changed=0
require_all=0
keep=0
reuse=""
while [ $# -gt 0 ]; do
    case "$1" in
    demo | test) mode="$1"; shift ;;
    --require-all) require_all=1; shift ;;
    --rev) rev="${2:?--rev needs a commit}"; shift 2 ;;
    --cache) cache="${2:?--cache needs a folder}"; shift 2 ;;
    --if-changed) if_changed=1; shift ;;
    --keep) keep=1; shift ;;
    --reuse) reuse="${2:?--reuse needs a run folder}"; keep=1; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "cleanroom.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

# shellcheck source=lib/debian-root.sh
. "$here/lib/debian-root.sh"

# The packages swift.org documents for Swift on Debian 12, and nothing else. libstdc++-12-dev is on that list too
# (swiftly's debian12 list has it): without it the first C++ file fails, BoringSSL's `#include <memory>` in
# swift-nio-ssl and swift-crypto (found by this script, issue 24). zip and unzip, also listed, are for swiftly itself.
toolchain_packages=(binutils-gold gcc git libcurl4-openssl-dev libedit-dev libicu-dev libncurses-dev libpython3-dev
    libsqlite3-dev libstdc++-12-dev libxml2-dev pkg-config tzdata uuid-dev)
# What decides whether a fresh machine can build: the package manifest (dependencies, system libraries), CI's own
# script, this script and its root, and the C targets (a new #include can need a -dev package).
watched=(Package.swift .ci/run scripts/cleanroom.sh scripts/lib/debian-root.sh ':(glob)Sources/C*/**')

commit="$(git -C "$clone" rev-parse --verify "$rev^{commit}")" || die "$rev is not a commit of $clone"

if [ "$if_changed" = 1 ]; then
    if git -C "$clone" rev-parse --verify -q "$commit~1" >/dev/null; then
        changed="$(git -C "$clone" diff --name-only "$commit~1" "$commit" -- "${watched[@]}")"
        if [ -z "$changed" ]; then
            echo "cleanroom: skipped: ${commit:0:12} changes none of ${watched[*]} since its parent" \
                "(run scripts/cleanroom.sh without --if-changed to run it anyway)"
            exit 0
        fi
        echo "cleanroom: running: ${commit:0:12} changes $(echo "$changed" | tr '\n' ' ')"
    else
        echo "cleanroom: running: ${commit:0:12} has no parent here (a shallow clone?), so nothing says it can be skipped"
    fi
fi

[ -x /opt/swift/usr/bin/swift ] || die "no toolchain at /opt/swift (/opt/swift/usr/bin/swift is missing)"
[ -d /opt/swift-packages ] || die "no Swift package mirror at /opt/swift-packages"
command -v chroot >/dev/null 2>&1 || [ -x /usr/sbin/chroot ] || die "chroot is missing (coreutils)"

total_started=$(date +%s)
root_started=$(date +%s)
root="$(root_make toolchain-root "${toolchain_packages[@]}")" || die "could not make the root"
root_seconds=$(( $(date +%s) - root_started ))

# The run's own folder, on disk beside the root (a debug build is a few GB: too much for a tmpfs). It is the root's
# /tmp and HOME, so the cached root itself is left as it was.
if [ -n "$reuse" ]; then
    [ -d "$reuse/baton/.git" ] || die "$reuse holds no clone (baton/.git) to reuse"
    run="$(cd "$reuse" && pwd)"
else
    run="$(mktemp -d "$cache/run.XXXXXX")"
fi
finish() {
    local status=$?
    root_cleanup
    if [ "$keep" = 1 ]; then echo "cleanroom: kept $run"; else rm -rf --one-file-system "$run"; fi
    [ "$status" = 0 ] || echo "cleanroom: FAILED (exit $status)" >&2
}
trap finish EXIT
trap 'exit 130' INT TERM

root_mount "$root"
root_bind /opt/swift "$root/opt/swift" ro
root_bind /opt/swift-packages "$root/opt/swift-packages" ro
root_bind "$clone" "$root/mnt/origin" ro
root_bind "$run" "$root/tmp"
chmod 1777 "$run"
# The tests read ../shared beside the clone (the real-world files), as CI has it: the same, read-only.
if [ -d "$clone/../shared" ]; then root_bind "$(cd "$clone/../shared" && pwd)" "$root/tmp/shared" ro; fi

# The git configuration that makes github.com URLs read from the mirror, and nothing else of this machine's
# (no credential helpers, no user name).
mkdir -p "$run/home"
{
    git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true
    git config --global --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true
} | while read -r key value; do
    git config --file "$run/home/.gitconfig" --add "$key" "$value"
done
git config --file "$run/home/.gitconfig" --add safe.directory '*'
grep -qi insteadof "$run/home/.gitconfig" \
    || die "found no url.*.insteadOf in this machine's git configuration: the root could not read the package mirror"

case "$mode" in
demo) inside='swift build --product baton >/tmp/build.log 2>&1 || { tail -n 40 /tmp/build.log; exit 3; }
         echo "cleanroom-mark build $(date +%s)"
         swift run baton demo' ;;
test) inside='swift build --build-tests >/tmp/build.log 2>&1 || { tail -n 40 /tmp/build.log; exit 3; }
         echo "cleanroom-mark build $(date +%s)"
         swift test --skip-build' ;;
esac

echo "cleanroom: $mode of ${commit:0:12} in $root (root ready in ${root_seconds} s)"
env_args=(HOME=/tmp/home TMPDIR=/tmp LANG=C.UTF-8 PATH=/opt/swift/usr/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin)
[ "$require_all" = 1 ] && env_args+=(BATON_TEST_REQUIRE_ALL=1)
started=$(date +%s)
set +e
chroot "$root" /usr/bin/env -i "${env_args[@]}" timeout 7200 bash -c "set -u
    echo \"cleanroom-mark start \$(date +%s)\"
    { [ -d /tmp/baton/.git ] || git clone -q /mnt/origin /tmp/baton; } && cd /tmp/baton \
        && git fetch -q /mnt/origin && git checkout -q $commit || exit 2
    echo \"cleanroom-mark cloned \$(date +%s)\"
    $inside" > "$run/out.log" 2>&1
status=$?
set -e
ended=$(date +%s)

mark() { awk -v m="$1" '$1 == "cleanroom-mark" && $2 == m { print $3 }' "$run/out.log"; }
if [ "$mode" = demo ]; then
    grep -v '^cleanroom-mark ' "$run/out.log"
else
    # The test run's failures and skips, then its end.
    grep -E '✘|skipped' "$run/out.log" | grep -v '^cleanroom-mark ' | cut -c1-240 || true
    grep -v '^cleanroom-mark ' "$run/out.log" | tail -n 5
fi
cloned="$(mark cloned)"; built="$(mark build)"
echo
echo "cleanroom: root $root_seconds s (debootstrap and apt-get when made, 0-1 s when cached)"
[ -n "$cloned" ] && [ -n "$built" ] && echo "cleanroom: clone+resolve+build $(( built - cloned )) s"
[ -n "$built" ] && echo "cleanroom: $mode $(( ended - built )) s"
echo "cleanroom: in the root $(( ended - started )) s, all told $(( $(date +%s) - total_started )) s"

case "$status" in
0) ;;
2) die "the fresh clone of ${commit:0:12} failed inside the root" ;;
3) die "the build failed inside the root (its last lines are above): the fresh-machine path is broken" ;;
124) die "timed out after 2 h inside the root" ;;
*) die "$mode failed inside the root (exit $status; its output is above)" ;;
esac
if [ "$mode" = demo ] && ! grep -q 'Baton demo: ShopSnap' "$run/out.log"; then
    die "swift run baton demo exited 0 but did not print its banner; not counting that as a pass"
fi
echo "cleanroom: PASSED ($mode of ${commit:0:12} on a Debian 12 root with only the toolchain's packages)"
