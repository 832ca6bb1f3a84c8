#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Interop: droce's examples/rc_pingpong against rdma-core's real
# ibv_rc_pingpong on Linux Soft-RoCE (rdma_rxe) in a QEMU (TCG) guest, in
# both directions, several message sizes, with -c (data check) on both
# sides. One guest boot serves every run (its agent takes the jobs).
#
# usage: test_rc_pingpong_rxe.sh <rc_pingpong>
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Two ways to run droce, both tested:
#   engine  droce's engine on its own lcore (-l 0-1, lcore=1): it answers
#           the guest's ARP while rc_pingpong blocks in its TCP exchange
#   app     lcore=app on one core: nothing runs droce while the program
#           blocks in read(), and rxe resolves the peer's MAC inside
#           ibv_modify_qp(RTR) during that exchange; so the guest's
#           neighbour entry for droce is pinned first (see doc/interop.md)
#
# Environment (optional):
#   DROCE_INTEROP_SKIP=1    skip (e.g. no network for the first build)
#   DROCE_INTEROP_SIZES     message sizes (default "64 1024 4096 65536")
#   DROCE_INTEROP_ITERS     -n (default 5: the guest is emulated, TCG)
#   DROCE_INTEROP_MODES     "engine app" (default) or either one; also
#                           "app-arp": app mode without the pinned
#                           neighbour entry (see doc/interop.md)
#   DROCE_INTEROP_KEEP=1    keep the work directory (logs, console, pcap);
#                           it is always kept when something fails
#   DROCE_INTEROP_CACHE     guest cache (see build-guest.sh)
#   DROCE_TEST_EAL_MEM      EAL memory options (default as the other tests)

set -u

BIN=${1:?usage: $0 <rc_pingpong>}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
START=$SECONDS
BUDGET=540		# seconds for everything after the guest is built
SIZES=${DROCE_INTEROP_SIZES:-64 1024 4096 65536}
ITERS=${DROCE_INTEROP_ITERS:-5}
MODES=${DROCE_INTEROP_MODES:-engine app}
PORT=18515

unset DROCE_EAL_ARGS DROCE_DEVICES
IO_LOG_PREFIX=interop
# shellcheck source=lib.sh
. "$HERE/lib.sh"

if [ -n "${DROCE_INTEROP_SKIP:-}" ]; then
	echo "SKIPPED: DROCE_INTEROP_SKIP is set"
	exit 77
