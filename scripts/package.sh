#!/usr/bin/env bash
# Builds what a person installs (issue 24): release binaries with the Swift runtime linked in
# (--static-swift-stdlib), then dist/baton_VERSION_amd64.deb and dist/baton-VERSION-linux-x86_64.tar.gz.
#
#   scripts/package.sh [--scratch-path DIR] [--out DIR] [--no-build] [--no-lintian]
#
#   --scratch-path DIR  the release build's folder (default .build-release, git-ignored; the debug .build is not touched)
#   --out DIR           where the packages go (default dist/, git-ignored)
#   --no-build          package what DIR already holds (fails when a binary is missing)
#   --no-lintian        skip lintian (by default it runs, and any error fails the script)
#
# The version is the one `baton --version` prints (CommandConfiguration in Sources/baton/BatonCommand.swift); the
# script checks the built binary says it. The .deb holds baton and baton-agent (/usr/bin), the example apps
# (/usr/share/baton/apps, found through XDG_DATA_DIRS, their executables in /usr/lib/baton), the agent's systemd user
# unit (/usr/lib/systemd/user, enabled for every user as dh_installsystemduser does), the browser extension
# (/usr/share/baton/browser-extension) and native messaging host manifests (Chromium, Firefox), manual pages
# (swift-argument-parser's generate-manual) and bash, zsh and fish completions. Depends comes from dpkg-shlibdeps;
# libsystemd0 is only Recommends (sd-bus is loaded with dlopen). The tarball holds the same files under one folder
# with an install.sh (scripts/install.sh --from-tarball FILE installs it; no toolchain needed).
# Needs the Swift toolchain, dpkg-dev (dpkg-shlibdeps, dpkg-deb) and lintian; not root (dpkg-deb --root-owner-group).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

scratch=.build-release
out=dist
build=1
lint=1
while [ $# -gt 0 ]; do
    case "$1" in
    --scratch-path) scratch="${2:?--scratch-path needs a folder}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-lintian) lint=0; shift ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "package.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
die() { echo "package.sh: error: $*" >&2; exit 1; }
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="/opt/swift/usr/bin:$PATH"; fi

