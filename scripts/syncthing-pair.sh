#!/usr/bin/env bash
# Two real Syncthing instances sharing one folder, set up without a person (issue 16: Notes across synced folders).
#
#   scripts/syncthing-pair.sh setup DIR FOLDER_ID PATH1 PATH2 [ADDRESS1 ADDRESS2]
#       Makes Syncthing homes DIR/h1 and DIR/h2: keys and device ids from `syncthing generate`, then a config.xml
#       written whole. Each knows the other device at its explicit address (default 10.77.0.1:22000 and
#       10.77.0.2:22000, the hosts of scripts/netns.sh) and listens on its own address's port; both share folder
#       FOLDER_ID, at PATH1 on 1 and PATH2 on 2 (different paths, the point of it); global announce, local announce,
#       relays, NAT, usage reporting, crash reporting and upgrades are off; the GUI and REST API listen on
#       127.0.0.1:8384 for 1 and :8385 for 2 (so two instances can share one network too) with the API key in
#       DIR/hK/apikey; the folder has the file watcher (1 s delay) and a 60 s rescan. Prints both device ids.
#   scripts/syncthing-pair.sh serve DIR K          runs instance K in the foreground (exec; run it inside host K)
#   scripts/syncthing-pair.sh wait-up DIR K [SECONDS]
#                                                  waits (default 10 s) until instance K's REST API answers (its
#                                                  listener is up by then); exit 1 on timeout
#   scripts/syncthing-pair.sh api DIR K METHOD PATH  calls instance K's REST API with curl (inside host K), prints
#                                                  the answer: e.g. `api DIR 1 POST '/rest/db/scan?folder=notes'`
#   scripts/syncthing-pair.sh wait-connected DIR K [SECONDS]
#                                                  waits (default 30 s) until instance K is connected to the other;
#                                                  prints the seconds it took; exit 1 on timeout
#
# Syncthing v1.19 (Debian's `syncthing`) and curl; nothing else. Not a daemon manager: whoever runs `serve` stops it.
# Start one instance, `wait-up` for it, then the other: each dials the other once at start, and two that start
# together can both dial before either listens, then wait far longer than reconnectionIntervalS to try again (seen
# 1 run in 5: not connected after 14 s). Started in turn they connect at once (about 0.6 s each to start).
set -euo pipefail

die() { echo "syncthing-pair.sh: $*" >&2; exit 1; }
usage() {
    die "usage: $0 setup DIR FOLDER_ID PATH1 PATH2 [ADDRESS1 ADDRESS2] | serve DIR K | wait-up DIR K [SECONDS]
    | api DIR K METHOD PATH | wait-connected DIR K [SECONDS]"
}
command -v syncthing >/dev/null || die "syncthing is not installed (apt-get install syncthing)"

# Text for an XML attribute or element.
xml() {
    local text="$1"
    text="${text//&/&amp;}"; text="${text//</&lt;}"; text="${text//>/&gt;}"; text="${text//\"/&quot;}"
    printf '%s' "$text"
}

check_k() { [[ "${1:-}" == 1 || "${1:-}" == 2 ]] || die "K must be 1 or 2, got '${1:-}'"; }

# config K: the whole config.xml of instance K.
config() {
    local k="$1" other=$((3 - $1))
    local me="${ids[$k]}" peer="${ids[$other]}" path="${paths[$k]}" port="${addresses[$k]##*:}"
    cat <<EOF
<configuration version="36">
    <folder id="$(xml "$folder")" label="$(xml "$folder")" path="$(xml "$path")" type="sendreceive" rescanIntervalS="60" fsWatcherEnabled="true" fsWatcherDelayS="1" ignorePerms="false" autoNormalize="true">
        <filesystemType>basic</filesystemType>
        <device id="$me" introducedBy=""></device>
        <device id="$peer" introducedBy=""></device>
        <minDiskFree unit="%">0</minDiskFree>
    </folder>
    <device id="$me" name="h$k" compression="metadata" introducer="false">
        <address>dynamic</address>
    </device>
    <device id="$peer" name="h$other" compression="metadata" introducer="false">
        <address>tcp://$(xml "${addresses[$other]}")</address>
    </device>
    <gui enabled="true" tls="false" debugging="false">
        <address>127.0.0.1:$((8383 + k))</address>
        <apikey>${keys[$k]}</apikey>
        <theme>default</theme>
    </gui>
    <options>
        <listenAddress>tcp://0.0.0.0:$port</listenAddress>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <urAccepted>-1</urAccepted>
        <urSeen>3</urSeen>
        <crashReportingEnabled>false</crashReportingEnabled>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <startBrowser>false</startBrowser>
        <reconnectionIntervalS>1</reconnectionIntervalS>
        <minHomeDiskFree unit="%">0</minHomeDiskFree>
        <setLowPriority>false</setLowPriority>
    </options>
</configuration>
EOF
}

