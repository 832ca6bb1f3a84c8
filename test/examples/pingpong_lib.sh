# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
#
# Shared machinery of the rc_pingpong, ud_pingpong and srq_pingpong
# end-to-end tests: a server and a client process, each with its own EAL,
# joined by a DPDK memif pair; the out-of-band exchange over 127.0.0.1 on
# a free TCP port; every process under timeout; a trap that kills what is
# left and removes the memif socket and the EAL runtime directories;
# per-run logs (kept with DROCE_TEST_KEEP=1).
#
# The sourcing script sets, before sourcing:
#   NAME    short name for temporary files ("rcpp", "udpp", "srqpp")
#   BIN     the program under test
#   PROBE   test/examples/memif_probe
#   MODE    the mode it runs
#   BUDGET  seconds for the whole invocation (times DROCE_TEST_TIME_SCALE:
#           time_budget, test/common/test_lib.sh)
# and then uses:
#   probe_memif, need_frame <path mtu> [<extended transport header bytes,
#       default 8 (UD's DETH); 0 for RC>]: memif buffers and droce's
#       port_mtu= for frames past memif's reported limit
#   run_pair <label> <device mtu> "<server args>" "<client args>"
#       -> RUN_DIR (server.out/.err, client.out/.err), SRC, CRC (exit codes);
#          0 when both exited 0
#   run_one <label> <expected rc> <stderr regex> <args...>  (one process
#       on the embedded ring pair, no memif)
#   check_result <out> <size> <iters> <role>  (the result lines)
#   fail <message>, show_logs <dir>, exit_note <rc>, free_port, finish
#
# Environment (optional): DROCE_TEST_EAL_MEM, DROCE_TEST_KEEP,
# DROCE_TEST_GID_INDEX (-g for both sides, default 1: the IPv4-mapped GID),
# DROCE_TEST_SERVER_BIN / DROCE_TEST_CLIENT_BIN (another program on that
# side, e.g. rdma-core's own example built against libdroce).

set -u

# the environment of the runs is set explicitly below
unset DROCE_EAL_ARGS DROCE_DEVICES

SERVER_BIN=${DROCE_TEST_SERVER_BIN:-$BIN}
CLIENT_BIN=${DROCE_TEST_CLIENT_BIN:-$BIN}
GIDX=${DROCE_TEST_GID_INDEX:-1}
IP_SERVER=198.18.0.1
IP_CLIENT=198.18.0.2
START=$SECONDS
FAILS=0
RUN=0

WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-$NAME-$MODE.XXXXXX") || exit 1
# DPDK 22.11's memif keeps its socket in the abstract namespace by default;
# the name must still be unique (the rm is for a socket-abstract=no setup)
SOCK=/tmp/droce-memif-$NAME-$$.sock
PREFIX_A=dp${NAME}A$$
PREFIX_B=dp${NAME}B$$
PIDS=()

