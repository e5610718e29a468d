#!/usr/bin/env bash
# Throwaway multi-host test LANs built from Linux network namespaces (needs root and iproute2, nothing else).
#
#   scripts/netns.sh up PREFIX N [--block-multicast] [--ipv6-only]
#                                                       build the LAN (tears down an old PREFIX-* first)
#   scripts/netns.sh down PREFIX                        kill processes in, and delete, every PREFIX-* namespace
#   scripts/netns.sh exec PREFIX K CMD...               run CMD in host K (environment and cwd pass through)
#   scripts/netns.sh check                              exit 0 if this machine can do it, else say why, exit 77
#
# Topology: namespace PREFIX-hub holds Linux bridge br0 (STP off, so ports forward at once; IPv6 off in the hub,
# so the switch itself sends nothing) and N host namespaces PREFIX-h1..PREFIX-hN. A veth pair joins host K to
# the bridge: port hK in the hub, eth0 in the host, MAC 02:77:00:00:00:KK, IPv4 10.77.0.K/24 and the kernel's
# EUI-64 link-local fe80::77:ff:fe00:KK (KK in hex). DAD is off in the hosts, so addresses are usable at once.
# Hosts have lo up and routes 224.0.0.0/4 and default on eth0, so a socket bound to 0.0.0.0 can send to or
# join an IPv4 group without naming an interface. IPv6 link-local multicast needs the scope id (eth0).
# --ipv6-only leaves IPv4 out: no 10.77.0.K, no IPv4 routes; the hosts have only their link-local addresses,
# like a LAN with no DHCP server, so anything that works there works over IPv6 link-local alone.
#
# Multicast: br0 runs with mcast_snooping 0, so it keeps no group table and floods all multicast to all ports.
# --block-multicast also turns the per-port flag mcast_flood off on every hK. The bridge forwards a frame whose
# destination MAC is multicast but not broadcast (01:00:5e:* IPv4, 33:33:* IPv6) only by flooding it (there is
# no group table to consult), and flooding skips ports whose mcast_flood is off. So IPv4/IPv6 multicast, IGMP,
# MLD and IPv6 neighbour solicitations are all dropped at the bridge. Broadcast has a separate flag (bcast_flood,
# left on), so ARP and IPv4 unicast keep working. IPv6 neighbour discovery cannot work, so each host gets
# permanent neighbour entries for the other hosts' link-local addresses and IPv6 unicast works too.
# (tc is no help here: minimal kernels often lack the drop actions gact/police. nftables is not assumed.)
set -euo pipefail

die() { echo "netns.sh: $*" >&2; exit 1; }
usage() { die "usage: $0 up PREFIX N [--block-multicast] [--ipv6-only] | down PREFIX | exec PREFIX K CMD... | check"; }
nsx() { ip netns exec "$@"; }

check_prefix() {
    [[ "${1:-}" =~ ^[A-Za-z0-9_]{1,6}$ ]] || die "PREFIX must be 1-6 characters [A-Za-z0-9_], got '${1:-}'"
}

cmd_check() {
    local probe="netnschk$$"
    if [[ $(id -u) -ne 0 ]]; then echo "netns.sh: needs root (uid is $(id -u))" >&2; exit 77; fi
    command -v ip >/dev/null || { echo "netns.sh: iproute2 'ip' not found" >&2; exit 77; }
    if ! ip netns add "$probe" 2>/dev/null; then echo "netns.sh: 'ip netns add' failed" >&2; exit 77; fi
    if ! ip -n "$probe" link add br0 type bridge 2>/dev/null \
        || ! ip -n "$probe" link add v0 type veth peer name v1 2>/dev/null \
        || ! ip -n "$probe" link set v0 master br0 2>/dev/null \
        || ! bridge -n "$probe" link set dev v0 mcast_flood off 2>/dev/null \
        || ! nsx "$probe" sysctl -qw net.ipv6.conf.all.accept_dad=0 2>/dev/null; then
        ip netns del "$probe" 2>/dev/null || true
        echo "netns.sh: bridge, veth, bridge port flags or namespaced IPv6 sysctls do not work here" >&2; exit 77
    fi
    ip netns del "$probe"
}

