#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What a verbs program that let droce set up from the environment leaves
# behind when it exits (droce's exit-time teardown, lib/rdma/rdma_env.c),
# with test/rdma/exit_teardown.c as the program:
#  - over the embedded ring pair: exits with every object open and a
#    thread still posting and polling (lcore engine, then app-driven), and
#    after destroying everything, end with exit code 0, droce's exit line
#    logged once (none after the program's own droce_cleanup()) and no
#    EAL runtime directory left; a forked child's exit leaves the parent's
#    engine and ports running; SIGTERM (no kernel port: droce leaves the
#    signals alone) ends it at once;
#  - root only, in a network namespace of its own on a veth pair: over
#    net_af_packet the interfaces are promiscuous while the program runs
#    and not after; over net_af_xdp its XDP program is attached while the
#    program runs and gone after (with objects open, after destroying
#    them, and after the program's own droce_cleanup()); the same when
#    SIGTERM or SIGHUP ends the program (by that signal).
#
# usage: exit_teardown_test.sh <exit_teardown binary>
# exit: 0 pass, 1 fail

BIN=$1
PREFIX=etd$$
NS=etd$$
WORK=$(mktemp -d /tmp/exit_teardown.XXXXXX)
FAILS=0
RUNS=0
PID=
LOG="--log-level=*:warning --log-level=droce:info"
MAC_A=02:00:c6:12:00:51
MAC_B=02:00:c6:12:00:52

cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$WORK" /run/dpdk/"${PREFIX}"* 2>/dev/null
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

# go <label> <mode> <eal args> [<devices>]: the program in the background
# (inside the namespace when $IN_NS is set); its output in $OUT
go() {
	local label=$1 mode=$2 eal=$3 devs=$4
	RUNS=$((RUNS + 1))
	OUT=$WORK/$RUNS.out
	echo "--- $label"
	if [ -n "$IN_NS" ]; then
		DROCE_EAL_ARGS="$eal --no-pci $LOG --file-prefix $PREFIX$RUNS" \
		DROCE_DEVICES="$devs" timeout -k 2 30 \
			ip netns exec "$NS" "$BIN" "$mode" >"$OUT" 2>&1 &
	else
		DROCE_EAL_ARGS="$eal --no-pci $LOG --file-prefix $PREFIX$RUNS" \
		DROCE_DEVICES="$devs" timeout -k 2 30 "$BIN" "$mode" >"$OUT" 2>&1 &
	fi
	PID=$!
}

# done_ok <label> <min writes>: the program exited 0 having completed at
# least that many WRITEs, none in error
done_ok() {
	local rc w e
	wait "$PID"
	rc=$?
	PID=
	w=$(sed -n 's/^EXIT_TEARDOWN .* writes=\([0-9]*\).*/\1/p' "$OUT")
	e=$(sed -n 's/^EXIT_TEARDOWN .* errors=\([0-9]*\).*/\1/p' "$OUT")
	if [ $rc -ne 0 ] || [ -z "$w" ]; then
		fail "$1: exit code $rc"
		tail -n 8 "$OUT" | sed 's/^/    /'
		return 1
	fi
	[ "$w" -ge "$2" ] || fail "$1: $w WRITEs completed, want at least $2"
	[ "$e" = 0 ] || fail "$1: $e WRITEs completed in error"
	return 0
}

# logged <label> <pattern> <count>: droce's teardown line, that many times
logged() {
	local c
	c=$(grep -c "$2" "$OUT")
	[ "$c" -eq "$3" ] || {
		fail "$1: \"$2\" logged $c times, want $3"
		tail -n 8 "$OUT" | sed 's/^/    /'
	}
}

# await_holding: until the program says HOLDING (at most 15 s); its pid
# in $HOLD_PID
await_holding() {
	local t=0
	while ! grep -q '^HOLDING' "$OUT" && [ $t -lt 150 ] &&
	      kill -0 "$PID" 2>/dev/null; do
		sleep 0.1
		t=$((t + 1))
	done
	HOLD_PID=$(sed -n 's/^HOLDING pid=\([0-9]*\).*/\1/p' "$OUT")
	[ -n "$HOLD_PID" ]
}