cleanup() {
	local p d
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PIDS=()
	rm -f "$SOCK" "$SOCK".probe
	for d in /var/run/dpdk "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk"; do
		rm -rf "${d:?}/${PREFIX_A:?}" "$d/${PREFIX_B:?}" "$d/${PREFIX_A}p" \
			2>/dev/null
	done
	if [ -n "${DROCE_TEST_KEEP:-}" ]; then
		echo "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

remaining() {
	local r=$((BUDGET - (SECONDS - START)))
	[ $r -lt 1 ] && r=1
	echo $r
}

limit() {
	local r
	r=$(remaining)
	[ "$1" -lt "$r" ] && r=$1
	echo "$r"
}

if [ ! -x "$BIN" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi

# port_in_use, port_listening, free_port, eal_mem_hugepages, time_budget
# shellcheck source=test/common/test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../common/test_lib.sh"
BUDGET=$(time_budget "$BUDGET")

EAL_MEM=$(eal_mem_hugepages 512)
LOG="--log-level=*:warning"
# ARP may take a starved peer seconds to answer (default give-up: 1 s)
ARP_MS=5000

# server on core 0, client on core 1 (each busy-polls its own core)
if [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then
	CORE_B=1
else
	CORE_B=0
fi

STDBUF=()
command -v stdbuf >/dev/null 2>&1 && STDBUF=(stdbuf -oL -eL)

eal_args() { # <core> <file prefix> [vdev]
	echo "-l $1 $EAL_MEM --no-pci --file-prefix $2 $LOG${3:+ --vdev=$3}"
}

MAX_FRAME=0
probe_memif() {
	local out rc
	rm -f "$SOCK.probe"
	# shellcheck disable=SC2046
	out=$(timeout -k 2 "$(limit 15)" "$PROBE" net_memif0 \
		$(eal_args 0 "${PREFIX_A}p" \
		  "net_memif0,role=server,socket=$SOCK.probe") 2>&1)
	rc=$?
	rm -f "$SOCK.probe"
	if [ $rc -eq 77 ]; then
		echo "SKIPPED: memif not usable: $(echo "$out" | tail -n 1)"
		exit 77
	elif [ $rc -ne 0 ]; then
		echo "SKIPPED: memif probe failed (rc $rc): $(echo "$out" | tail -n 1)"
		exit 77
	fi
	MAX_FRAME=$(echo "$out" | sed -n 's/^max_rx_pktlen \([0-9]*\)$/\1/p')
	MAX_FRAME=${MAX_FRAME:-0}
}

# A RoCEv2 packet with a full path-MTU payload needs at least Ethernet 14
# + IP 20 + UDP 8 + BTH 12 + extended transport header (UD: DETH 8, RC: 0)
# + payload + ICRC 4 + FCS 4 bytes. Past memif's reported frame limit the
# runs give memif larger buffers and droce the port's real MTU
# (memif_frames, test/common/test_lib.sh).
MEMIF_FRAME_ARGS=
PORT_FRAME_ARGS=
need_frame() { # <path mtu> [<extended transport header bytes, default 8>]
	local need=$(($1 + 14 + 20 + 8 + 12 + ${2:-8} + 4 + 4))
	if [ "$MAX_FRAME" -gt 0 ] && [ "$MAX_FRAME" -lt $need ]; then
		memif_frames "$1"
		echo "note: memif reports frames of at most $MAX_FRAME bytes, path" \
		     "MTU $1 needs $need: memif ${MEMIF_FRAME_ARGS#,}, droce ${PORT_FRAME_ARGS#,}"
	fi
}

show_logs() { # <dir>
	local f
	for f in "$1"/server.out "$1"/server.err "$1"/client.out "$1"/client.err; do
		[ -s "$f" ] || continue
		echo "---- $f"
		tail -n 25 "$f"
	done
}

exit_note() {
	case $1 in
	124) echo " (timed out)" ;;
	143) echo " (terminated)" ;;
	137) echo " (killed)" ;;
	esac
}

# run_pair <label> <device mtu> <server args> <client args>
RUN_DIR=
SRC=0
CRC=0
RETRIED=0
# A run that failed because one side heard nothing from its peer for
# seconds (RC: the retry counter ran out, ~1.8 s of silence at timeout 14,
# retry 7; UD: ARP given up) is run once more. This machine's vCPUs are
# sometimes starved by the host for that long (round trips of 2 ms instead
# of 20 us seen in such windows); a second failure counts, and anything
# else (bad data, wrong counts, a crash) fails at once.
STALL_RE='retry counter exceeded|no answer from'
run_pair() {
	local label=$1 why
	run_pair_once "$@" && return 0
	[ "$RETRIED" -eq 0 ] || return 1
	why=$(cat "$RUN_DIR"/server.err "$RUN_DIR"/client.err \
		   "$RUN_DIR"/server.out "$RUN_DIR"/client.out 2>/dev/null |
	      grep -E -m 1 "$STALL_RE") || return 1
	RETRIED=1
	echo "note: $label: peer silent (\"$why\"), run once more:" \
	     "server exit $SRC, client exit $CRC"
	show_logs "$RUN_DIR"
	run_pair_once "$@"
}

