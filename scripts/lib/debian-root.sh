# Debian 12 roots made with debootstrap, for scripts/cleanroom.sh and scripts/package-check.sh (issue 24). Sourced,
# not run. A root is cached in a folder outside the clone and made again when it is missing, half made, or was made
# from a different package list or mirror (its stamp says what it was made from).
#
# The caller sets: cache (the cache folder). It gets: root_mirror, root_make KIND PACKAGES..., root_mount ROOT,
# root_cleanup (unmounts everything root_mount mounted, in reverse order; call it from an EXIT trap).

die() { echo "${0##*/}: error: $*" >&2; exit 1; }

# The Debian mirror apt uses here, for bookworm: the URIs of the deb822 paragraph (or the one-line entry) whose
# suites include plain `bookworm`, so the root comes from where this machine's own packages come from.
root_mirror() {
    local uri
    uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '
        /^[[:space:]]*$/ { if (deb && bookworm && uri != "") { print uri; exit } deb = 0; bookworm = 0; uri = ""; next }
        /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
        /^URIs:/ { uri = $2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") bookworm = 1 }
        END { if (deb && bookworm && uri != "") print uri }' | head -n 1)"
    if [ -z "$uri" ]; then
        uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | sed -E 's/\[[^]]*\]//' | awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')"
    fi
    [ -n "$uri" ] || die "found no Debian bookworm mirror in /etc/apt/sources.list*; cannot make a Debian 12 root"
    echo "$uri"
}

# root_make KIND PACKAGES...: prints the path of a ready root $cache/KIND, making it first when needed. A plain root
# is debootstrap's minbase; a toolchain root adds PACKAGES with apt-get, as a person following swift.org would.
# Made in KIND.new and renamed only when complete, so a root that failed half way is never reused.
root_make() {
    local kind="$1"; shift
    local mirror dir stamp want started
    mirror="$(root_mirror)"
    dir="$cache/$kind"
    stamp="$dir/.baton-root-stamp"
    want="bookworm minbase $mirror $(printf '%s\n' "$@" | sort | tr '\n' ' ')"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dir/usr/bin/apt-get" ]; then
        echo "root: reusing $dir (made from: $want)" >&2
        echo "$dir"
        return 0
    fi
    command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed (apt-get install debootstrap); cannot make the root"
    [ "$(id -u)" = 0 ] || die "making a root needs root (debootstrap, chroot, mount)"
    if [ -e "$dir" ]; then echo "root: $dir is stale or incomplete; making it again" >&2; rm -rf --one-file-system "$dir"; fi
    rm -rf --one-file-system "$dir.new"
    mkdir -p "$cache"
    started=$(date +%s)
    echo "root: debootstrap --variant=minbase bookworm $dir from $mirror" >&2
    debootstrap --variant=minbase bookworm "$dir.new" "$mirror" > "$cache/$kind.debootstrap.log" 2>&1 \
        || die "could not make the root: debootstrap failed (last lines of $cache/$kind.debootstrap.log below)
$(tail -n 15 "$cache/$kind.debootstrap.log")"
    echo "root: debootstrap took $(( $(date +%s) - started )) s" >&2
    if [ $# -gt 0 ]; then
        echo "root: apt-get install $*" >&2
        cp /etc/resolv.conf "$dir.new/etc/resolv.conf" 2>/dev/null || true
        chroot "$dir.new" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
            sh -c 'apt-get update -qq && apt-get install -y -qq "$@" && apt-get clean' apt "$@" \
            > "$cache/$kind.apt.log" 2>&1 \
            || die "could not make the root: apt-get install in it failed (last lines of $cache/$kind.apt.log below)
$(tail -n 15 "$cache/$kind.apt.log")"
        echo "root: apt-get took $(( $(date +%s) - started )) s since debootstrap began" >&2
    fi
    echo "$want" > "$dir.new/.baton-root-stamp"
    mv "$dir.new" "$dir"
    echo "root: made $dir in $(( $(date +%s) - started )) s ($(du -sm --one-file-system "$dir" | cut -f1) MB)" >&2
    echo "$dir"
}

# Mount points, in the order they were mounted.
root_mounts=()

# root_bind SOURCE TARGET [ro]: a bind mount (read-only when asked), recorded for root_cleanup.
root_bind() {
    mkdir -p "$2"
    mount --rbind "$1" "$2" || die "could not bind $1 on $2"
    root_mounts+=("$2")
    mount --make-rslave "$2" 2>/dev/null || true
    if [ "${3:-}" = ro ]; then
        mount -o remount,bind,ro "$2" || die "could not make $2 read-only"
    fi
}

# root_mount ROOT: /proc and /dev, as a program run in the root expects them.
root_mount() {
    mkdir -p "$1/proc"
    mount -t proc proc "$1/proc" || die "could not mount /proc in $1"
    root_mounts+=("$1/proc")
    root_bind /dev "$1/dev"
}

# Unmounts what was mounted, last first; lazily when busy, so an EXIT trap never leaves a mount behind.
root_cleanup() {
    local i
    for ((i = ${#root_mounts[@]} - 1; i >= 0; i--)); do
        umount -R "${root_mounts[$i]}" 2>/dev/null || umount -R -l "${root_mounts[$i]}" 2>/dev/null \
            || echo "${0##*/}: warning: could not unmount ${root_mounts[$i]}" >&2
    done
    root_mounts=()
}
