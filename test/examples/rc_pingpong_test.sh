#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# End-to-end test of examples/rc_pingpong: a server and a client process,
# each with its own EAL, joined by a DPDK memif pair; the out-of-band
# exchange goes over 127.0.0.1 on a free TCP port.
#
# usage: rc_pingpong_test.sh <rc_pingpong> <memif_probe> <mode>
#   mode: mtu256 | mtu1024 | mtu4096 | new-send | timestamps | no-server |
#         unsupported
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Environment (optional):
#   DROCE_TEST_EAL_MEM   EAL memory options (default: --in-memory when
#                        hugepages are free, else --no-huge --no-shconf -m 512)
#   DROCE_TEST_GID_INDEX -g for both sides (default 1: the IPv4-mapped GID)
#   DROCE_TEST_ITERS     -n for the pair runs (default 200)
#   DROCE_TEST_KEEP      keep the per-run logs (directory printed at the end)
#   DROCE_TEST_SERVER_BIN, DROCE_TEST_CLIENT_BIN
#                        run another program on that side instead, e.g.
#                        rdma-core's rc_pingpong.c built against libdroce,
#                        to check that the two interoperate

set -u

BIN=${1:?usage: $0 <rc_pingpong> <memif_probe> <mode>}
PROBE=${2:?usage: $0 <rc_pingpong> <memif_probe> <mode>}
MODE=${3:?usage: $0 <rc_pingpong> <memif_probe> <mode>}

# the environment of the runs is set explicitly below
unset DROCE_EAL_ARGS DROCE_DEVICES

ITERS=${DROCE_TEST_ITERS:-200}
SERVER_BIN=${DROCE_TEST_SERVER_BIN:-$BIN}
CLIENT_BIN=${DROCE_TEST_CLIENT_BIN:-$BIN}
GIDX=${DROCE_TEST_GID_INDEX:-1}
IP_SERVER=198.18.0.1
IP_CLIENT=198.18.0.2
START=$SECONDS

case $MODE in
# seconds for the whole invocation (meson's timeouts are a few more; all of
# them together stay under three minutes)
mtu256|mtu1024|mtu4096) BUDGET=30 ;;
new-send)        BUDGET=20 ;;
timestamps)      BUDGET=12 ;;
no-server)       BUDGET=8 ;;
unsupported)     BUDGET=15 ;;
*) echo "unknown mode $MODE" >&2; exit 1 ;;
esac

# ---------------------------------------------------------------- cleanup

WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-rcpp-$MODE.XXXXXX") || exit 1
# DPDK 22.11's memif puts its socket in the abstract namespace by default
# (no file); the name still has to be unique, and the rm below is for the
# file a socket-abstract=no setup would leave.
SOCK=/tmp/droce-memif-$$.sock
PREFIX_A=drtA$$
PREFIX_B=drtB$$
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		# timeout(1) forwards the TERM; give the child a moment, then KILL
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PIDS=()
	rm -f "$SOCK" "$SOCK".probe
	local d
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

FAILS=0
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

# seconds left for this invocation, at least 1
remaining() {
	local r=$((BUDGET - (SECONDS - START)))
	[ $r -lt 1 ] && r=1
	echo $r
}

# a per-process time limit: at most $1 seconds, within the budget
limit() {
	local r
	r=$(remaining)
	[ "$1" -lt "$r" ] && r=$1
	echo "$r"
}

# ------------------------------------------------------------- environment

if [ ! -x "$BIN" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi

if [ -n "${DROCE_TEST_EAL_MEM:-}" ]; then
	EAL_MEM=$DROCE_TEST_EAL_MEM
else
	hp_free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo 2>/dev/null)
	hp_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo 2>/dev/null)
	if [ "${hp_free:-0}" -gt 0 ] &&
	   [ $(( ${hp_free:-0} * ${hp_kb:-0} )) -ge $((1024 * 1024)) ]; then
		EAL_MEM="--in-memory"
	else
		EAL_MEM="--no-huge --no-shconf -m 512"
	fi
fi
LOG="--log-level=*:warning"

# Server on core 0, client on core 1 (each busy-polls its own core).
if [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then
	CORE_B=1
else
	CORE_B=0
fi

STDBUF=()
command -v stdbuf >/dev/null 2>&1 && STDBUF=(stdbuf -oL -eL)

# A TCP port nobody uses (listening or not) right now.
port_in_use() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p {f=1}
			  END {exit !f}' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port() {
	local p _
	for _ in $(seq 1 200); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		port_in_use "$p" || { echo "$p"; return 0; }
	done
	return 1
}
port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && $4 == "0A" &&
			  substr($2, length($2) - 4) == p {f=1}
			  END {exit !f}' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

eal_args() { # <core> <file prefix> [vdev]
	echo "-l $1 $EAL_MEM --no-pci --file-prefix $2 $LOG${3:+ --vdev=$3}"
}

# ------------------------------------------------------------------ probe

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