run_pair_once() {
	local label=$1 mtu=$2 sargs=$3 cargs=$4
	local port spid cpid t0
	RUN=$((RUN + 1))
	RUN_DIR=$WORK/run$RUN
	mkdir -p "$RUN_DIR"
	rm -f "$SOCK"
	SRC=1
	CRC=1
	if [ "$(remaining)" -le 2 ]; then
		fail "$label: out of time budget (${BUDGET}s)"
		return 1
	fi
	port=$(free_port) || { fail "$label: no free TCP port"; return 1; }

	# shellcheck disable=SC2086
	DROCE_EAL_ARGS="$(eal_args 0 "$PREFIX_A" "net_memif0,role=server,socket=$SOCK$MEMIF_FRAME_ARGS")" \
	DROCE_DEVICES="port=net_memif0,ip=$IP_SERVER,mtu=$mtu,lcore=app,arp_timeout_ms=$ARP_MS$PORT_FRAME_ARGS" \
	timeout -k 3 "$(limit 20)" "${STDBUF[@]}" "$SERVER_BIN" -p "$port" \
		-g "$GIDX" $sargs >"$RUN_DIR/server.out" 2>"$RUN_DIR/server.err" &
	spid=$!
	PIDS+=("$spid")

	# the client starts once the server listens (it has its memif socket
	# and its QPs then)
	t0=$SECONDS
	until port_listening "$port"; do
		if ! kill -0 "$spid" 2>/dev/null; then
			wait "$spid"; SRC=$?
			PIDS=()
			fail "$label: server exited ($SRC) before listening"
			show_logs "$RUN_DIR"
			return 1
		fi
		if [ $((SECONDS - t0)) -ge 15 ] || [ "$(remaining)" -le 1 ]; then
			fail "$label: server not listening on $port after $((SECONDS - t0))s"
			show_logs "$RUN_DIR"
			return 1
		fi
		sleep 0.05
	done

	# shellcheck disable=SC2086
	DROCE_EAL_ARGS="$(eal_args "$CORE_B" "$PREFIX_B" "net_memif0,role=client,socket=$SOCK$MEMIF_FRAME_ARGS")" \
	DROCE_DEVICES="port=net_memif0,ip=$IP_CLIENT,mtu=$mtu,lcore=app,arp_timeout_ms=$ARP_MS$PORT_FRAME_ARGS" \
	timeout -k 3 "$(limit 20)" "${STDBUF[@]}" "$CLIENT_BIN" -p "$port" \
		-g "$GIDX" $cargs 127.0.0.1 \
		>"$RUN_DIR/client.out" 2>"$RUN_DIR/client.err" &
	cpid=$!
	PIDS+=("$cpid")

	wait "$cpid"; CRC=$?
	if [ $CRC -ne 0 ]; then
		# a failed client may leave the server waiting for ever
		t0=$SECONDS
		while kill -0 "$spid" 2>/dev/null && [ $((SECONDS - t0)) -lt 3 ]; do
			sleep 0.1
		done
		kill -TERM "$spid" 2>/dev/null
	fi
	wait "$spid"; SRC=$?
	PIDS=()
	rm -f "$SOCK"
	[ $SRC -eq 0 ] && [ $CRC -eq 0 ]
}

# run_one <label> <expected rc> <stderr regex> <args...>: one process on the
# embedded ring pair (no memif)
run_one() {
	local label=$1 want_rc=$2 want_re=$3 rc
	shift 3
	RUN=$((RUN + 1))
	RUN_DIR=$WORK/run$RUN
	mkdir -p "$RUN_DIR"
	DROCE_EAL_ARGS="$(eal_args 0 "$PREFIX_A")" \
	timeout -k 3 "$(limit 20)" "$BIN" "$@" \
		>"$RUN_DIR/client.out" 2>"$RUN_DIR/client.err"
	rc=$?
	if [ "$rc" -ne "$want_rc" ] || ! grep -Eq "$want_re" "$RUN_DIR/client.err"; then
		fail "$label: exit $rc (want $want_rc), stderr should match /$want_re/"
		show_logs "$RUN_DIR"
		return 1
	fi
	printf 'ok   %-36s %s\n' "$label" \
		"$(grep -E "$want_re" "$RUN_DIR/client.err" | head -n 1)"
	return 0
}

# The result lines common to all the pingpongs; check_result <out> <size>
# <iters> <role>
check_result() {
	local out=$1 size=$2 iters=$3 role=$4 ok=0 line n
	line=$(grep -E '^[0-9]+ bytes in [0-9]+\.[0-9]{2} seconds = ([0-9]+\.[0-9]{2}|inf) Mbit/sec$' "$out")
	if [ -z "$line" ]; then
		fail "$role: no/bad 'bytes in' line"; ok=1
	else
		n=${line%% *}
		[ "$n" = $((2 * size * iters)) ] ||
			{ fail "$role: $n bytes, expected $((2 * size * iters))"; ok=1; }
	fi
	line=$(grep -E '^[0-9]+ iters in [0-9]+\.[0-9]{2} seconds = [0-9]+\.[0-9]{2} usec/iter$' "$out")
	if [ -z "$line" ]; then
		fail "$role: no/bad 'iters in' line"; ok=1
	else
		n=${line%% *}
		[ "$n" = "$iters" ] ||
			{ fail "$role: $n iters, expected $iters"; ok=1; }
	fi
	if grep -q '^invalid data in page' "$out"; then
		fail "$role: data check: $(grep -c '^invalid data' "$out") bad page(s)"
		ok=1
	fi
	return $ok
}

finish() {
	echo "$MODE: $RUN run(s), $FAILS failure(s), $((SECONDS - START))s"
	[ $FAILS -eq 0 ]
	exit $?
}