fi
if [ ! -x "$BIN" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-interop.XXXXXX") || exit 1
FAILS=0
TCPDUMP_PID=

cleanup() {
	local rc=$?
	[ -n "$TCPDUMP_PID" ] && io_kill_pid "$TCPDUMP_PID"
	io_shutdown_guest 2>/dev/null
	io_cleanup
	if [ $FAILS -gt 0 ] || [ -n "${DROCE_INTEROP_KEEP:-}" ]; then
		echo "work directory kept: $WORK (console.log, runs, rxe.pcap)"
	else
		rm -rf "$WORK"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted"; FAILS=$((FAILS + 1)); exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

# ------------------------------------------------------------- set-up

if ! why=$(io_preflight); then
	echo "SKIPPED: $why"
	exit 77
fi

GUEST=$("$HERE/build-guest.sh" -q 2>"$WORK/build-guest.log")
rc=$?
if [ $rc -ne 0 ] || [ ! -f "$GUEST/initrd.img" ]; then
	tail -n 5 "$WORK/build-guest.log"
	echo "SKIPPED: the rxe guest could not be built (build-guest.sh exit $rc:" \
	     "$(grep -v '^Get:\|^Fetched' "$WORK/build-guest.log" | tail -n 1))"
	exit 77
fi
echo "guest: $GUEST ($(cat "$GUEST/kernel-release"))"
T0=$SECONDS

remaining() {
	local r=$((BUDGET - (SECONDS - T0)))
	[ $r -lt 1 ] && r=1
	echo $r
}
limit() { # <seconds>: at most that, within the budget
	local r
	r=$(remaining)
	[ "$1" -lt "$r" ] && r=$1
	echo "$r"
}

io_reap_stale
if ! io_netns_up 2>"$WORK/netns.log"; then
	echo "SKIPPED: cannot set up the network namespace: $(tail -n 1 "$WORK/netns.log")"
	exit 77
fi

if command -v tcpdump >/dev/null 2>&1; then
	# on the bridge side of droce's veth: DPDK's af_packet PMD bypasses the
	# qdisc (and so the taps) on its own end
	nsx tcpdump -i dr-droce-br -s 0 -U --immediate-mode -w "$WORK/rxe.pcap" \
		'arp or udp port 4791' >"$WORK/tcpdump.log" 2>&1 &
	TCPDUMP_PID=$!
fi

echo droce-agent >"$WORK/guest-cmd"
io_boot "$GUEST" "$WORK/console.log" "$WORK/guest-cmd"
if ! io_wait_serial "$WORK/console.log" '^@@DROCE boot' 180; then
	tail -n 5 "$WORK/console.log.qemu" "$WORK/console.log" 2>/dev/null
	echo "SKIPPED: QEMU (TCG) did not boot the guest kernel within 180 s" \
	     "($(tail -n 1 "$WORK/console.log.qemu" 2>/dev/null))"
	exit 77
fi
if ! io_wait_serial "$WORK/console.log" '^@@DROCE agent' 120; then
	fail "the guest booted but its agent never came up"
	grep -a '@@DROCE' "$WORK/console.log"
	tail -n 20 "$WORK/console.log"
	exit 1
fi
ready=$(grep -a '^@@DROCE ready' "$WORK/console.log" | tr -d '\r')
echo "booted in $((SECONDS - T0)) s: ${ready#@@DROCE }"
case $ready in
*"gid1=0000:0000:0000:0000:0000:ffff:c612:000b"*"gid1_type=RoCE_v2"*"state=ACTIVE"*) ;;
*) fail "rxe0 in the guest: GID index 1 is not ::ffff:$IO_GUEST_ROCE_IP (RoCE v2, ACTIVE)"
   exit 1 ;;
