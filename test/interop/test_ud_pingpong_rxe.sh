#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Interop: droce's examples/ud_pingpong against rdma-core's real
# ibv_ud_pingpong on Linux Soft-RoCE (rdma_rxe) in a QEMU (TCG) guest, both
# ways round, datagram sizes up to rxe's active path MTU (1024 on the
# guest's 1500-byte eth0), -g 1 and -c on both sides. One guest boot serves
# every run (lib.sh: io_suite_init).
#
# usage: test_ud_pingpong_rxe.sh <ud_pingpong>
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Each run checks: both exit 0; "bytes in" is 2 * size * iters and "iters
# in" is iters on both sides; the server's -c check found no bad page;
# each side's remote address line (QPN, PSN, GID) is the other's local one,
# and the GIDs are ::ffff:198.18.0.11 (rxe) and ::ffff:198.18.0.1 (droce);
# rxe0's error counters did not move (lib.sh: io_hw_check).
#
# Modes as test_rc_pingpong_rxe.sh: engine (droce's engine on lcore 1) and
# app (lcore=app, the guest's neighbour entry for droce pinned: rxe's server
# resolves droce's MAC in ibv_create_ah() while droce's client waits in
# read() for the server's address).
#
# Environment (optional): DROCE_INTEROP_SIZES (default "1 60 61 512 1024";
# sizes above the active MTU are dropped), DROCE_INTEROP_ITERS (-n, default
# 10), DROCE_INTEROP_MODES (default "engine app"), and those of lib.sh:
# DROCE_INTEROP_SKIP, DROCE_INTEROP_KEEP, DROCE_INTEROP_NS (use a running
# boot-peer.sh), DROCE_INTEROP_CACHE, DROCE_TEST_EAL_MEM.

set -u

BIN=${1:?usage: $0 <ud_pingpong>}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SIZES=${DROCE_INTEROP_SIZES:-1 60 61 512 1024}
ITERS=${DROCE_INTEROP_ITERS:-10}
MODES=${DROCE_INTEROP_MODES:-engine app}
PORT=18516

unset DROCE_EAL_ARGS DROCE_DEVICES
IO_LOG_PREFIX=interop-ud
IO_BUDGET=140		# seconds after the guest build (a run takes about 50)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

if [ ! -x "$BIN" ] && [ -z "${DROCE_INTEROP_SKIP:-}" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi

io_suite_init

# ud_pingpong prints its local address with a colon before "GID", the remote
# one with a comma (both the original and droce's)
LOCAL_RE='^  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID [0-9a-fA-F:.]+$'
REMOTE_RE='^  remote address: LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-fA-F:.]+$'

# field <out> <local|remote> <QPN|PSN|GID>
field() {
	sed -nE "s/^  $2 address: +LID 0x[0-9a-f]+, QPN (0x[0-9a-f]+), PSN (0x[0-9a-f]+)[:,] GID (.*)\$/\\1 \\2 \\3/p" "$1" |
		head -n 1 | awk -v f="$3" '{ print (f == "QPN" ? $1 : f == "PSN" ? $2 : $3) }'
}

# check_side <out> <size> <label> <own GID>
check_side() {
	local out=$1 size=$2 label=$3 line n
	grep -Eq "$LOCAL_RE" "$out" || io_fail "$label: no/bad 'local address' line"
	grep -Eq "$REMOTE_RE" "$out" || io_fail "$label: no/bad 'remote address' line"
	[ "$(field "$out" local GID)" = "$4" ] ||
		io_fail "$label: local GID '$(field "$out" local GID)', expected $4"
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

# check_pair <label> <size> <dir> <server> <client> (server/client: rxe|droce)
check_pair() {
	local label=$1 size=$2 dir=$3 s=$4 c=$5 before=$IO_FAILS f src crc
	if [ "$s" = rxe ]; then src=$IO_GRC; crc=$IO_DRC; else src=$IO_DRC; crc=$IO_GRC; fi
	[ "$src" -eq 0 ] || io_fail "$label: $s server exit code $src$([ "$src" -eq 124 ] && echo ' (still running: killed)')"
	[ "$crc" -eq 0 ] || io_fail "$label: $c client exit code $crc"
	if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ]; then
		check_side "$dir/rxe.out" "$size" "$label (rxe)" "::ffff:$IO_GUEST_ROCE_IP"
		check_side "$dir/droce.out" "$size" "$label (droce)" "::ffff:$IO_DROCE_IP"
		for f in QPN PSN GID; do
			[ "$(field "$dir/rxe.out" remote $f)" = "$(field "$dir/droce.out" local $f)" ] ||
				io_fail "$label: rxe's remote $f != droce's local $f"
			[ "$(field "$dir/droce.out" remote $f)" = "$(field "$dir/rxe.out" local $f)" ] ||
				io_fail "$label: droce's remote $f != rxe's local $f"
		done
	fi
	io_hw_check "$dir/rxe.out" "$label"
	if [ $IO_FAILS -ne "$before" ]; then
		io_show "$dir"/*.out "$dir"/*.err
		io_guest_diag
	else
		printf 'ok   %-44s %s\n' "$label" "$(grep ' iters in ' "$dir/droce.out")"
	fi
}

PP_ARGS=(-p "$PORT" -g 1 -n "$ITERS" -c)

run() { # <mode> <size> <rxe|droce: the server>
	local mode=$1 size=$2 label dir
	dir=$IO_WORK/run$((IO_RUN + 1))
	if [ "$3" = rxe ]; then
		label="$mode size $size: rxe server, droce client"
	else
		label="$mode size $size: droce server, rxe client"
	fi
	if [ "$(io_remaining)" -le 5 ]; then
		io_fail "$label: out of time budget (${IO_BUDGET}s)"
		return
	fi
	if [ "$3" = rxe ]; then
		io_pair_rxe_server "$mode" "$dir" "$PORT" \
			"ibv_ud_pingpong -d rxe0 ${PP_ARGS[*]} -s $size" \
			"$BIN" "${PP_ARGS[@]}" -s "$size" "$IO_GUEST_OOB_IP" ||
			{ io_fail "$label: the guest job did not start"; return; }
		check_pair "$label" "$size" "$dir" rxe droce
	else
		if ! io_pair_droce_server "$mode" "$dir" "$PORT" \
			"ibv_ud_pingpong -d rxe0 ${PP_ARGS[*]} -s $size $IO_HOST_OOB_IP" \
			"$BIN" "${PP_ARGS[@]}" -s "$size"; then
			io_fail "$label: droce's server does not listen on $PORT"
			io_show "$dir"/*
			return
		fi
		check_pair "$label" "$size" "$dir" droce rxe
	fi
}

sizes=
for s in $SIZES; do
	if [ -n "$IO_RXE_MTU" ] && [ "$s" -gt "$IO_RXE_MTU" ]; then
		echo "note: size $s is above rxe0's active MTU $IO_RXE_MTU; not run"
		continue
	fi
	sizes="$sizes $s"
done

for mode in $MODES; do
	io_mode_prepare "$mode" || continue
	for s in $sizes; do
		run "$mode" "$s" rxe
		run "$mode" "$s" droce
	done
done

io_suite_end ud_pingpong