cmd_down() {
    check_prefix "${1:-}"
    local ns pids
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-" || true); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [[ -n "$pids" ]] && kill -9 $pids 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
}

mac_of() { printf '02:77:00:00:00:%02x' "$1"; }
ll_of() { printf 'fe80::77:ff:fe00:%x' "$1"; }

add_host() {  # add_host PREFIX K BLOCK IPV6ONLY
    local hub="$1-hub" ns="$1-h$2"
    ip netns add "$ns"
    nsx "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
        net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0
    ip -n "$hub" link add "h$2" type veth peer name eth0 address "$(mac_of "$2")" netns "$ns"
    ip -n "$hub" link set "h$2" master br0
    [[ "$3" == 1 ]] && bridge -n "$hub" link set dev "h$2" mcast_flood off
    ip -n "$hub" link set "h$2" up
    ip -n "$ns" link set lo up
    [[ "$4" == 1 ]] || ip -n "$ns" addr add "10.77.0.$2/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [[ "$4" != 1 ]]; then
        ip -n "$ns" route add 224.0.0.0/4 dev eth0
        ip -n "$ns" route add default dev eth0
    fi
}

wait_ready() {  # wait_ready NS: the link-local address exists and is not tentative (bounded at ~5 s)
    local i
    for i in $(seq 100); do
        if ip -n "$1" -6 addr show dev eth0 scope link | grep -q 'inet6 fe80' \
            && ! ip -n "$1" -6 addr show dev eth0 tentative | grep -q inet6; then return 0; fi
        sleep 0.05
    done
    die "$1: eth0 link-local address not ready after 5 s"
}

cmd_up() {
    check_prefix "${1:-}"
    local prefix="$1" n="${2:-}" block=0 v6only=0 k j flag
    [[ "$n" =~ ^[0-9]+$ ]] && ((10#$n >= 1 && 10#$n <= 254)) || die "N must be 1-254, got '$n'"
    n=$((10#$n))
    for flag in "${@:3}"; do
        case "$flag" in --block-multicast) block=1 ;; --ipv6-only) v6only=1 ;; *) usage ;; esac
    done
    cmd_down "$prefix"
    UP_PREFIX="$prefix"
    trap 'rc=$?; ((rc == 0)) || { echo "netns.sh: up failed, tearing down $UP_PREFIX-*" >&2; cmd_down "$UP_PREFIX"; }' EXIT
    ip netns add "$prefix-hub"
    ip -n "$prefix-hub" link set lo up
    nsx "$prefix-hub" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$prefix-hub" link add br0 type bridge stp_state 0 mcast_snooping 0
    ip -n "$prefix-hub" link set br0 up
    for ((k = 1; k <= n; k++)); do add_host "$prefix" "$k" "$block" "$v6only"; done
    for ((k = 1; k <= n; k++)); do wait_ready "$prefix-h$k"; done
    if ((block)); then
        for ((k = 1; k <= n; k++)); do
            for ((j = 1; j <= n; j++)); do
                ((j == k)) || echo "neigh replace $(ll_of "$j") dev eth0 lladdr $(mac_of "$j") nud permanent"
            done | ip -n "$prefix-h$k" -batch -
        done
    fi
    trap - EXIT
}

cmd_exec() {
    check_prefix "${1:-}"
    [[ "${2:-}" =~ ^[0-9]+$ && $# -ge 3 ]] || usage
    local ns="$1-h$2"; shift 2
    exec ip netns exec "$ns" "$@"
}

case "${1:-}" in
    up) shift; cmd_up "$@" ;;
    down) shift; [[ $# -eq 1 ]] || usage; cmd_down "$1" ;;
    exec) shift; cmd_exec "$@" ;;
    check) cmd_check ;;
    *) usage ;;
esac