# signalled <label> <signal>: the holding program sent the signal; it must
# end by it (the shell's 128 + its number)
signalled() {
	local rc want
	want=$((128 + $(kill -l "$2")))
	if ! await_holding; then
		fail "$1: the program never held its ports"
		tail -n 8 "$OUT" | sed 's/^/    /'
		return 1
	fi
	kill -s "$2" "$HOLD_PID"
	# (the shell's own line about the signal, to /dev/null)
	{ wait "$PID"; } 2>/dev/null
	rc=$?
	PID=
	[ $rc -eq $want ] || {
		fail "$1: exit status $rc after SIG$2, want $want"
		tail -n 8 "$OUT" | sed 's/^/    /'
		return 1
	}
	return 0
}

# droce's exit handler: engines stopped, the ports over kernel interfaces
# closed (none on the ring pair), nothing else done
EXITED="exit: engines stopped, 0 kernel port(s) closed"
EXITED_KERNEL="exit: engines stopped, 2 kernel port(s) closed"
MEM="--no-huge -m 256 --in-memory"

# rundir_gone <label>: the EAL's (empty) runtime directory removed
rundir_gone() {
	[ "$(id -u)" -ne 0 ] || [ ! -e "/run/dpdk/$PREFIX$RUNS" ] ||
		fail "$1: /run/dpdk/$PREFIX$RUNS left behind"
}

go ring-open-lcore open "-l 0-1 $MEM"
done_ok ring-open-lcore 1000 && logged ring-open-lcore "$EXITED" 1 && rundir_gone ring-open-lcore
go ring-open-app open "-l 0 $MEM"
done_ok ring-open-app 1000 && logged ring-open-app "$EXITED" 1 && rundir_gone ring-open-app
go ring-closed closed "-l 0-1 $MEM"
done_ok ring-closed 1000 && logged ring-closed "$EXITED" 1 && rundir_gone ring-closed
# (a program's own droce_cleanup() leaves the handler nothing to do)
go ring-cleanup cleanup "-l 0-1 $MEM"
done_ok ring-cleanup 1000 && logged ring-cleanup "exit: " 0 && rundir_gone ring-cleanup
# (--no-telemetry: the runtime directory stays empty while it runs)
go ring-fork fork "-l 0-1 $MEM --no-telemetry"
# (the child's exit logs nothing: its handler leaves the parent's alone)
done_ok ring-fork 2000 && logged ring-fork "exit: " 1
# Without a kernel port droce leaves the signals alone: SIGTERM ends the
# program at once, nothing logged.
EXIT_TEARDOWN_HOLD_MS=20000 go ring-sigterm open "-l 0-1 $MEM"
signalled ring-sigterm TERM && logged ring-sigterm "engines stopped" 0

if [ "$(id -u)" -ne 0 ] || ! ip netns add "$NS" 2>/dev/null; then
	echo "kernel ports part skipped: needs root and network namespaces"
elif ! ip netns exec "$NS" ip link add et-a type veth peer name et-b 2>/dev/null; then
	echo "kernel ports part skipped: no veth driver"
