#!/usr/bin/env bash
# Installs what every test of `swift test` needs beyond the Swift toolchain (issue 24), and what CI's clean-room
# check and the packaging scripts need, with apt-get: only the
# packages that are missing, one `apt-get update`, nothing asked. Running it again does nothing.
#
#   scripts/test-deps.sh           install what is missing (as root, or through sudo)
#   scripts/test-deps.sh --list    print each package, what it enables and whether it is there; install nothing
#   scripts/test-deps.sh --check   exit 1, naming them, when any is missing; install nothing
#
# Without these, `swift test` still passes: a test that needs something missing is reported by Swift Testing as
# skipped, with the package that enables it ("needs nginx (apt-get install nginx-light)"). With
# BATON_TEST_REQUIRE_ALL=1 (what CI sets, after running this) such a test fails instead, so nothing goes untested.
# The same list, seen from the tests: Tests/Support/Requirement+Catalog.swift. Root (network namespaces, files made
# as another user) is no package: run the tests as root for those.
set -euo pipefail

# A program on PATH or in the sbin folders (Debian puts nginx and ip there, outside a person's PATH).
have() {
    command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ] || [ -x "/usr/local/sbin/$1" ]
}

# package | how to tell it is there | what it enables
packages=(
    "python3|have python3 && [ -x /usr/bin/python3 ]|Python's plistlib interop (PythonInteropTests), the test servers and clients written in Python (browser pages, the impostor, idle connections, SQLite's integrity check); CI's soak and idle runs. The toolchain's libpython3-dev is the library, not the interpreter"
    "openssl|have openssl|signed association files (SignedAssociationTests, baton aasa check), a stranger's TLS handshake (AccountNetworkCLITests), the HTTPS test server's certificates"
    "nginx-light|have nginx|the HTTPS server of the association-file tests (AssociationFetchTests, WebToAppTests, AasaCLITests; scripts/aasa-test-server.sh)"
    "curl|have curl|Chromium's DevTools endpoints (RealBrowserTests), Syncthing's REST API (SyncthingNotesTests)"
    "chromium|have chromium|a real Chromium with the extension (RealBrowserTests)"
    "firefox-esr|have firefox-esr|a real Firefox ESR with the extension (RealFirefoxTests)"
    "xvfb|have Xvfb && have xvfb-run|a display for Chromium where its headless mode does not load the extension (RealBrowserTests); xvfb-run's for GTK (RecentDocumentsTests, ActivitySourcesNamespaceTests); one per host for Recipes (DBusAppsNamespaceTests)"
    "dbus-daemon|have dbus-daemon|a session bus of the test's own for desktop notifications and media players, one per host in the two-host show (NotifyCLITests, MediaSourceTests, ActivitySourcesNamespaceTests, DBusAppTests, DBusAppsNamespaceTests)"
    "python3-dbus|/usr/bin/python3 -c 'import dbus' >/dev/null 2>&1|the stand-in notification server and media player on that bus, and the apps on the agent's D-Bus interface (NotifyCLITests, MediaSourceTests, DBusAppTests, DBusAppsNamespaceTests)"
    "libsystemd0|/usr/bin/python3 -c 'import ctypes; ctypes.CDLL(\"libsystemd.so.0\")' >/dev/null 2>&1|sd-bus, which the agent loads at run time: the sd-bus message bridge's tests and the agent's D-Bus interface (DBusMessageBridgeTests, DBusAppTests, DBusAppsNamespaceTests)"
    "python3-gi|/usr/bin/python3 -c 'from gi.repository import GLib' >/dev/null 2>&1|its GLib main loop (NotifyCLITests, DBusAppTests, DBusAppsNamespaceTests)"
    "gir1.2-gtk-3.0|/usr/bin/python3 -c \"import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk\" >/dev/null 2>&1|GTK's RecentManager writing recently-used.xbel (RecentDocumentsTests, ActivitySourcesNamespaceTests)"
    "gir1.2-gtk-4.0|/usr/bin/python3 -c \"import gi; gi.require_version('Gtk', '4.0'); from gi.repository import Gtk\" >/dev/null 2>&1|GTK 4 for Recipes, the example app in Python (RecipesAppTests, DBusAppsNamespaceTests)"
    "imagemagick|have import|a screenshot of the Xvfb display with ImageMagick's import (RecipesAppTests, DBusAppsNamespaceTests)"
    "x11-utils|have xwininfo|the windows on the Xvfb display, by title (RecipesAppTests, DBusAppsNamespaceTests)"
    "xauth|have xauth|xvfb-run's display for GTK (RecentDocumentsTests, ActivitySourcesNamespaceTests)"
    "mpv|have mpv|a real media player on a session bus of the test's own (MediaSourceTests, ActivitySourcesNamespaceTests)"
    "mpv-mpris|[ -f /etc/mpv/scripts/mpris.so ]|mpv's MPRIS interface, which the agent follows (MediaSourceTests, ActivitySourcesNamespaceTests)"
    "playerctl|have playerctl|an independent witness of the players' status and position (MediaSourceTests, ActivitySourcesNamespaceTests)"
    "sox|have sox|the audio file mpv plays (MediaSourceTests, ActivitySourcesNamespaceTests)"
    "syncthing|have syncthing|real Syncthing: baton folders syncthing (FoldersCLITests), Notes across a synced folder (SyncthingNotesTests)"
    "systemd|have systemd-analyze|systemd-analyze verify of the user unit install.sh writes (InstallTests)"
    "iproute2|have ip && have bridge|multi-host LANs of network namespaces, as root (NamespaceTests, SyncthingNotesTests, ActivitySourcesNamespaceTests, DBusAppsNamespaceTests; scripts/netns.sh)"
    "procps|have sysctl|the namespaces' sysctls (scripts/netns.sh)"
    "nftables|have nft|an nft rule in a test namespace that makes adverts fail with EPERM (AdvertRecoveryNamespaceTests); packet loss and partitions (FaultScriptTests, scripts/faults.sh)"
    "faketime|have faketime|a device whose clock is 10 minutes off (FaultScriptTests, scripts/faults.sh skew)"
    "libsqlite3-dev|[ -f /usr/include/sqlite3.h ]|building: GRDB links the system SQLite (one of the toolchain's documented packages)"
    "debootstrap|have debootstrap|the clean Debian roots: CI's fresh-machine check (scripts/cleanroom.sh), the package check (scripts/package-check.sh)"
    "dpkg-dev|have dpkg-shlibdeps|the .deb's Depends, computed from the binaries (scripts/package.sh)"
    "lintian|have lintian|checking the .deb (scripts/package.sh)"
)

