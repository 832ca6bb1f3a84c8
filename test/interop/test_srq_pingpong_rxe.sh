#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Interop: droce's examples/srq_pingpong against rdma-core's real
# ibv_srq_pingpong on Linux Soft-RoCE (rdma_rxe) in a QEMU (TCG) guest, both
# ways round: several RC QPs sharing one SRQ on each side, -g 1 -m 1024 -c.
# One guest boot serves every run (lib.sh: io_suite_init).
#
# usage: test_srq_pingpong_rxe.sh <srq_pingpong>
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Each run checks: both exit 0; each side printed one local and one remote
# address line per QP; in order, each side's remote lines (QPN, PSN, GID)
# are the other's local ones; the GIDs are ::ffff:198.18.0.11 (rxe) and
# ::ffff:198.18.0.1 (droce); "bytes in" is 2 * size * iters and "iters in"
# is iters on both sides; the server's -c found no bad page; rxe0's error
# counters did not move (lib.sh: io_hw_check).
#
# Modes as test_rc_pingpong_rxe.sh: engine and app (neighbour pinned).
#
# Environment (optional): DROCE_INTEROP_SIZES (default "64 4096 16384 65536"),
# DROCE_INTEROP_QPS (-q for those, default 4), DROCE_INTEROP_ITERS (-n,
# iterations in total over the QPs, default 20), DROCE_INTEROP_MODES
# (default "engine app"), and those of lib.sh (DROCE_INTEROP_SKIP,
# DROCE_INTEROP_KEEP, DROCE_INTEROP_NS, DROCE_INTEROP_CACHE,
# DROCE_TEST_EAL_MEM). Each mode also runs -q 16 (the default) at 1024 bytes.

set -u

BIN=${1:?usage: $0 <srq_pingpong>}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SIZES=${DROCE_INTEROP_SIZES:-64 4096 16384 65536}
QPS=${DROCE_INTEROP_QPS:-4}
ITERS=${DROCE_INTEROP_ITERS:-20}
MODES=${DROCE_INTEROP_MODES:-engine app}
PORT=18517

unset DROCE_EAL_ARGS DROCE_DEVICES
IO_LOG_PREFIX=interop-srq
IO_BUDGET=160		# seconds after the guest build (a run takes about 60)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

