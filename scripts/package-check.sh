#!/usr/bin/env bash
# Installs what scripts/package.sh made into a clean Debian 12 root with no Swift (debootstrap's minbase, cached
# outside the clone), the way a person would, and uses it there (issue 24):
#
#   scripts/package-check.sh [--deb FILE] [--tarball FILE] [--cache DIR] [--keep]
#
#   --deb FILE      `apt-get install ./FILE` into a fresh copy of the root
#   --tarball FILE  `scripts/install.sh --from-tarball FILE --prefix /opt/baton` into another fresh copy
#                   (default: both, the newest of each in dist/)
#   --cache DIR     where the plain root is kept (default /var/cache/baton-cleanroom, or $BATON_CLEANROOM_CACHE)
#   --keep          keep the copies of the root
#
# In each: `baton --version`, `baton doctor` with the agent running, then a ShopSnap handoff between two devices of
# one account in that root (a "laptop" state folder and the person's own default one, "desktop"), on loopback, using
# only the installed files: the desktop's agent finds ShopSnap through XDG_DATA_DIRS (.deb) or ~/.local/share
# (tarball) and launches it to continue the laptop's list. Prints the idle RSS of the installed baton-agent.
# Needs root, debootstrap and (the first time) the Debian mirror apt uses here. Fails, saying why, on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
clone="$(cd "$here/.." && pwd)"

cache="${BATON_CLEANROOM_CACHE:-/var/cache/baton-cleanroom}"
deb=""
tarball=""
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
    --deb) deb="${2:?--deb needs a file}"; shift 2 ;;
    --tarball) tarball="${2:?--tarball needs a file}"; shift 2 ;;
    --cache) cache="${2:?--cache needs a folder}"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "package-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
# shellcheck source=lib/debian-root.sh
. "$here/lib/debian-root.sh"
if [ -z "$deb" ] && [ -z "$tarball" ]; then
    deb="$(ls -t "$clone"/dist/baton_*_amd64.deb 2>/dev/null | head -n 1)"
    tarball="$(ls -t "$clone"/dist/baton-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)"
    [ -n "$deb" ] && [ -n "$tarball" ] || die "no packages in $clone/dist: run scripts/package.sh first, or name them"
fi

started=$(date +%s)
plain="$(root_make plain-root)" || die "could not make the plain root"
echo "check: plain root ready in $(( $(date +%s) - started )) s"

copies=()
finish() {
    local status=$? copy
    root_cleanup
    for copy in ${copies[@]+"${copies[@]}"}; do
        if [ "$keep" = 1 ]; then echo "check: kept $copy"; else rm -rf --one-file-system "$copy"; fi
    done
    [ "$status" = 0 ] || echo "package-check: FAILED (exit $status)" >&2
}
trap finish EXIT
trap 'exit 130' INT TERM