esac
mtu=$(io_guest_run 10 "cat /sys/class/infiniband/rxe0/ports/1/active_mtu 2>/dev/null ||
	ibv_devinfo -d rxe0 | sed -n 's/.*active_mtu:[[:space:]]*//p'")
echo "rxe0 active MTU: $mtu"
DROCE_MAC=$(nsx cat "/sys/class/net/$IO_DROCE_IF/address")

# -------------------------------------------------------------- checks

ADDR_RE='LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-fA-F:.]+'

# check_side <out file> <size> <role>: ibv_rc_pingpong's output
check_side() {
	local out=$1 size=$2 role=$3 ok=0 line n
	grep -Eq "^  local address:  $ADDR_RE\$" "$out" ||
		{ fail "$role: no/bad 'local address' line"; ok=1; }
	grep -Eq "^  remote address: $ADDR_RE\$" "$out" ||
		{ fail "$role: no/bad 'remote address' line"; ok=1; }
	line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds = ' "$out")
	n=${line%% *}
	[ "$n" = $((2 * size * ITERS)) ] ||
		{ fail "$role: '${line:-no bytes line}', expected $((2 * size * ITERS)) bytes"; ok=1; }
	line=$(grep -E '^[0-9]+ iters in [0-9.]+ seconds = ' "$out")
	n=${line%% *}
	[ "$n" = "$ITERS" ] ||
		{ fail "$role: '${line:-no iters line}', expected $ITERS iters"; ok=1; }
	if grep -q 'invalid data in page' "$out"; then
		fail "$role: data check: $(grep -c 'invalid data' "$out") bad page(s)"
		ok=1
	fi
	return $ok
}

field() { # <out file> <local|remote> <QPN|PSN|GID>
	sed -nE "s/^  $2 address: +.*$3 ([^,]+).*/\\1/p" "$1" | head -n 1
}

# cross <server out> <client out>: each saw the other's address
cross() {
	local f
	for f in QPN PSN GID; do
		[ "$(field "$1" remote $f)" = "$(field "$2" local $f)" ] ||
			fail "$3: server's remote $f != client's local $f"
		[ "$(field "$2" remote $f)" = "$(field "$1" local $f)" ] ||
			fail "$3: client's remote $f != server's local $f"
	done
}

show() { # <file>...
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "---- ${f#"$WORK"/}"
		tail -n 15 "$f"
	done
}

guest_diag() { # rxe's counters (non-zero) and the end of dmesg
	echo "---- guest rxe0 counters (non-zero) and dmesg"
	io_guest_run 10 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters &&
		grep . * | grep -v ":0$"; dmesg | tail -n 8' 2>&1 | sed 's/^/  /'
}

droce_env() { # <mode> <run>
	local mem
	mem=$(io_eal_mem)
	if [ "${1%%-*}" = engine ]; then
		echo "DROCE_EAL_ARGS=-l 0-1 $mem --no-pci --file-prefix drio$$r$2" \
		     "--log-level=*:warning --vdev=net_af_packet0,iface=$IO_DROCE_IF"
		echo "DROCE_DEVICES=port=net_af_packet0,ip=$IO_DROCE_IP,mtu=1024,lcore=1"
	else
		echo "DROCE_EAL_ARGS=-l 1 $mem --no-pci --file-prefix drio$$r$2" \
		     "--log-level=*:warning --vdev=net_af_packet0,iface=$IO_DROCE_IF"
		echo "DROCE_DEVICES=port=net_af_packet0,ip=$IO_DROCE_IP,mtu=1024,lcore=app"
	fi
}

PP_ARGS=(-p "$PORT" -g 1 -m 1024 -n "$ITERS" -c)
RUN=0

# guest_server <mode> <size>: ibv_rc_pingpong server in the guest, droce's
# rc_pingpong client in the namespace
guest_server() {
	local mode=$1 size=$2 label dir id crc grc i env1 env2 before=$FAILS
	RUN=$((RUN + 1))
	label="$mode size $size: rxe server, droce client"
	dir=$WORK/run$RUN
	mkdir -p "$dir"
	id=gs$RUN
	if [ "$(remaining)" -le 5 ]; then
		fail "$label: out of time budget (${BUDGET}s)"
		return
	fi
	io_guest_start "$id" "ibv_rc_pingpong -d rxe0 ${PP_ARGS[*]} -s $size" ||
		{ fail "$label: guest job did not start"; return; }
	for i in $(seq 1 60); do
		io_guest_port_listening $PORT && break
		sleep 0.3
	done
	{ read -r env1; read -r env2; } < <(droce_env "$mode" $RUN)
	nsx env "$env1" "$env2" timeout -k 3 "$(limit 60)" "$BIN" "${PP_ARGS[@]}" \
		-s "$size" "$IO_GUEST_OOB_IP" >"$dir/droce-client.out" \
		2>"$dir/droce-client.err"
	crc=$?
	i=5
	[ $crc -eq 0 ] && i=40
	io_guest_wait "$id" "$(limit $i)" \
		>"$dir/rxe-server.out" 2>&1
	grc=$?
	[ $grc -eq 124 ] && io_guest_kill "$id"
	[ $crc -eq 0 ] || fail "$label: droce client exit code $crc"
	[ $grc -eq 0 ] || fail "$label: guest server exit code $grc$([ $grc -eq 124 ] && echo ' (still running: killed)')"
	if [ $crc -eq 0 ] && [ $grc -eq 0 ]; then
		check_side "$dir/rxe-server.out" "$size" "$label (rxe server)"
		check_side "$dir/droce-client.out" "$size" "$label (droce client)"
		cross "$dir/rxe-server.out" "$dir/droce-client.out" "$label"
	fi
	if [ $FAILS -ne $before ]; then
		show "$dir"/*
		guest_diag
	else
		printf 'ok   %-44s %s\n' "$label" "$(grep ' iters in ' "$dir/droce-client.out")"
	fi
}

# droce_server <mode> <size>: droce's rc_pingpong server in the namespace,
# ibv_rc_pingpong client in the guest
droce_server() {
	local mode=$1 size=$2 label dir spid src grc i env1 env2 before=$FAILS
	RUN=$((RUN + 1))
	label="$mode size $size: droce server, rxe client"
	dir=$WORK/run$RUN
	mkdir -p "$dir"
	if [ "$(remaining)" -le 5 ]; then
		fail "$label: out of time budget (${BUDGET}s)"
		return
	fi
	{ read -r env1; read -r env2; } < <(droce_env "$mode" $RUN)
	nsx env "$env1" "$env2" timeout -k 3 "$(limit 60)" "$BIN" "${PP_ARGS[@]}" \
		-s "$size" >"$dir/droce-server.out" 2>"$dir/droce-server.err" &
	spid=$!
	IO_PIDS+=("$spid")
	for i in $(seq 1 100); do
		io_port_listening $PORT && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if ! io_port_listening $PORT; then
		io_kill_pid "$spid"
		IO_PIDS=()
		fail "$label: droce server not listening on $PORT"
		show "$dir"/*
		return
	fi
	io_guest_run "$(limit 40)" "ibv_rc_pingpong -d rxe0 ${PP_ARGS[*]} -s $size $IO_HOST_OOB_IP" \
		>"$dir/rxe-client.out" 2>&1
	grc=$?
	if [ $grc -ne 0 ]; then
		for _ in $(seq 1 30); do
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.1
		done
		io_kill_pid "$spid"
	fi
	wait "$spid"
	src=$?
	IO_PIDS=()
	[ $src -eq 0 ] || fail "$label: droce server exit code $src"
	[ $grc -eq 0 ] || fail "$label: guest client exit code $grc"
	if [ $src -eq 0 ] && [ $grc -eq 0 ]; then
		check_side "$dir/droce-server.out" "$size" "$label (droce server)"
		check_side "$dir/rxe-client.out" "$size" "$label (rxe client)"
		cross "$dir/droce-server.out" "$dir/rxe-client.out" "$label"
	fi
	if [ $FAILS -ne $before ]; then
		show "$dir"/*
		guest_diag
	else
		printf 'ok   %-44s %s\n' "$label" "$(grep ' iters in ' "$dir/droce-server.out")"
	fi
}

# ---------------------------------------------------------------- runs

for mode in $MODES; do
	case $mode in
	engine)
		if [ "$(nproc)" -lt 2 ]; then
			echo "note: engine mode needs two cores; not run"
			continue
		fi
		# nothing pinned: rxe resolves droce's MAC by ARP, droce answers
		io_guest_run 5 "/bin/ip neigh flush dev eth0" >/dev/null
		;;
	app-arp)
		# app mode with nothing pinned: rxe's ARP for droce must be
		# answered while droce's rc_pingpong blocks in its TCP exchange
		io_guest_run 5 "/bin/ip neigh flush dev eth0" >/dev/null
		;;
	app)
		io_guest_run 5 "/bin/ip neigh replace $IO_DROCE_IP lladdr $DROCE_MAC dev eth0 nud permanent" \
			>/dev/null || fail "app: cannot pin the guest's neighbour entry"
		;;
	*)
		fail "unknown mode $mode"
		continue
		;;
	esac
	for s in $SIZES; do
		guest_server "$mode" "$s"
		droce_server "$mode" "$s"
	done
done

io_shutdown_guest
if [ -n "$TCPDUMP_PID" ]; then
	sleep 1
	io_kill_pid "$TCPDUMP_PID"
	TCPDUMP_PID=
fi
echo "interop rc_pingpong: $RUN run(s), $FAILS failure(s), $((SECONDS - START))s"
[ $FAILS -eq 0 ]