version="$(sed -n 's/^ *version: "\([^"]*\)",$/\1/p' Sources/baton/BatonCommand.swift | head -n 1)"
[ -n "$version" ] || die "found no version: \"...\" in Sources/baton/BatonCommand.swift"
programs=(baton baton-agent shopsnap notes)

if [ "$build" = 1 ]; then
    for program in "${programs[@]}"; do
        echo "package: swift build -c release --static-swift-stdlib --product $program"
        swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product "$program"
    done
    # The tool behind swift-argument-parser's GenerateManual plugin. The plugin itself (`swift package
    # generate-manual`) would build every product again, in release without --static-swift-stdlib: a second long
    # build. Its tool, run on the binaries built above, writes the same pages for the binaries that ship. It is not a
    # product of the package, so it is built from the resolved checkout as a package of its own.
    echo "package: building generate-manual (swift-argument-parser $(git -C "$scratch/checkouts/swift-argument-parser" describe --tags 2>/dev/null || echo '?'))"
    rm -rf "$scratch/argument-parser-src"
    cp -r "$scratch/checkouts/swift-argument-parser" "$scratch/argument-parser-src"
    swift build --package-path "$scratch/argument-parser-src" --scratch-path "$scratch/generate-manual" --product generate-manual
fi
generate_manual="$scratch/generate-manual/debug/generate-manual"
bin="$(swift build -c release --static-swift-stdlib --scratch-path "$scratch" --show-bin-path)"
[ -x "$generate_manual" ] || die "$generate_manual is missing; run without --no-build"
for program in "${programs[@]}"; do
    [ -x "$bin/$program" ] || die "$bin/$program is missing; run without --no-build"
done
said="$("$bin/baton" --version)"
[ "$said" = "$version" ] || die "$bin/baton --version says $said, the source says $version: rebuild (without --no-build)"
for program in "${programs[@]}"; do
    if ldd "$bin/$program" | grep -q -E 'libswift|libFoundation|/opt/swift'; then
        die "$program links the Swift runtime dynamically: $(ldd "$bin/$program" | grep -E 'libswift|libFoundation' | head -n 3)"
    fi
done

work="$(mktemp -d)"
# The manual pages' date: the commit's, so the same commit makes the same pages.
date="$(date -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)" +%Y-%m-%d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# stage DIR PREFIX: the programs, manual pages, completions, the extension and the copyright under DIR, laid out as
# under PREFIX (/usr for the .deb; the tarball's own folder for the tarball). bin/ holds baton and baton-agent;
# the apps' programs go to LIBDIR.
stage() {
    local dir="$1" prefix="$2" libdir="$3"
    local share="$dir$prefix/share"
    install -d "$dir$prefix/bin" "$dir$libdir" "$share/man/man1" "$share/doc/baton" "$share/baton/browser-extension"
    install -m 755 -s "$bin/baton" "$bin/baton-agent" "$dir$prefix/bin/"
    install -m 755 -s "$bin/shopsnap" "$bin/notes" "$dir$libdir/"
    install -m 644 Browser/extension/* "$share/baton/browser-extension/"
    # Manual pages, baton.1 (every subcommand in it) and baton-agent.1, and completions for both programs. Not
    # --multi-page: its pages name themselves `.Nm "baton pair"`, which man-db's whatis parser cannot read.
    mkdir -p "$work/man-baton" "$work/man-agent"
    "$generate_manual" "$bin/baton" --date "$date" --authors "the Baton authors" --output-directory "$work/man-baton" >/dev/null
    "$generate_manual" "$bin/baton-agent" --date "$date" --authors "the Baton authors" --output-directory "$work/man-agent" >/dev/null
    local page
    for page in "$work"/man-baton/*.1 "$work"/man-agent/*.1; do
        gzip -9n < "$page" > "$share/man/man1/$(basename "$page").gz"
    done
    rm -rf "$work/man-baton" "$work/man-agent"
    install -d "$share/bash-completion/completions" "$share/zsh/vendor-completions" "$share/fish/vendor_completions.d"
    for program in baton baton-agent; do
        # bash-completion sources the file: no #! line (lintian's bash-completion-with-hashbang).
        "$bin/$program" --generate-completion-script bash | sed '1{/^#!/d}' > "$share/bash-completion/completions/$program"
        "$bin/$program" --generate-completion-script zsh > "$share/zsh/vendor-completions/_$program"
        "$bin/$program" --generate-completion-script fish > "$share/fish/vendor_completions.d/$program.fish"
    done
    install -m 644 Packaging/debian/copyright "$share/doc/baton/copyright"
}

# --- the .deb ---------------------------------------------------------------------------------------------------
deb="$work/deb"
stage "$deb" /usr /usr/lib/baton
# The apps, found through XDG_DATA_DIRS (/usr/share/baton/apps). The bundles' executables are links to the programs
# in /usr/lib/baton, so /usr/share holds no binaries; the registry follows them as it follows the clone's links.
for app in ShopSnap Notes; do
    exe="$(tr '[:upper:]' '[:lower:]' <<< "$app")"
    install -d "$deb/usr/share/baton/apps/$app.app"
    install -m 644 "Examples/$app.app/Info.plist" "Examples/$app.app/$app.entitlements" "$deb/usr/share/baton/apps/$app.app/"
    ln -s "../../../../lib/baton/$exe" "$deb/usr/share/baton/apps/$app.app/$exe"
done
# The agent's user unit: the installed lean agent, with each person's own XDG folders.
install -d "$deb/usr/lib/systemd/user"
sed -e '/^Environment=XDG_DATA_HOME=/d' -e '/^# The same state and apps folders/d' -e 's|^ExecStart=.*|ExecStart=/usr/bin/baton-agent|' \
    -e '1,3c # Baton'"'"'s agent as a systemd user service (issue 16), from the baton package: enabled for every user, it starts at\
# login; `systemctl --user disable --now baton-agent` opts out.' \
    Packaging/baton-agent.service.in > "$deb/usr/lib/systemd/user/baton-agent.service"
chmod 644 "$deb/usr/lib/systemd/user/baton-agent.service"
# The native messaging host: a manifest cannot pass arguments, so a two-line script runs `baton browser-host`.
printf '#!/bin/sh\n# The org.baton.browser native messaging host: the browsers start it with arguments of their own.\nexec /usr/bin/baton browser-host "$@"\n' \
    > "$deb/usr/lib/baton/browser-host"
chmod 755 "$deb/usr/lib/baton/browser-host"
# The host manifests where Chromium (/etc/chromium, so a conffile) and Firefox (/usr/lib/mozilla) look system-wide.
# Not Chrome's /etc/opt/chrome: Debian packages keep out of /etc/opt; `baton browser install --browser chrome` writes
# a person's own.
manifest() { # manifest BROWSER-ORIGIN-KEY VALUE
    printf '{\n  "%s" : [\n    "%s"\n  ],\n  "description" : "Baton Handoff: the focused tab as this device'"'"'s current activity",\n  "name" : "org.baton.browser",\n  "path" : "/usr/lib/baton/browser-host",\n  "type" : "stdio"\n}\n' "$1" "$2"
}
install -d "$deb/etc/chromium/native-messaging-hosts" "$deb/usr/lib/mozilla/native-messaging-hosts"
manifest allowed_origins "chrome-extension://lkmiafdnghlcnikjkhphablnjalajmkh/" > "$deb/etc/chromium/native-messaging-hosts/org.baton.browser.json"
manifest allowed_extensions "browser@baton.org" > "$deb/usr/lib/mozilla/native-messaging-hosts/org.baton.browser.json"
{
    echo "baton ($version) unstable; urgency=medium"
    echo
    echo "  * Built by scripts/package.sh from $(git rev-parse --short HEAD 2>/dev/null || echo 'a Baton clone')."
    echo
    echo " -- $(git config user.name 2>/dev/null || echo 'Baton') <$(git config user.email 2>/dev/null || echo 'baton@localhost')>  $(date -R -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")"
} | gzip -9n > "$deb/usr/share/doc/baton/changelog.gz"

# Depends: what the binaries link, as dpkg-shlibdeps finds it (it wants a debian/control to read).
mkdir -p "$work/shlibs/debian"
printf 'Source: baton\n\nPackage: baton\nArchitecture: amd64\n' > "$work/shlibs/debian/control"
depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O "$deb/usr/bin/baton" "$deb/usr/bin/baton-agent" "$deb/usr/lib/baton/shopsnap" \
    "$deb/usr/lib/baton/notes" 2>"$work/shlibdeps.err" | sed -n 's/^shlibs:Depends=//p')" \
    || die "dpkg-shlibdeps failed: $(cat "$work/shlibdeps.err")"
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies: $(cat "$work/shlibdeps.err")"
if grep -q libsystemd <<< "$depends"; then die "the binaries link libsystemd ($depends): it must stay a Recommends (dlopen)"; fi

install -d "$deb/DEBIAN"
maintainer="$(git config user.name 2>/dev/null || echo Baton) <$(git config user.email 2>/dev/null || echo baton@localhost)>"
sed -e "s|@VERSION@|$version|" -e "s|@MAINTAINER@|$maintainer|" -e "s|@DEPENDS@|$depends|" \
    -e "s|@INSTALLED_SIZE@|$(du -sk --apparent-size "$deb/usr" "$deb/etc" | awk '{ s += $1 } END { print s }')|" \
    Packaging/debian/control.in > "$deb/DEBIAN/control"
(cd "$deb" && find etc -type f | sed 's|^|/|' | sort) > "$deb/DEBIAN/conffiles"
install -m 755 Packaging/debian/postinst Packaging/debian/postrm "$deb/DEBIAN/"
(cd "$deb" && find usr etc -type f -print0 | sort -z | xargs -0 md5sum) > "$deb/DEBIAN/md5sums"
chmod 644 "$deb/DEBIAN/control" "$deb/DEBIAN/conffiles" "$deb/DEBIAN/md5sums"
find "$deb" -type d -exec chmod 755 {} +
deb_file="$out/baton_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$deb" "$deb_file" >/dev/null
echo "package: $deb_file ($(du -k "$deb_file" | cut -f1) KB), Depends: $depends"

# --- the tarball ---------------------------------------------------------------------------------------------------
name="baton-$version-linux-x86_64"
tree="$work/tar/$name"
stage "$tree" "" /bin
# What scripts/install.sh reads, where it reads it: it finds its folder's ../Examples and ../Packaging.
install -d "$tree/scripts" "$tree/Examples/ShopSnap.app" "$tree/Examples/Notes.app" "$tree/Packaging"
install -m 755 scripts/install.sh "$tree/scripts/install.sh"
for app in ShopSnap Notes; do
    install -m 644 "Examples/$app.app/Info.plist" "Examples/$app.app/$app.entitlements" "$tree/Examples/$app.app/"
done
# Recipes, the example in Python (issue 28 item 5): install.sh puts it beside them.
install -d "$tree/Examples/Recipes"
install -m 755 Examples/Recipes/recipes.py "$tree/Examples/Recipes/"
install -m 644 Examples/Recipes/baton_dbus.py Examples/Recipes/recipes.json Examples/Recipes/org.baton.Recipes.*.in "$tree/Examples/Recipes/"
install -m 644 Packaging/baton-agent.service.in "$tree/Packaging/"
printf '%s\n' '#!/bin/sh' \
    '# Installs this Baton for the current user: scripts/install.sh with the binaries in this folder (see --help).' \
    'here="$(cd "$(dirname "$0")" && pwd)"' \
    'exec "$here/scripts/install.sh" --binaries "$here/bin" "$@"' > "$tree/install.sh"
chmod 755 "$tree/install.sh"
echo "$version" > "$tree/VERSION"
tar_file="$out/$name.tar.gz"
tar -C "$work/tar" --owner=0 --group=0 --numeric-owner --sort=name -czf "$tar_file" "$name"
echo "package: $tar_file ($(du -k "$tar_file" | cut -f1) KB)"

if [ "$lint" = 1 ]; then
    command -v lintian >/dev/null 2>&1 || die "lintian is not installed (apt-get install lintian), or pass --no-lintian"
    echo "package: lintian $deb_file"
    lintian --no-tag-display-limit "$deb_file" | tee "$work/lintian.txt" || true
    if grep -q '^E: ' "$work/lintian.txt"; then die "lintian reports errors (above)"; fi
    echo "package: lintian: no errors ($(grep -c '^W: ' "$work/lintian.txt" || true) warnings)"
fi