if [ ! -x "$BIN" ] && [ -z "${DROCE_INTEROP_SKIP:-}" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi

io_suite_init

ADDR_RE='LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-fA-F:.]+'

# addrs <out> <local|remote>: "QPN PSN GID" per line, in order
addrs() {
	sed -nE "s/^  $2 address: +LID 0x[0-9a-f]+, QPN (0x[0-9a-f]+), PSN (0x[0-9a-f]+), GID (.*)\$/\\1 \\2 \\3/p" "$1"
}

# check_side <out> <size> <qps> <label> <own GID>
check_side() {
	local out=$1 size=$2 qps=$3 label=$4 line n
	n=$(grep -Ec "^  local address:  $ADDR_RE\$" "$out")
	[ "$n" = "$qps" ] || io_fail "$label: $n good 'local address' line(s), expected $qps"
	n=$(grep -Ec "^  remote address: $ADDR_RE\$" "$out")
	[ "$n" = "$qps" ] || io_fail "$label: $n good 'remote address' line(s), expected $qps"
	n=$(addrs "$out" local | awk -v g="$5" '$3 != g' | wc -l)
	[ "$n" = 0 ] || io_fail "$label: $n local GID(s) other than $5"
	n=$(addrs "$out" local | awk '{print $1}' | sort -u | wc -l)
	[ "$n" = "$qps" ] || io_fail "$label: $n distinct local QPNs for $qps QPs"
	line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds = ' "$out")
	n=${line%% *}
	[ "$n" = $((2 * size * ITERS)) ] ||
		io_fail "$label: '${line:-no bytes line}', expected $((2 * size * ITERS)) bytes"
	line=$(grep -E '^[0-9]+ iters in [0-9.]+ seconds = ' "$out")
	n=${line%% *}
	[ "$n" = "$ITERS" ] ||
		io_fail "$label: '${line:-no iters line}', expected $ITERS iters"
	if grep -q 'invalid data in page' "$out"; then
		io_fail "$label: data check: $(grep -c 'invalid data' "$out") bad page(s)"
	fi
}

# check_pair <label> <size> <qps> <dir> <server: rxe|droce>
check_pair() {
	local label=$1 size=$2 qps=$3 dir=$4 s=$5 c before=$IO_FAILS src crc
	if [ "$s" = rxe ]; then
		c=droce; src=$IO_GRC; crc=$IO_DRC
	else
		c=rxe; src=$IO_DRC; crc=$IO_GRC
	fi
	[ "$src" -eq 0 ] || io_fail "$label: $s server exit code $src$([ "$src" -eq 124 ] && echo ' (still running: killed)')"
	[ "$crc" -eq 0 ] || io_fail "$label: $c client exit code $crc"
	if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ]; then
		check_side "$dir/rxe.out" "$size" "$qps" "$label (rxe)" "::ffff:$IO_GUEST_ROCE_IP"
		check_side "$dir/droce.out" "$size" "$qps" "$label (droce)" "::ffff:$IO_DROCE_IP"
		[ "$(addrs "$dir/rxe.out" remote)" = "$(addrs "$dir/droce.out" local)" ] ||
			io_fail "$label: rxe's remote addresses are not droce's local ones"
		[ "$(addrs "$dir/droce.out" remote)" = "$(addrs "$dir/rxe.out" local)" ] ||
			io_fail "$label: droce's remote addresses are not rxe's local ones"
	fi
	io_hw_check "$dir/rxe.out" "$label"
	if [ $IO_FAILS -ne "$before" ]; then
		io_show "$dir"/*.out "$dir"/*.err
		io_guest_diag
	else
		printf 'ok   %-50s %s\n' "$label" "$(grep ' iters in ' "$dir/droce.out")"
	fi
}

run() { # <mode> <size> <qps> <rxe|droce: the server>
	local mode=$1 size=$2 qps=$3 label dir args
	dir=$IO_WORK/run$((IO_RUN + 1))
	args="-p $PORT -g 1 -m 1024 -n $ITERS -c -q $qps -s $size"
	if [ "$4" = rxe ]; then
		label="$mode size $size -q $qps: rxe server, droce client"
	else
		label="$mode size $size -q $qps: droce server, rxe client"
	fi
	if [ "$(io_remaining)" -le 5 ]; then
		io_fail "$label: out of time budget (${IO_BUDGET}s)"
		return
	fi
	if [ "$4" = rxe ]; then
		# shellcheck disable=SC2086
		io_pair_rxe_server "$mode" "$dir" "$PORT" \
			"ibv_srq_pingpong -d rxe0 $args" \
			"$BIN" $args "$IO_GUEST_OOB_IP" ||
			{ io_fail "$label: the guest job did not start"; return; }
	else
		# shellcheck disable=SC2086
		if ! io_pair_droce_server "$mode" "$dir" "$PORT" \
			"ibv_srq_pingpong -d rxe0 $args $IO_HOST_OOB_IP" \
			"$BIN" $args; then
			io_fail "$label: droce's server does not listen on $PORT"
			io_show "$dir"/*
			return
		fi
	fi
	check_pair "$label" "$size" "$qps" "$dir" "$4"
}

for mode in $MODES; do
	io_mode_prepare "$mode" || continue
	for s in $SIZES; do
		run "$mode" "$s" "$QPS" rxe
		run "$mode" "$s" "$QPS" droce
	done
	run "$mode" 1024 16 rxe
	run "$mode" 1024 16 droce
done

io_suite_end srq_pingpong