cmd_setup() {
    [[ $# -eq 4 || $# -eq 6 ]] || usage
    local dir="$1" k
    folder="$2"
    declare -gA ids paths addresses keys
    paths=([1]="$3" [2]="$4")
    addresses=([1]="${5:-10.77.0.1:22000}" [2]="${6:-10.77.0.2:22000}")
    for k in 1 2; do
        [[ "${paths[$k]}" == /* ]] || die "PATH$k must be absolute, got '${paths[$k]}'"
        [[ "${addresses[$k]}" =~ ^[^:]+:[0-9]+$ ]] || die "ADDRESS$k must be HOST:PORT, got '${addresses[$k]}'"
        rm -rf "$dir/h$k"
        mkdir -p "$dir/h$k" "${paths[$k]}"
        # The folder marker: without it Syncthing refuses to use the folder (it guards against an unmounted disk).
        mkdir -p "${paths[$k]}/.stfolder"
        syncthing generate --home "$dir/h$k" --no-default-folder --skip-port-probing >/dev/null 2>&1 \
            || die "syncthing generate --home $dir/h$k failed"
        ids[$k]="$(syncthing serve --home "$dir/h$k" --device-id)"
        [[ "${ids[$k]}" =~ ^[A-Z0-9-]{63}$ ]] || die "no device id for $dir/h$k: '${ids[$k]}'"
        keys[$k]="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
        printf '%s\n' "${keys[$k]}" > "$dir/h$k/apikey"
        printf '%s\n' "${ids[$k]}" > "$dir/h$k/device-id"
    done
    for k in 1 2; do config "$k" > "$dir/h$k/config.xml"; done
    echo "h1 ${ids[1]} ${paths[1]}"
    echo "h2 ${ids[2]} ${paths[2]}"
}

cmd_serve() {
    [[ $# -eq 2 ]] || usage
    check_k "$2"
    [[ -f "$1/h$2/config.xml" ]] || die "$1/h$2 is not set up (run setup first)"
    # --no-restart: one process, no monitor parent, so the caller's SIGTERM stops Syncthing itself. STHASHING names
    # the SHA-256 code instead of measuring both at every start (a second of the start-up).
    STNOUPGRADE=1 STHASHING="${STHASHING:-minio}" exec syncthing serve --home "$1/h$2" --no-browser --no-restart --no-upgrade --logflags=3
}

cmd_api() {
    [[ $# -eq 4 ]] || usage
    check_k "$2"
    curl -sS --fail --max-time 5 -X "$3" -H "X-API-Key: $(cat "$1/h$2/apikey")" "http://127.0.0.1:$((8383 + $2))$4"
}

# elapsed START: seconds since START (date +%s.%N), two decimals.
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }'; }

cmd_wait_up() {
    [[ $# -eq 2 || $# -eq 3 ]] || usage
    check_k "$2"
    local seconds="${3:-10}" start
    start=$(date +%s.%N)
    until cmd_api "$1" "$2" GET /rest/system/ping >/dev/null 2>&1; do
        awk -v e="$(elapsed "$start")" -v s="$seconds" 'BEGIN { exit !(e > s) }' && die "h$2's REST API not answering after $seconds s"
        sleep 0.05
    done
    elapsed "$start"
}

cmd_wait_connected() {
    [[ $# -eq 2 || $# -eq 3 ]] || usage
    check_k "$2"
    local seconds="${3:-30}" start
    start=$(date +%s.%N)
    # The answer lists every configured device, this one too (never connected): any true is the other.
    until cmd_api "$1" "$2" GET /rest/system/connections 2>/dev/null | grep -q '"connected": *true'; do
        awk -v e="$(elapsed "$start")" -v s="$seconds" 'BEGIN { exit !(e > s) }' && die "h$2 not connected after $seconds s"
        sleep 0.05
    done
    elapsed "$start"
}

case "${1:-}" in
    setup) shift; cmd_setup "$@" ;;
    serve) shift; cmd_serve "$@" ;;
    api) shift; cmd_api "$@" ;;
    wait-up) shift; cmd_wait_up "$@" ;;
    wait-connected) shift; cmd_wait_connected "$@" ;;
    *) usage ;;
esac
