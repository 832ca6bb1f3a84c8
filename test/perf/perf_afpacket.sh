#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# app/droce-perf as two processes over a port the kernel also has: DPDK's
# net_af_packet on a veth pair, in a network namespace of the test's own
# (perftest's TCP exchange on its loopback), as bench's kernel section
# runs it. Root only (skipped elsewhere).
#
# With mac= (a locally administered MAC a port) droce's frames are not the
# kernel's: its IP stack drops them on arrival, before it counts them
# (Ip InReceives stays where it was), where the interfaces' own MACs send
# every frame up the IP stack too (InReceives grows by at least the
# frames). Both ways the WRITEs complete, counted and data checked. (An
# end that answered ARP with, or sent from, its interface's MAC instead
# of its mac= would draw the other's frames to that MAC: InReceives.)
# Then the same WRITEs over net_af_xdp on the same pair (bench's kernel
# section's second link), counted and data checked. At the end neither
# veth is promiscuous or has an XDP program attached: droce-perf's
# devices, set up from DROCE_DEVICES, close their ports at its exit.
#
# usage: perf_afpacket.sh <droce-perf>
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>")

NAME=perf-afpacket
PREFIX=dpa$$
# shellcheck source=test/perf/perf_lib.sh
. "$(dirname "$0")/perf_lib.sh"
BUDGET=$(time_budget 60)
need_two_cores "two processes, one busy thread each, need two cores"
EAL_MEM="--no-huge -m 256"
NS=dpa$$
MAC_S=02:00:c6:12:00:31
MAC_C=02:00:c6:12:00:32
RUNS=0

if [ "$(id -u)" -ne 0 ] || ! ip netns add "$NS" 2>/dev/null; then
	echo "SKIPPED: needs root and network namespaces"
	exit 77
fi
trap 'ip netns del "$NS" 2>/dev/null; perf_lib_cleanup' EXIT
nsx() { ip netns exec "$NS" "$@"; }
if ! nsx ip link add dpa-s type veth peer name dpa-c 2>/dev/null; then
	echo "SKIPPED: no veth driver"
	exit 77
fi
nsx ip link set lo up
for l in dpa-s dpa-c; do
	# (no IPv6 autoconfiguration frames on the link)
	nsx sysctl -qw "net.ipv6.conf.$l.disable_ipv6=1"
	nsx ip link set "$l" up
done

# ns_listening <port>: a socket in the namespace listens on it
ns_listening() {
	nsx bash -c ". '$(dirname "$0")/../common/test_lib.sh'; port_listening $1"
}

# ip_in: the namespace's Ip InReceives (packets that reached its IP stack)
ip_in() {
	nsx awk '$1 == "Ip:" && !h { for (i = 2; i <= NF; i++) if ($i == "InReceives") c = i; h = 1; next }
		 $1 == "Ip:" && h { print $c; exit }' /proc/net/snmp
}

kv() {
	sed -n "s/^DROCE_PERF .* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1
}

