#!/usr/bin/env bash
# Installs Baton for the current user from this clone (issue 16), or removes what it installed.
#
#   scripts/install.sh [--prefix DIR] [--name NAME] [--no-enable] [--no-build | --binaries DIR]
#   scripts/install.sh [--prefix DIR] --uninstall
#   scripts/install.sh --from-tarball baton-VERSION-linux-x86_64.tar.gz [--prefix DIR] [--name NAME] [--no-enable]
#
# Builds in release (or takes baton, baton-agent, shopsnap and notes from --binaries DIR, as tests do), then
# installs `baton` and `baton-agent` into DIR/bin (default ~/.local/bin), the example apps ShopSnap.app and Notes.app
# into $XDG_DATA_HOME/baton/apps, and the systemd user unit baton-agent.service into $XDG_CONFIG_HOME/systemd/user,
# enabled and started with `systemctl --user enable --now` unless --no-enable, or where there is no user systemd.
# Recipes, the example app in Python (issue 28 item 5), goes beside them in $XDG_DATA_HOME/baton/apps/Recipes, with
# its desktop file in $XDG_DATA_HOME/applications and its D-Bus service file in $XDG_DATA_HOME/dbus-1/services.
# A machine without an account gets one first (`baton init --name NAME`, the host name by default), so the agent has
# an identity to start with. Every file it writes is listed in $XDG_DATA_HOME/baton/installed-files; --uninstall
# removes those and nothing else: never the account (identity, roster, invites) or the search index in the same folder.
# --from-tarball installs the release tarball scripts/package.sh makes (no toolchain needed): the same, plus its
# manual pages and bash, zsh and fish completions under DIR/share (the tarball's own install.sh does this too).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

# --from-tarball FILE: unpack it and run the install.sh inside with the other options (and --binaries, which it adds).
rest=()
tarball=""
while [ $# -gt 0 ]; do
    case "$1" in
    --from-tarball) tarball="${2:?--from-tarball needs a file}"; shift 2 ;;
    *) rest+=("$1"); shift ;;
    esac
done
if [ -n "$tarball" ]; then
    [ -f "$tarball" ] || { echo "install.sh: $tarball is not a file" >&2; exit 1; }
    unpacked="$(mktemp -d)"
    trap 'rm -rf "$unpacked"' EXIT
    tar -C "$unpacked" -xzf "$tarball" || { echo "install.sh: could not unpack $tarball" >&2; exit 1; }
    inner="$(find "$unpacked" -mindepth 2 -maxdepth 2 -name install.sh | head -n 1)"
    [ -n "$inner" ] || { echo "install.sh: $tarball holds no install.sh (is it a Baton release tarball?)" >&2; exit 1; }
    # Not exec: the unpacked copy is removed when that install is done.
    status=0
    "$inner" ${rest[@]+"${rest[@]}"} || status=$?
    exit "$status"
fi
set -- ${rest[@]+"${rest[@]}"}

prefix="$HOME/.local"
enable=1
build=1
binaries=""
uninstall=0
name=""
while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) prefix="${2:?--prefix needs a folder}"; shift 2 ;;
    --name) name="${2:?--name needs a name}"; shift 2 ;;
    --no-enable) enable=0; shift ;;
    --no-build) build=0; shift ;;
    --binaries) binaries="${2:?--binaries needs a folder}"; build=0; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac

data_home="${XDG_DATA_HOME:-$HOME/.local/share}"
config_home="${XDG_CONFIG_HOME:-$HOME/.config}"
bin_dir="$prefix/bin"
apps_dir="$data_home/baton/apps"
unit_dir="$config_home/systemd/user"
recipes_dir="$apps_dir/Recipes"
desktop_dir="$data_home/applications"
services_dir="$data_home/dbus-1/services"
unit="$unit_dir/baton-agent.service"
manifest="$data_home/baton/installed-files"

user_systemd() { command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; }

if [ "$uninstall" = 1 ]; then
    if [ ! -f "$manifest" ]; then
        echo "Nothing to remove: $manifest does not exist (was Baton installed with this script?)."
        exit 0
    fi
    if user_systemd && systemctl --user is-enabled baton-agent.service >/dev/null 2>&1; then
        systemctl --user disable --now baton-agent.service || true
    fi
    # Files first, then the folders the installer made, deepest first, only if they are empty.
    while IFS= read -r path; do
        [ -n "$path" ] && [ ! -d "$path" ] && rm -f -- "$path"
    done < "$manifest"
    sort -r "$manifest" | while IFS= read -r path; do
        [ -d "$path" ] && rmdir -- "$path" 2>/dev/null || true
    done
    rm -f -- "$manifest"
    user_systemd && systemctl --user daemon-reload || true
    echo "Removed Baton from $bin_dir, $apps_dir, $desktop_dir, $services_dir and $unit_dir. Your account and search index in $data_home/baton are kept."
    exit 0
fi

if [ "$build" = 1 ]; then
    echo "Building in release (the first build takes several minutes)..."
    (cd "$root" && swift build -c release --product baton && swift build -c release --product baton-agent \
        && swift build -c release --product shopsnap && swift build -c release --product notes)
fi
release="${binaries:-$(cd "$root" && swift build -c release --show-bin-path)}"
for program in baton baton-agent shopsnap notes; do
    [ -x "$release/$program" ] || { echo "install.sh: $release/$program is missing; run without --no-build" >&2; exit 1; }