# What runs inside: the same handoff for either install, given where baton is and where the apps' programs are.
cat > "$cache/handoff.sh" <<'EOF'
#!/bin/bash
# Runs inside the root: BIN (where baton is), SHOPSNAP (the installed shopsnap program).
set -euo pipefail
fail() { echo "handoff: FAILED: $*" >&2; for log in /tmp/check/*.log; do echo "--- $log"; tail -n 30 "$log"; done >&2; exit 1; }
waitfor() { # waitfor FILE TEXT SECONDS
    local i
    for ((i = 0; i < $3 * 10; i++)); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
mkdir -p /tmp/check
cd /tmp/check
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT
echo "\$ baton --version"; "$BIN/baton" --version
command -v swift >/dev/null 2>&1 && fail "this root has swift on PATH; it must not"
[ -d /opt/swift ] && fail "this root has /opt/swift; it must not"
[ -f "$HOME/.local/share/baton/identity.plist" ] || "$BIN/baton" init --name desktop >/dev/null
"$BIN/baton" init --name laptop --state /tmp/check/laptop >/dev/null
"$BIN/baton" pair --port 47931 --yes --state /tmp/check/laptop > pair.log 2>&1 &
waitfor pair.log "on port" 10 || fail "the waiting side of pair did not start"
"$BIN/baton" pair 127.0.0.1:47931 --yes > pair-desktop.log 2>&1 || fail "pairing failed: $(cat pair-desktop.log)"
wait
# The laptop uses its own state folder; the desktop is the person's default one, with the installed apps only.
"$BIN/baton" agent --port 47932 --host 127.0.0.1 --no-multicast --interval 0.5 --peer 127.0.0.1:47933 --state /tmp/check/laptop > laptop.log 2>&1 &
"$BIN/baton" agent --port 47933 --host 127.0.0.1 --no-multicast --interval 0.5 --peer 127.0.0.1:47932 > desktop.log 2>&1 &
desktop_pid=$!
waitfor laptop.log "apps connect at" 15 || fail "the laptop's agent did not start"
waitfor desktop.log "apps connect at" 15 || fail "the desktop's agent did not start"
echo "\$ baton apps list"; "$BIN/baton" apps list | tee apps.txt
grep -q com.razeware.ShopSnap apps.txt || fail "baton apps does not list the installed ShopSnap"
echo "\$ baton doctor"; "$BIN/baton" doctor || echo "(baton doctor exit $?)"
BATON_AGENT_SOCKET="$(cat /tmp/check/laptop/agent-socket)" "$SHOPSNAP" list Milk Eggs > shopsnap-laptop.log 2>&1 &
for ((i = 0; i < 100; i++)); do "$BIN/baton" nearby > nearby.txt 2>&1 && grep -q "Shopping list (2 items)" nearby.txt && break; sleep 0.1; done
grep -q "Shopping list (2 items)" nearby.txt || fail "the desktop never saw the laptop's list: $(cat nearby.txt)"
echo "\$ baton nearby"; cat nearby.txt
echo "\$ baton continue laptop"
"$BIN/baton" continue laptop | tee continue.txt
grep -q "continued in com.razeware.ShopSnap" continue.txt || fail "baton continue did not continue in ShopSnap"
waitfor desktop.log "shopsnap: continued list: Milk, Eggs" 10 || fail "the launched ShopSnap did not restore the list"
grep "shopsnap: continued list" desktop.log
waitfor shopsnap-laptop.log "was continued on another device" 10 || fail "the laptop's ShopSnap never heard it was continued (A8)"
# The agent's own pid: `baton agent` replaced itself with baton-agent (execv, same pid).
agent_exe="$(readlink /proc/$desktop_pid/exe)"
sleep 10
echo "handoff: OK; the desktop's agent is $agent_exe, idle RSS $(awk '/^VmRSS/ { print $2, $3 }' /proc/$desktop_pid/status) after 10 s idle"
EOF
chmod 755 "$cache/handoff.sh"

# check NAME INSTALL-COMMANDS BIN SHOPSNAP FILE: a fresh copy of the plain root, FILE copied in, installed, used.
check() {
    local name="$1" install="$2" bin="$3" shopsnap="$4" file="$5" copy
    copy="$(mktemp -d "$cache/check-$name.XXXXXX")"
    copies+=("$copy")
    cp -a "$plain/." "$copy/"
    cp "$file" "$cache/handoff.sh" "$copy/tmp/"
    [ "$name" = tarball ] && cp "$clone/scripts/install.sh" "$copy/tmp/install.sh"
    cp /etc/resolv.conf "$copy/etc/resolv.conf" 2>/dev/null || true
    root_mount "$copy"
    local env_args=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin DEBIAN_FRONTEND=noninteractive)
    echo "check: $name: $install"
    chroot "$copy" /usr/bin/env -i "${env_args[@]}" bash -c "cd /tmp && $install" > "$copy/tmp/install.log" 2>&1 \
        || { tail -n 30 "$copy/tmp/install.log"; die "$name: the install failed in the root"; }
    tail -n 8 "$copy/tmp/install.log"
    if [ "$name" = deb ]; then
        # postinst enabled the user unit for every user, as dh_installsystemduser does.
        [ -L "$copy/etc/systemd/user/default.target.wants/baton-agent.service" ] \
            || die "deb: the user unit is not enabled (no /etc/systemd/user/default.target.wants/baton-agent.service)"
        echo "check: deb: baton-agent.service enabled for every user ($(readlink "$copy/etc/systemd/user/default.target.wants/baton-agent.service"))"
    fi
    chroot "$copy" /usr/bin/env -i "${env_args[@]}" BIN="$bin" SHOPSNAP="$shopsnap" timeout 300 /tmp/handoff.sh \
        || die "$name: the installed Baton did not hand off ShopSnap in the root (output above)"
    root_cleanup
}

if [ -n "$deb" ]; then
    check deb "apt-get update -qq && apt-get install -y ./$(basename "$deb")" /usr/bin /usr/lib/baton/shopsnap "$deb"
fi
if [ -n "$tarball" ]; then
    # What the .deb's Depends would bring and minbase lacks: the system SQLite and the CA certificates (TLS).
    check tarball "apt-get update -qq && apt-get install -y -qq libsqlite3-0 ca-certificates && bash /tmp/install.sh --from-tarball /tmp/$(basename "$tarball") --prefix /opt/baton --name desktop --no-enable" \
        /opt/baton/bin /root/.local/share/baton/apps/ShopSnap.app/shopsnap "$tarball"
fi
echo "package-check: PASSED in $(( $(date +%s) - started )) s"
