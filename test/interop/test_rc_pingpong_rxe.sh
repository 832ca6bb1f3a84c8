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
# Three ways to run droce, all tested:
#   engine  droce's engine on its own lcore (-l 0-1, lcore=1): it answers
#           the guest's ARP while rc_pingpong blocks in its TCP exchange
#   app     lcore=app on one core, the guest's neighbour entry for droce
#           pinned first: rxe resolves the peer's MAC inside
#           ibv_modify_qp(RTR) while droce's program blocks in read()
#   app-arp lcore=app without the pinned entry: droce's keeper thread must
#           answer that ARP (see doc/interop.md)
#
# Environment (optional):
#   DROCE_INTEROP_SKIP=1    skip (e.g. no network for the first build)
#   DROCE_INTEROP_SIZES     message sizes (default "1 64 1024 4096 65536")
#   DROCE_INTEROP_ITERS     -n (default 5: the guest is emulated, TCG)
#   DROCE_INTEROP_MODES     "engine app app-arp" (default) or some of them
#   DROCE_INTEROP_SIZES_4096  sizes at path MTU 4096 (default "4096 12345
#                           65536"; "" for none), in the first of
#                           DROCE_INTEROP_MODES that runs here
#   DROCE_INTEROP_KEEP=1    keep the work directory (logs, console, pcap);
#                           it is always kept when something fails
#   DROCE_INTEROP_CACHE     guest cache (see build-guest.sh)
#   DROCE_TEST_EAL_MEM      EAL memory options (default as the other tests)

set -u

BIN=${1:?usage: $0 <rc_pingpong>}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SIZES=${DROCE_INTEROP_SIZES:-1 64 1024 4096 65536}
ITERS=${DROCE_INTEROP_ITERS:-5}
MODES=${DROCE_INTEROP_MODES:-engine app app-arp}
SIZES_4096=${DROCE_INTEROP_SIZES_4096-4096 12345 65536}
PORT=18515

unset DROCE_EAL_ARGS DROCE_DEVICES
IO_LOG_PREFIX=interop
IO_BUDGET=180		# seconds after the guest build (a run takes about 80)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

if [ ! -x "$BIN" ] && [ -z "${DROCE_INTEROP_SKIP:-}" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi

io_suite_init
fail() { io_fail "$@"; }

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

PP_ARGS=(-p "$PORT" -g 1 -m 1024 -n "$ITERS" -c)
MTU=1024

# result <label> <before> <server out> <client out> <server rc> <client rc>
result() {
	local label=$1 before=$2
	[ "$5" -eq 0 ] || fail "$label: server exit code $5$([ "$5" -eq 124 ] && echo ' (still running: killed)')"
	[ "$6" -eq 0 ] || fail "$label: client exit code $6"
	if [ "$5" -eq 0 ] && [ "$6" -eq 0 ]; then
		check_side "$3" "$size" "$label (server)"
		check_side "$4" "$size" "$label (client)"
		cross "$3" "$4" "$label"
	fi
	io_hw_check "$dir/rxe.out" "$label"
	if [ $IO_FAILS -ne "$before" ]; then
		io_show "$dir"/*.out "$dir"/*.err
		io_guest_diag
	else
		printf 'ok   %-44s %s\n' "$label" "$(grep ' iters in ' "$dir/droce.out")"
	fi
}

# guest_server <mode> <size>: ibv_rc_pingpong server in the guest, droce's
# rc_pingpong client in the namespace
guest_server() {
	local mode=$1 size=$2 label dir before=$IO_FAILS
	label="$mode${MTU_TAG:-} size $size: rxe server, droce client"
	dir=$IO_WORK/run$((IO_RUN + 1))
	if [ "$(io_remaining)" -le 5 ]; then
		fail "$label: out of time budget (${IO_BUDGET}s)"
		return
	fi
	io_pair_rxe_server "$mode" "$dir" "$PORT" \
		"ibv_rc_pingpong -d rxe0 ${PP_ARGS[*]} -s $size" \
		"$BIN" "${PP_ARGS[@]}" -s "$size" "$IO_GUEST_OOB_IP" ||
		{ fail "$label: guest job did not start"; return; }
	result "$label" "$before" "$dir/rxe.out" "$dir/droce.out" $IO_GRC $IO_DRC
}

# droce_server <mode> <size>: droce's rc_pingpong server in the namespace,
# ibv_rc_pingpong client in the guest
droce_server() {
	local mode=$1 size=$2 label dir before=$IO_FAILS
	label="$mode${MTU_TAG:-} size $size: droce server, rxe client"
	dir=$IO_WORK/run$((IO_RUN + 1))
	if [ "$(io_remaining)" -le 5 ]; then
		fail "$label: out of time budget (${IO_BUDGET}s)"
		return
	fi
	if ! io_pair_droce_server "$mode" "$dir" "$PORT" \
		"ibv_rc_pingpong -d rxe0 ${PP_ARGS[*]} -s $size $IO_HOST_OOB_IP" \
		"$BIN" "${PP_ARGS[@]}" -s "$size"; then
		fail "$label: droce server not listening on $PORT"
		io_show "$dir"/*
		return
	fi
	result "$label" "$before" "$dir/droce.out" "$dir/rxe.out" $IO_DRC $IO_GRC
}

# ---------------------------------------------------------------- runs

MODE_4096=
for mode in $MODES; do
	io_mode_prepare "$mode" || continue
	[ -n "$MODE_4096" ] || MODE_4096=$mode
	for s in $SIZES; do
		guest_server "$mode" "$s"
		droce_server "$mode" "$s"
	done
done

# Path MTU 4096: jumbo links, rxe's active MTU 4096, droce's mtu=4096 on
# bigger af_packet frames (lib.sh: io_jumbo, io_droce_env); -m 4096 on
# both sides. Then the capture must hold 4096-byte payloads both ways.
if [ -n "$SIZES_4096" ] && [ -n "$MODE_4096" ]; then
	if ! io_jumbo on; then
		fail "MTU 4096: rxe0 active_mtu '$IO_RXE_MTU' after MTU 9000 on its netdev"
	else
		io_mode_prepare "$MODE_4096" >/dev/null
		PP_ARGS=(-p "$PORT" -g 1 -m 4096 -n "$ITERS" -c)
		MTU_TAG=" mtu 4096"
		for s in $SIZES_4096; do
			guest_server "$MODE_4096" "$s"
			droce_server "$MODE_4096" "$s"
		done
		io_jumbo_check_capture "rc_pingpong mtu 4096"
	fi
	io_jumbo off || fail "MTU back to 1500: rxe0 active_mtu '$IO_RXE_MTU'"
fi

io_suite_end rc_pingpong