done

installed=()
put() { # put SOURCE DESTINATION MODE
    mkdir -p "$(dirname "$2")"
    install -m "$3" "$1" "$2"
    installed+=("$2")
}
put "$release/baton" "$bin_dir/baton" 755
put "$release/baton-agent" "$bin_dir/baton-agent" 755
# ShopSnap: its Info.plist and entitlements, and the executable inside the bundle (in the clone it is a symlink
# into .build).
put "$root/Examples/ShopSnap.app/Info.plist" "$apps_dir/ShopSnap.app/Info.plist" 644
put "$root/Examples/ShopSnap.app/ShopSnap.entitlements" "$apps_dir/ShopSnap.app/ShopSnap.entitlements" 644
put "$release/shopsnap" "$apps_dir/ShopSnap.app/shopsnap" 755
# Notes, the document-based example, the same way.
put "$root/Examples/Notes.app/Info.plist" "$apps_dir/Notes.app/Info.plist" 644
put "$root/Examples/Notes.app/Notes.entitlements" "$apps_dir/Notes.app/Notes.entitlements" 644
put "$release/notes" "$apps_dir/Notes.app/notes" 755
# Recipes, the Python example: the script, its helper module and recipes, then its desktop file and D-Bus service file
# naming the script where it now is (D-Bus activation and the agent's identity check want an absolute path).
put_filled() { # put_filled TEMPLATE DESTINATION: the template with @APP_DIR@ made the folder Recipes is installed in
    mkdir -p "$(dirname "$2")"
    sed -e "s|@APP_DIR@|$recipes_dir|g" "$1" > "$2"
    chmod 644 "$2"
    installed+=("$2")
}
recipes="$root/Examples/Recipes"
put "$recipes/recipes.py" "$recipes_dir/recipes.py" 755
put "$recipes/baton_dbus.py" "$recipes_dir/baton_dbus.py" 644
put "$recipes/recipes.json" "$recipes_dir/recipes.json" 644
put_filled "$recipes/org.baton.Recipes.desktop.in" "$desktop_dir/org.baton.Recipes.desktop"
put_filled "$recipes/org.baton.Recipes.service.in" "$services_dir/org.baton.Recipes.service"
# A release tarball (scripts/package.sh) also holds manual pages and completions: under the prefix, where man, bash
# (for ~/.local: $XDG_DATA_HOME/bash-completion), zsh (site-functions, add it to fpath) and fish look.
if [ -d "$root/share/man/man1" ]; then
    for page in "$root"/share/man/man1/*.1.gz; do put "$page" "$prefix/share/man/man1/$(basename "$page")" 644; done
    for program in baton baton-agent; do
        put "$root/share/bash-completion/completions/$program" "$prefix/share/bash-completion/completions/$program" 644
        put "$root/share/zsh/vendor-completions/_$program" "$prefix/share/zsh/site-functions/_$program" 644
        put "$root/share/fish/vendor_completions.d/$program.fish" "$prefix/share/fish/vendor_completions.d/$program.fish" 644
    done
fi
mkdir -p "$unit_dir"
sed -e "s|@BIN_DIR@|$bin_dir|g" -e "s|@DATA_HOME@|$data_home|g" "$root/Packaging/baton-agent.service.in" > "$unit"
chmod 644 "$unit"
installed+=("$unit")

# The manifest: every file, then every folder this install may have made (removed on --uninstall only when empty).
mkdir -p "$(dirname "$manifest")"
{
    printf '%s\n' "${installed[@]}"
    printf '%s\n' "$apps_dir/ShopSnap.app" "$apps_dir/Notes.app" "$recipes_dir" "$apps_dir" "$unit_dir" \
        "$desktop_dir" "$services_dir" "$data_home/dbus-1"
} | sort -u > "$manifest"

# The account stays out of the manifest: an uninstall never removes it.
if [ ! -f "$data_home/baton/identity.plist" ]; then
    name="${name:-$(hostname -s 2>/dev/null || hostname)}"
    XDG_DATA_HOME="$data_home" "$bin_dir/baton" init --name "$name"
fi

echo "Installed baton and baton-agent in $bin_dir, ShopSnap, Notes and Recipes in $apps_dir, and $unit."
if ! /usr/bin/python3 -c "import gi; gi.require_version('Gtk', '4.0'); from gi.repository import Gtk" >/dev/null 2>&1; then
    echo "Recipes, the example in Python, needs GTK 4 for Python: apt-get install python3-gi gir1.2-gtk-4.0"
fi
case ":$PATH:" in *":$bin_dir:"*) ;; *) echo "Add $bin_dir to your PATH to type \`baton\`." ;; esac
if [ "$enable" = 1 ] && user_systemd; then
    systemctl --user daemon-reload
    systemctl --user enable --now baton-agent.service
    echo "The agent runs now and at every login: systemctl --user status baton-agent; logs: journalctl --user -u baton-agent."
elif [ "$enable" = 1 ]; then
    echo "No user systemd here: start the agent yourself with \`$bin_dir/baton agent\`."
else
    echo "Not enabled (--no-enable): systemctl --user enable --now baton-agent starts it now and at every login."
fi
echo "Next: \`baton pair\` on one machine (it waits and announces itself) and \`baton pair --find\` on another of yours on the same network (or \`baton pair ITS-ADDRESS:47811\` elsewhere); compare the codes; then \`baton doctor\`."