else
	IN_NS=1
	nsx() { ip netns exec "$NS" "$@"; }
	for l in et-a et-b; do
		nsx sysctl -qw "net.ipv6.conf.$l.disable_ipv6=1"
		# (net_af_xdp's 2 KiB UMEM frames hold an MTU of 1024)
		nsx ip link set "$l" mtu 3000 up
	done
	# flags <what>: how many of the two interfaces show <what>
	# (PROMISC, or "xdp" for an attached XDP program)
	flags() {
		nsx ip -o link show | grep -E ' et-[ab]@' | grep -c "$1"
	}
	# held <label> <what>: while the program holds its ports open both
	# interfaces show <what>; then it exits well and neither does
	held() {
		if await_holding; then
			[ "$(flags "$2")" = 2 ] ||
				fail "$1: $(flags "$2") of the 2 interfaces show $2 while the ports are open, want 2"
		fi
		done_ok "$1" 1000 || return 1
		[ "$(flags "$2")" = 0 ] ||
			fail "$1: $(flags "$2") of the 2 interfaces still show $2 after the exit"
		nsx ip -o link show | grep -E ' et-[ab]@' | sed 's/^/    /'
		return 0
	}
	# killed <label> <signal> <what>: the holding program ended by the
	# signal (droce's thread released the ports first), logged so, and
	# neither interface shows <what>
	killed() {
		signalled "$1" "$2" || return 1
		logged "$1" "SIG$2: engines stopped, 2 kernel port(s) closed" 1
		[ "$(flags "$3")" = 0 ] ||
			fail "$1: $(flags "$3") of the 2 interfaces still show $3 after SIG$2"
	}
	DEVS_P="port=net_af_packet0,ip=198.18.0.1,mac=$MAC_A;port=net_af_packet1,ip=198.18.0.2,mac=$MAC_B"
	VDEVS_P="--vdev=net_af_packet0,iface=et-a --vdev=net_af_packet1,iface=et-b"
	EXIT_TEARDOWN_HOLD_MS=1500 go af_packet-open open "-l 0-1 $MEM $VDEVS_P" "$DEVS_P"
	held af_packet-open PROMISC && logged af_packet-open "$EXITED_KERNEL" 1
	# Ended by SIGTERM: droce's thread releases the ports, then the signal
	# ends the program.
	EXIT_TEARDOWN_HOLD_MS=20000 go af_packet-sigterm open "-l 0-1 $MEM $VDEVS_P" "$DEVS_P"
	killed af_packet-sigterm TERM PROMISC

	DEVS_X=${DEVS_P//af_packet/af_xdp}
	VDEVS_X=${VDEVS_P//af_packet/af_xdp}
	EXIT_TEARDOWN_HOLD_MS=1500 go af_xdp-open open "-l 0-1 $MEM $VDEVS_X" "$DEVS_X"
	# Skipped, and said so, only where the kernel cannot attach the port.
	if ! await_holding &&
	   grep -qs 'cannot attach the device\|Failed to attach' "$OUT"; then
		wait "$PID"
		PID=
		echo "af_xdp part skipped: the kernel could not attach net_af_xdp: $(grep -s 'af_xdp' "$OUT" | head -2)"
	else
		held af_xdp-open xdp && logged af_xdp-open "$EXITED_KERNEL" 1
		EXIT_TEARDOWN_HOLD_MS=1500 go af_xdp-closed closed "-l 0-1 $MEM $VDEVS_X" "$DEVS_X"
		held af_xdp-closed xdp && logged af_xdp-closed "$EXITED_KERNEL" 1
		# (droce_cleanup's own close: promiscuous mode off too)
		EXIT_TEARDOWN_HOLD_MS=1500 go af_xdp-cleanup cleanup "-l 0-1 $MEM $VDEVS_X" "$DEVS_X"
		held af_xdp-cleanup xdp && logged af_xdp-cleanup "exit: " 0
		# (SIGHUP: a background job of a script ignores SIGINT)
		EXIT_TEARDOWN_HOLD_MS=20000 go af_xdp-sighup open "-l 0-1 $MEM $VDEVS_X" "$DEVS_X"
		killed af_xdp-sighup HUP xdp
		for l in et-a et-b; do
			nsx ip -o link show "$l" | grep -qw PROMISC &&
				fail "af_xdp: $l still promiscuous"
		done
	fi
fi

if [ $FAILS -eq 0 ]; then
	echo "PASS: exit_teardown ($RUNS runs)"
	exit 0
fi
echo "FAIL: exit_teardown ($FAILS failures in $RUNS runs)"
exit 1
