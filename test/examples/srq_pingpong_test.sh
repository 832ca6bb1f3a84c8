#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# End-to-end test of examples/srq_pingpong: a server and a client process,
# each with its own EAL, joined by a DPDK memif pair (see pingpong_lib.sh).
#
# usage: srq_pingpong_test.sh <srq_pingpong> <memif_probe> <mode>
#   mode: mtu1024 | mtu256 | qps | iters | events | errors
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Environment (optional): DROCE_TEST_ITERS (-n, default 200) and those of
# pingpong_lib.sh.

BIN=${1:?usage: $0 <srq_pingpong> <memif_probe> <mode>}
PROBE=${2:?usage: $0 <srq_pingpong> <memif_probe> <mode>}
MODE=${3:?usage: $0 <srq_pingpong> <memif_probe> <mode>}
NAME=srqpp
ITERS=${DROCE_TEST_ITERS:-200}

case $MODE in
mtu1024|mtu256) BUDGET=55 ;;
qps)     BUDGET=50 ;;
iters)   BUDGET=50 ;;
events)  BUDGET=40 ;;
errors)  BUDGET=40 ;;
*) echo "unknown mode $MODE" >&2; exit 1 ;;
esac

# shellcheck source=test/examples/pingpong_lib.sh
. "$(dirname "$0")/pingpong_lib.sh"

ADDR_RE='LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-fA-F:.]+'

# addrs <out> <local|remote>: "QPN PSN GID" per QP, in order
addrs() {
	sed -nE "s/^  $2 address: +LID 0x[0-9a-f]+, QPN (0x[0-9a-f]+), PSN (0x[0-9a-f]+), GID (.*)\$/\\1 \\2 \\3/p" "$1"
}

check_pair() { # <label> <size> <num_qp>
	local label=$1 size=$2 nqp=$3 before=$FAILS role n
	[ $SRC -eq 0 ] || fail "$label: server exit code $SRC$(exit_note $SRC)"
	[ $CRC -eq 0 ] || fail "$label: client exit code $CRC$(exit_note $CRC)"
	if [ $SRC -eq 0 ] && [ $CRC -eq 0 ]; then
		for role in server client; do
			n=$(grep -Ec "^  local address:  $ADDR_RE\$" "$RUN_DIR/$role.out")
			[ "$n" = "$nqp" ] ||
				fail "$label $role: $n 'local address' lines, expected $nqp"
			n=$(grep -Ec "^  remote address: $ADDR_RE\$" "$RUN_DIR/$role.out")
			[ "$n" = "$nqp" ] ||
				fail "$label $role: $n 'remote address' lines, expected $nqp"
			check_result "$RUN_DIR/$role.out" "$size" "$ITERS" \
				"$label $role"
		done
		# QP i of each side is connected to QP i of the other
		[ "$(addrs "$RUN_DIR/server.out" remote)" = \
		  "$(addrs "$RUN_DIR/client.out" local)" ] ||
			fail "$label: server's remote addresses != client's local ones"
		[ "$(addrs "$RUN_DIR/client.out" remote)" = \
		  "$(addrs "$RUN_DIR/server.out" local)" ] ||
			fail "$label: client's remote addresses != server's local ones"
		# distinct QPNs
		n=$(addrs "$RUN_DIR/server.out" local | awk '{print $1}' | sort -u | wc -l)
		[ "$n" = "$nqp" ] || fail "$label: server QPNs not distinct"
		if [ "$GIDX" = 1 ]; then
			addrs "$RUN_DIR/server.out" local | awk -v g="::ffff:$IP_SERVER" \
				'$3 != g {bad=1} END {exit bad}' ||
				fail "$label: server GIDs are not ::ffff:$IP_SERVER"
		fi
	fi
	if [ $FAILS -ne "$before" ]; then
		show_logs "$RUN_DIR"
	else
		printf 'ok   %-36s %s\n' "$label" \
			"$(grep -E ' iters in ' "$RUN_DIR/client.out")"
	fi
}

# pair <label> <size> <num_qp> <path mtu> [extra args for both]
pair() {
	local a="-s $2 -q $3 -m $4 -n $ITERS -c ${5:-}"
	run_pair "$1" 1024 "$a" "$a"
	check_pair "$1" "$2" "$3"
}

case $MODE in
mtu1024|mtu256)
	probe_memif
	mtu=${MODE#mtu}
	for s in 1 1023 1025 4096 65536; do
		pair "size $s, 4 QPs, path MTU $mtu" "$s" 4 "$mtu"
	done
	;;
qps)
	probe_memif
	pair "1 QP" 4096 1 1024
	pair "16 QPs (default)" 4096 16 1024
	pair "100 QPs, rx depth 128" 1500 100 1024 "-r 128"
	pair "8 QPs, rx depth 8" 2000 8 1024 "-r 8"
	;;
iters)
	probe_memif
	ITERS=1
	pair "1 iteration, 16 QPs" 4096 16 1024
	ITERS=3
	pair "3 iterations, 8 QPs" 100 8 1024
	ITERS=5000
	pair "5000 iterations, 16 QPs" 64 16 1024
	ITERS=1000
	pair "1000 iterations, 3 QPs, 20000 bytes" 20000 3 1024
	;;
events)
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	run_one "-e capability" 1 \
		"^(Couldn't create completion channel|Couldn't connect to 127\\.0\\.0\\.1:$port)\$" \
		-g 1 -e -p "$port" 127.0.0.1 || finish
	if grep -q "^Couldn't create completion channel" "$RUN_DIR/client.err"; then
		echo "SKIPPED: no completion channels"
		exit 77
	fi
	probe_memif
	pair "size 4096, 8 QPs, -e" 4096 8 1024 "-e"
	;;
errors)
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	run_one "-q 16 -r 8" 1 \
		'^rx_depth 8 is too small for 16 QPs -- must have at least one receive per QP\.$' \
		-q 16 -r 8 -p "$port" 127.0.0.1
	run_one "-q 256" 1 '^num_qp 256 must be less than 255$' \
		-q 256 -r 500 -p "$port" 127.0.0.1
	run_one "no server on $port" 1 \
		"^Couldn't connect to 127\\.0\\.0\\.1:$port\$" -g 1 -p "$port" 127.0.0.1
	run_one "-o (ODP)" 1 \
		"^(The device isn't ODP capable or does not support RC send, receive and srq with ODP|Couldn't connect to 127\\.0\\.0\\.1:$port)\$" \
		-g 1 -o -p "$port" 127.0.0.1
	run_one "unknown device" 1 '^IB device nosuchdev not found$' \
		-d nosuchdev 127.0.0.1
	for args in "-s 0" "-m 300" "-p 70000" "-x"; do
		RUN=$((RUN + 1))
		# shellcheck disable=SC2086
		timeout 10 "$BIN" $args >"$WORK/usage.out" 2>&1
		rc=$?
		if [ $rc -ne 1 ] || ! grep -q '^Usage:$' "$WORK/usage.out" ||
		   ! grep -q -- '-q, --num-qp=<num>     number of QPs to use (default 16)' "$WORK/usage.out"; then
			fail "'$args': exit $rc, expected 1 with the usage"
			cat "$WORK/usage.out"
		else
			printf 'ok   %-36s %s\n' "'$args'" "usage, exit 1"
		fi
	done
	;;
esac

finish
