#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# End-to-end test of examples/rc_pingpong: a server and a client process,
# each with its own EAL, joined by a DPDK memif pair; the out-of-band
# exchange goes over 127.0.0.1 on a free TCP port (see pingpong_lib.sh).
#
# usage: rc_pingpong_test.sh <rc_pingpong> <memif_probe> <mode>
#   mode: mtu256 | mtu1024 | mtu4096 | new-send | timestamps | no-server |
#         unsupported
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Environment (optional):
#   DROCE_TEST_ITERS     -n for the pair runs (default 200)
# and those of pingpong_lib.sh:
#   DROCE_TEST_EAL_MEM   EAL memory options (default: --in-memory when
#                        hugepages are free, else --no-huge --no-shconf -m 512)
#   DROCE_TEST_GID_INDEX -g for both sides (default 1: the IPv4-mapped GID)
#   DROCE_TEST_KEEP      keep the per-run logs (directory printed at the end)
#   DROCE_TEST_SERVER_BIN, DROCE_TEST_CLIENT_BIN
#                        run another program on that side instead, e.g.
#                        rdma-core's rc_pingpong.c built against libdroce,
#                        to check that the two interoperate

BIN=${1:?usage: $0 <rc_pingpong> <memif_probe> <mode>}
PROBE=${2:?usage: $0 <rc_pingpong> <memif_probe> <mode>}
MODE=${3:?usage: $0 <rc_pingpong> <memif_probe> <mode>}
NAME=rcpp
ITERS=${DROCE_TEST_ITERS:-200}

case $MODE in
# seconds for the whole invocation (meson's timeouts are a few more; 25 s
# of each are for one repeat of a stalled run, see pingpong_lib.sh)
mtu256|mtu1024|mtu4096) BUDGET=55 ;;
new-send)        BUDGET=45 ;;
timestamps)      BUDGET=37 ;;
no-server)       BUDGET=33 ;;
unsupported)     BUDGET=40 ;;
*) echo "unknown mode $MODE" >&2; exit 1 ;;
esac

# shellcheck source=test/examples/pingpong_lib.sh
. "$(dirname "$0")/pingpong_lib.sh"

# check_side <out file> <size> <iters> <role>: output lines and numbers
ADDR_RE='LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-fA-F:.]+'
check_side() {
	local out=$1 size=$2 iters=$3 role=$4 ok=0
	grep -Eq "^  local address:  $ADDR_RE\$" "$out" ||
		{ fail "$role: no/bad 'local address' line"; ok=1; }
	grep -Eq "^  remote address: $ADDR_RE\$" "$out" ||
		{ fail "$role: no/bad 'remote address' line"; ok=1; }
	check_result "$out" "$size" "$iters" "$role" || ok=1
	return $ok
}

# field <out file> <local|remote> <QPN|PSN|GID>
field() {
	sed -nE "s/^  $2 address: +.*$3 ([^,]+).*/\\1/p" "$1" | head -n 1
}

# pair <label> <size> <mtu> <server extra args> <client extra args>
# Both devices get mtu=<mtu> (droce's default port MTU is 1024, and a path
# MTU above the port's is refused like on any device).
pair() {
	local label=$1 size=$2 mtu=$3 before=$FAILS f
	run_pair "$label" "$mtu" "-s $size -m $mtu -n $ITERS -c $4" \
		"-s $size -m $mtu -n $ITERS -c $5"
	# nothing ran to the end (run_pair said why)
	[ $FAILS -eq "$before" ] || return

	[ $SRC -eq 0 ] || fail "$label: server exit code $SRC$(exit_note $SRC)"
	[ $CRC -eq 0 ] || fail "$label: client exit code $CRC$(exit_note $CRC)"
	if [ $SRC -eq 0 ] && [ $CRC -eq 0 ]; then
		check_side "$RUN_DIR/server.out" "$size" "$ITERS" "$label server"
		check_side "$RUN_DIR/client.out" "$size" "$ITERS" "$label client"
		# each side must have seen the other's address
		for f in QPN PSN GID; do
			[ "$(field "$RUN_DIR/server.out" remote $f)" = \
			  "$(field "$RUN_DIR/client.out" local $f)" ] ||
				fail "$label: server's remote $f != client's local $f"
			[ "$(field "$RUN_DIR/client.out" remote $f)" = \
			  "$(field "$RUN_DIR/server.out" local $f)" ] ||
				fail "$label: client's remote $f != server's local $f"
		done
	fi
	if [ $FAILS -ne "$before" ]; then
		show_logs "$RUN_DIR"
	else
		printf 'ok   %-36s %s\n' "$label" \
			"$(grep -E ' iters in ' "$RUN_DIR/client.out")"
	fi
}

SIZES="1 1023 1024 1025 4096 65536"

case $MODE in
mtu256|mtu1024|mtu4096)
	probe_memif
	mtu=${MODE#mtu}
	need_frame "$mtu" 0	# RC: no extended transport header
	for s in $SIZES; do
		pair "size $s mtu $mtu" "$s" "$mtu" "" ""
	done
	;;
new-send)
	probe_memif
	pair "size 1 mtu 1024 -N both" 1 1024 "-N" "-N"
	pair "size 1025 mtu 1024 -N server" 1025 1024 "-N" ""
	pair "size 65536 mtu 1024 -N client" 65536 1024 "" "-N"
	# -L: both stay 300 ms after the last exchange (for a peer whose
	# last ACK was lost: the loss interop test's final-ACK race)
	pair "size 4096 mtu 1024 -L 300 both" 4096 1024 "-L 300" "-L 300"
	for f in server client; do
		grep -qx 'lingered 300 ms after the last exchange' \
			"$RUN_DIR/$f.out" 2>/dev/null ||
			fail "-L 300: no 'lingered' line from the $f"
	done
	;;
timestamps)
	# -t: ibv_create_cq_ex and the ibv_start_poll family, when the device
	# offers completion timestamps
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	nots="The device isn't completion timestamp capable"
	run_one "-t capability" 1 \
		"^($nots|Couldn't connect to 127\\.0\\.0\\.1:$port)\$" \
		-t -p "$port" 127.0.0.1 || exit 1
	if grep -q "^$nots" "$RUN_DIR/client.err"; then
		echo "SKIPPED: $nots"
		exit 77
	fi
	probe_memif
	before=$FAILS
	pair "size 4096 mtu 1024 -t both" 4096 1024 "-t" "-t"
	[ $FAILS -eq "$before" ] && for f in server client; do
		for w in Max Min; do
			grep -Eq "^$w receive completion clock cycles = [0-9]+\$" \
				"$RUN_DIR/$f.out" ||
				fail "-t: $f: no '$w receive completion clock cycles' line"
		done
		grep -Eq '^Average receive completion clock cycles = [0-9]+\.[0-9]{6}$' \
			"$RUN_DIR/$f.out" ||
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

finish