# A RoCEv2 packet with a full path-MTU payload needs at least
# Ethernet 14 + IP 20 + UDP 8 + BTH 12 + payload + ICRC 4 + FCS 4 bytes.
need_frame() { # <path mtu>
	local need=$(($1 + 14 + 20 + 8 + 12 + 4 + 4))
	if [ "$MAX_FRAME" -gt 0 ] && [ "$MAX_FRAME" -lt $need ]; then
		echo "SKIPPED: the memif PMD takes frames of at most $MAX_FRAME bytes;" \
		     "path MTU $1 needs $need or more"
		exit 77
	fi
}

# -------------------------------------------------------------- pair runs

RUN=0
show_logs() { # <dir>
	local f
	for f in "$1"/server.out "$1"/server.err "$1"/client.out "$1"/client.err; do
		[ -s "$f" ] || continue
		echo "---- $f"
		tail -n 25 "$f"
	done
}

# check_side <out file> <size> <iters> <role>: output lines and numbers
ADDR_RE='LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-fA-F:.]+'
check_side() {
	local out=$1 size=$2 iters=$3 role=$4 ok=0 line n
	grep -Eq "^  local address:  $ADDR_RE\$" "$out" ||
		{ fail "$role: no/bad 'local address' line"; ok=1; }
	grep -Eq "^  remote address: $ADDR_RE\$" "$out" ||
		{ fail "$role: no/bad 'remote address' line"; ok=1; }
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

exit_note() {
	case $1 in
	124) echo " (timed out)" ;;
	143) echo " (terminated)" ;;
	137) echo " (killed)" ;;
	esac
}

# field <out file> <local|remote> <QPN|PSN|GID>
field() {
	sed -nE "s/^  $2 address: +.*$3 ([^,]+).*/\\1/p" "$1" | head -n 1
}

# run_pair <label> <size> <mtu> <server extra args> <client extra args>
# Both devices get mtu=<mtu> (droce's default port MTU is 1024, and a path
# MTU above the port's is refused like on any device).
run_pair() {
	local label=$1 size=$2 mtu=$3 sargs=$4 cargs=$5
	local dir port spid cpid src crc t0 f
	RUN=$((RUN + 1))
	dir=$WORK/run$RUN
	mkdir -p "$dir"
	rm -f "$SOCK"
	if [ "$(remaining)" -le 2 ]; then
		fail "$label: out of time budget (${BUDGET}s)"
		return
	fi
	port=$(free_port) || { fail "$label: no free TCP port"; return; }

	# shellcheck disable=SC2086
	DROCE_EAL_ARGS="$(eal_args 0 "$PREFIX_A" "net_memif0,role=server,socket=$SOCK")" \
	DROCE_DEVICES="port=net_memif0,ip=$IP_SERVER,mtu=$mtu,lcore=app" \
	timeout -k 3 "$(limit 20)" "${STDBUF[@]}" "$SERVER_BIN" -p "$port" \
		-g "$GIDX" -s "$size" -m "$mtu" -n "$ITERS" -c $sargs \
		>"$dir/server.out" 2>"$dir/server.err" &
	spid=$!
	PIDS+=("$spid")

	# the client may only start once the server listens (and so has its
	# memif socket and its QP)
	t0=$SECONDS
	until port_listening "$port"; do
		if ! kill -0 "$spid" 2>/dev/null; then
			wait "$spid"; src=$?
			fail "$label: server exited ($src) before listening"
			show_logs "$dir"
			return
		fi
		if [ $((SECONDS - t0)) -ge 15 ] || [ "$(remaining)" -le 1 ]; then
			fail "$label: server not listening on $port after $((SECONDS - t0))s"
			show_logs "$dir"
			return
		fi
		sleep 0.05
	done

	# shellcheck disable=SC2086
	DROCE_EAL_ARGS="$(eal_args "$CORE_B" "$PREFIX_B" "net_memif0,role=client,socket=$SOCK")" \
	DROCE_DEVICES="port=net_memif0,ip=$IP_CLIENT,mtu=$mtu,lcore=app" \
	timeout -k 3 "$(limit 20)" "${STDBUF[@]}" "$CLIENT_BIN" -p "$port" \
		-g "$GIDX" -s "$size" -m "$mtu" -n "$ITERS" -c $cargs 127.0.0.1 \
		>"$dir/client.out" 2>"$dir/client.err" &
	cpid=$!
	PIDS+=("$cpid")

	wait "$cpid"; crc=$?
	if [ $crc -ne 0 ]; then
		# a failed client may leave the server waiting for ever
		t0=$SECONDS
		while kill -0 "$spid" 2>/dev/null && [ $((SECONDS - t0)) -lt 3 ]; do
			sleep 0.1
		done
		kill -TERM "$spid" 2>/dev/null
	fi
	wait "$spid"; src=$?
	PIDS=()
	rm -f "$SOCK"

	local before=$FAILS
	[ $src -eq 0 ] || fail "$label: server exit code $src$(exit_note $src)"
	[ $crc -eq 0 ] || fail "$label: client exit code $crc$(exit_note $crc)"
	if [ $src -eq 0 ] && [ $crc -eq 0 ]; then
		check_side "$dir/server.out" "$size" "$ITERS" "$label server"
		check_side "$dir/client.out" "$size" "$ITERS" "$label client"
		# each side must have seen the other's address
		for f in QPN PSN GID; do
			[ "$(field "$dir/server.out" remote $f)" = \
			  "$(field "$dir/client.out" local $f)" ] ||
				fail "$label: server's remote $f != client's local $f"
			[ "$(field "$dir/client.out" remote $f)" = \
			  "$(field "$dir/server.out" local $f)" ] ||
				fail "$label: client's remote $f != server's local $f"
		done
	fi
	if [ $FAILS -ne $before ]; then
		show_logs "$dir"
	else
		printf 'ok   %-32s %s\n' "$label" \
			"$(grep -E ' iters in ' "$dir/client.out")"
	fi
}