# run <label> <server devargs> <client devargs> <droce-perf args...>: the
# server on core 0, the client on core 1, inside the namespace, over
# $KIND (net_af_packet0 unless set); their outputs in $SRV and $CLI. Fails
# when either exits non-zero, unless one's output matches $UNSUPPORTED
# (then only NOT_HERE=1: the port cannot run on this kernel).
KIND=af_packet
UNSUPPORTED=
NOT_HERE=
run() {
	local label=$1 sdev=$2 cdev=$3 spid port left crc src
	shift 3
	RUNS=$((RUNS + 1))
	SRV=$WORK/$RUNS.server
	CLI=$WORK/$RUNS.client
	budget_left "$label" 10 30 || return 1
	left=$LEFT
	port=$(nsx bash -c ". '$(dirname "$0")/../common/test_lib.sh'; free_port") ||
		{ fail "$label: no free TCP port"; return 1; }
	DROCE_EAL_ARGS="-l 0 $EAL_MEM --no-pci $LOG --file-prefix ${PREFIX}s$RUNS --vdev=net_${KIND}0,iface=dpa-s" \
	DROCE_DEVICES="port=net_${KIND}0,ip=198.18.0.1,lcore=app$sdev" \
		timeout -k 2 "$left" ip netns exec "$NS" "$BIN" "$@" -p "$port" --kv >"$SRV" 2>&1 &
	spid=$!
	PIDS="$PIDS $spid"
	await_listening "$label" $spid "$SRV" ns_listening "$port" || return 1
	DROCE_EAL_ARGS="-l 1 $EAL_MEM --no-pci $LOG --file-prefix ${PREFIX}c$RUNS --vdev=net_${KIND}0,iface=dpa-c" \
	DROCE_DEVICES="port=net_${KIND}0,ip=198.18.0.2,lcore=app$cdev" \
		timeout -k 2 "$left" ip netns exec "$NS" "$BIN" "$@" -p "$port" --kv 127.0.0.1 >"$CLI" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		if [ -n "$UNSUPPORTED" ] && grep -qs "$UNSUPPORTED" "$SRV" "$CLI"; then
			NOT_HERE=1
			return 1
		fi
		fail "$label: exit codes client $crc, server $src"
		tail -n 5 "$CLI" "$SRV" | sed 's/^/    /'
		return 1
	fi
	return 0
}

# check <label> <msgs>: the client's counts and data checks
check() {
	local v
	v=$(kv "$CLI" run_msgs)
	[ "$v" = "$2" ] || fail "$1: client completed ${v:-?} messages, want $2"
	v=$(kv "$CLI" errors)
	[ "$v" = 0 ] || fail "$1: client errors=${v:-?}"
	grep '^ check: ' "$CLI" | grep -qv ' OK$' &&
		fail "$1: $(grep '^ check: ' "$CLI" | head -2)"
	v=$(kv "$CLI" c_tx_pkts)
	[ -n "$v" ] && [ "$v" -ge "$2" ] ||
		fail "$1: client sent ${v:-?} frames, want at least $2"
}

N=20000
before=$(ip_in)
if run own-macs ",mac=$MAC_S" ",mac=$MAC_C" write_bw -s 64 -n $N --check; then
	check own-macs $N
	after=$(ip_in)
	# (a few stray frames at most: none of droce's N)
	[ $((after - before)) -lt 100 ] ||
		fail "own-macs: the kernel's IP stack took $((after - before)) packets, want none of the $N WRITEs"
fi
before=$(ip_in)
if run interface-macs "" "" write_bw -s 64 -n $N --check; then
	check interface-macs $N
	after=$(ip_in)
	[ $((after - before)) -ge $N ] ||
		fail "interface-macs: the kernel's IP stack took $((after - before)) packets, want at least the $N WRITEs"
fi

# The same over net_af_xdp (its XDP program takes every frame before the
# IP stack; 2 KiB frames: the veths' MTU within them). Skipped, and said
# so, only where the kernel cannot attach the port at all.
for l in dpa-s dpa-c; do
	nsx ip link set "$l" mtu 3000
done
KIND=af_xdp
UNSUPPORTED='cannot attach the device\|Failed to attach'
before=$(ip_in)
if run af_xdp ",mac=$MAC_S" ",mac=$MAC_C" write_bw -s 64 -n $N --check; then
	check af_xdp $N
	after=$(ip_in)
	[ $((after - before)) -lt 100 ] ||
		fail "af_xdp: the kernel's IP stack took $((after - before)) packets, want none of the $N WRITEs"
elif [ -n "$NOT_HERE" ]; then
	echo "af_xdp part skipped: the kernel could not attach net_af_xdp: $(grep -hs 'af_xdp' "$SRV" | head -2)"
fi
# After each run (droce's exit-time teardown closed the ports): neither
# interface is left promiscuous or with an XDP program attached.
left=$(nsx ip -o link show | grep -E ' dpa-[sc]@' | grep -c 'PROMISC\|xdp')
[ "$left" = 0 ] || fail "$left interface(s) left promiscuous or with XDP attached: $(nsx ip -o link show | grep -E ' dpa-[sc]@')"

finish "$RUNS runs"