name() { printf '%s' "${1%%|*}"; }
test_of() { local rest="${1#*|}"; printf '%s' "${rest%%|*}"; }
enables() { local rest="${1#*|}"; printf '%s' "${rest#*|}"; }
present() { eval "$(test_of "$1")" >/dev/null 2>&1; }

missing=()
for entry in "${packages[@]}"; do
    present "$entry" || missing+=("$(name "$entry")")
done

case "${1:-}" in
    -h|--help)
        awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
        exit 0
        ;;
    --list)
        for entry in "${packages[@]}"; do
            if present "$entry"; then state=installed; else state=missing; fi
            printf '%-15s %-9s %s\n' "$(name "$entry")" "$state" "$(enables "$entry")"
        done
        exit 0
        ;;
    --check)
        if [ "${#missing[@]}" -gt 0 ]; then
            echo "test-deps: missing ${missing[*]} (scripts/test-deps.sh installs them)" >&2
            exit 1
        fi
        echo "test-deps: everything the tests need is installed"
        exit 0
        ;;
    "") ;;
    *)
        echo "test-deps: unknown option '$1' (try --help)" >&2
        exit 2
        ;;
esac

if [ "${#missing[@]}" -eq 0 ]; then
    echo "test-deps: everything the tests need is installed"
    exit 0
fi
command -v apt-get >/dev/null 2>&1 || {
    echo "test-deps: no apt-get here; install the equivalents of: ${missing[*]}" >&2
    exit 1
}
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "test-deps: run as root (or install sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "test-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