# ------------------------------------------------------- single-side runs

# run_one <label> <expected rc> <expected stderr regex> <args...>
# One rc_pingpong as a client on the embedded ring pair (no memif needed).
run_one() {
	local label=$1 want_rc=$2 want_re=$3 dir rc
	shift 3
	RUN=$((RUN + 1))
	dir=$WORK/run$RUN
	mkdir -p "$dir"
	DROCE_EAL_ARGS="$(eal_args 0 "$PREFIX_A")" \
	timeout -k 3 "$(limit 20)" "$BIN" "$@" \
		>"$dir/client.out" 2>"$dir/client.err"
	rc=$?
	if [ "$rc" -ne "$want_rc" ] || ! grep -Eq "$want_re" "$dir/client.err"; then
		fail "$label: exit $rc (want $want_rc), stderr should match /$want_re/"
		show_logs "$dir"
		return 1
	fi
	printf 'ok   %-32s %s\n' "$label" "$(grep -E "$want_re" "$dir/client.err" | head -n 1)"
	return 0
}

# ------------------------------------------------------------------- main

SIZES="1 1023 1024 1025 4096 65536"

case $MODE in
mtu256|mtu1024|mtu4096)
	probe_memif
	mtu=${MODE#mtu}
	need_frame "$mtu"
	for s in $SIZES; do
		run_pair "size $s mtu $mtu" "$s" "$mtu" "" ""
	done
	;;
new-send)
	probe_memif
	run_pair "size 1 mtu 1024 -N both" 1 1024 "-N" "-N"
	run_pair "size 1025 mtu 1024 -N server" 1025 1024 "-N" ""
	run_pair "size 65536 mtu 1024 -N client" 65536 1024 "" "-N"
	;;
timestamps)
	# -t: ibv_create_cq_ex and the ibv_start_poll family, when the device
	# offers completion timestamps
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	nots="The device isn't completion timestamp capable"
	run_one "-t capability" 1 \
		"^($nots|Couldn't connect to 127\\.0\\.0\\.1:$port)\$" \
		-t -p "$port" 127.0.0.1 || exit 1
	if grep -q "^$nots" "$WORK/run$RUN/client.err"; then
		echo "SKIPPED: $nots"
		exit 77
	fi
	probe_memif
	before=$FAILS
	run_pair "size 4096 mtu 1024 -t both" 4096 1024 "-t" "-t"
	[ $FAILS -eq "$before" ] && for f in server client; do
		for w in Max Min; do
			grep -Eq "^$w receive completion clock cycles = [0-9]+\$" \
				"$WORK/run$RUN/$f.out" ||
				fail "-t: $f: no '$w receive completion clock cycles' line"
		done
		grep -Eq '^Average receive completion clock cycles = [0-9]+\.[0-9]{6}$' \
			"$WORK/run$RUN/$f.out" ||
			fail "-t: $f: no 'Average receive completion clock cycles' line"
	done
	;;
no-server)
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	run_one "no server on $port" 1 \
		"^Couldn't connect to 127\\.0\\.0\\.1:$port\$" -p "$port" 127.0.0.1
	;;
unsupported)
	# Features droce may lack must fail with the original's message. A
	# device that has the feature gets as far as the TCP connect instead
	# (nobody listens on the port), which is fine too.
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	noconn="Couldn't connect to 127\\.0\\.0\\.1:$port\$"
	run_one "-e (completion channel)" 1 \
		"^(Couldn't create completion channel|$noconn)" \
		-e -p "$port" 127.0.0.1
	run_one "-o (ODP)" 1 \
		"^(The device isn't ODP capable or does not support RC send and receive with ODP|$noconn)" \
		-o -p "$port" 127.0.0.1
	run_one "-t (timestamps)" 1 \
		"^(The device isn't completion timestamp capable|$noconn)" \
		-t -p "$port" 127.0.0.1
	run_one "-j (device memory)" 1 \
		"^(Device doesn't support dm allocation|Device memory is insufficient|$noconn)" \
		-j -p "$port" 127.0.0.1
	# option checks done before any device is touched
	run_one "-o -j" 1 "^DM memory region can't be on demand\$" -o -j 127.0.0.1
	run_one "-P without -o" 1 \
		"^prefetch is valid only with on-demand memory region\$" -P 127.0.0.1
	;;
esac

echo "$MODE: $RUN run(s), $FAILS failure(s), $((SECONDS - START))s"
[ $FAILS -eq 0 ]
