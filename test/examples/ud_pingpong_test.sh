#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# End-to-end test of examples/ud_pingpong: a server and a client process,
# each with its own EAL, joined by a DPDK memif pair (see pingpong_lib.sh).
#
# usage: ud_pingpong_test.sh <ud_pingpong> <memif_probe> <mode>
#   mode: mtu1024 | mtu256 | mtu2048 | iters | events | no-gid | errors
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Environment (optional): DROCE_TEST_ITERS (-n, default 200) and those of
# pingpong_lib.sh (DROCE_TEST_EAL_MEM, DROCE_TEST_KEEP,
# DROCE_TEST_GID_INDEX, DROCE_TEST_SERVER_BIN, DROCE_TEST_CLIENT_BIN).

BIN=${1:?usage: $0 <ud_pingpong> <memif_probe> <mode>}
PROBE=${2:?usage: $0 <ud_pingpong> <memif_probe> <mode>}
MODE=${3:?usage: $0 <ud_pingpong> <memif_probe> <mode>}
NAME=udpp
ITERS=${DROCE_TEST_ITERS:-200}

case $MODE in
mtu1024|mtu256|mtu2048) BUDGET=55 ;;
iters)   BUDGET=50 ;;
events)  BUDGET=40 ;;
no-gid)  BUDGET=37 ;;
errors)  BUDGET=40 ;;
*) echo "unknown mode $MODE" >&2; exit 1 ;;
esac

# shellcheck source=test/examples/pingpong_lib.sh
. "$(dirname "$0")/pingpong_lib.sh"

# ud_pingpong prints its local address with a colon before "GID" (as the
# original does), the remote one with a comma.
LOCAL_RE='^  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID [0-9a-fA-F:.]+$'
REMOTE_RE='^  remote address: LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-fA-F:.]+$'

# field <out> <local|remote> <QPN|PSN|GID>
field() {
	sed -nE "s/^  $2 address: +LID 0x[0-9a-f]+, QPN (0x[0-9a-f]+), PSN (0x[0-9a-f]+)[:,] GID (.*)\$/\\1 \\2 \\3/p" "$1" |
		head -n 1 | awk -v f="$3" '{ print (f == "QPN" ? $1 : f == "PSN" ? $2 : $3) }'
}

check_pair() { # <label> <size>
	local label=$1 size=$2 before=$FAILS f role
	[ $SRC -eq 0 ] || fail "$label: server exit code $SRC$(exit_note $SRC)"
	[ $CRC -eq 0 ] || fail "$label: client exit code $CRC$(exit_note $CRC)"
	if [ $SRC -eq 0 ] && [ $CRC -eq 0 ]; then
		for role in server client; do
			grep -Eq "$LOCAL_RE" "$RUN_DIR/$role.out" ||
				fail "$label $role: no/bad 'local address' line"
			grep -Eq "$REMOTE_RE" "$RUN_DIR/$role.out" ||
				fail "$label $role: no/bad 'remote address' line"
			check_result "$RUN_DIR/$role.out" "$size" "$ITERS" \
				"$label $role"
		done
		for f in QPN PSN GID; do
			[ "$(field "$RUN_DIR/server.out" remote $f)" = \
			  "$(field "$RUN_DIR/client.out" local $f)" ] ||
				fail "$label: server's remote $f != client's local $f"
			[ "$(field "$RUN_DIR/client.out" remote $f)" = \
			  "$(field "$RUN_DIR/server.out" local $f)" ] ||
				fail "$label: client's remote $f != server's local $f"
		done
		if [ "$GIDX" = 1 ]; then
			[ "$(field "$RUN_DIR/server.out" local GID)" = "::ffff:$IP_SERVER" ] ||
				fail "$label: server GID $(field "$RUN_DIR/server.out" local GID)"
			[ "$(field "$RUN_DIR/client.out" local GID)" = "::ffff:$IP_CLIENT" ] ||
				fail "$label: client GID $(field "$RUN_DIR/client.out" local GID)"
		fi
	fi
	if [ $FAILS -ne "$before" ]; then
		show_logs "$RUN_DIR"
	else
		printf 'ok   %-36s %s\n' "$label" \
			"$(grep -E ' iters in ' "$RUN_DIR/client.out")"
	fi
}

# pair <label> <device mtu> <size> [extra args for both]
pair() {
	run_pair "$1" "$2" "-s $3 -n $ITERS -c ${4:-}" "-s $3 -n $ITERS -c ${4:-}"
	check_pair "$1" "$3"
}

case $MODE in
mtu1024|mtu256|mtu2048)
	probe_memif
	mtu=${MODE#mtu}
	need_frame "$mtu"
	# 1 and 60 go inline (the QP's max_inline_data), the others not;
	# the port MTU is the largest datagram
	for s in 1 60 61 $((mtu / 2 + 3)) $((mtu - 1)) "$mtu"; do
		pair "size $s, port MTU $mtu" "$mtu" "$s"
	done
	;;
iters)
	probe_memif
	ITERS=1
	pair "size 1000, 1 iteration" 1024 1000
	ITERS=2
	pair "size 0, 2 iterations" 1024 0
	ITERS=5000
	pair "size 64, 5000 iterations" 1024 64
	ITERS=2000
	pair "size 1024, 2000 iterations, -r 4" 1024 1024 "-r 4"
	;;
events)
	# -e: a completion channel; fails as the original on a provider
	# without one, or runs
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	run_one "-e capability" 1 \
		"^(Couldn't create completion channel|Couldn't connect to 127\\.0\\.0\\.1:$port)\$" \
		-g 1 -e -p "$port" 127.0.0.1 || finish
	if grep -q "^Couldn't create completion channel" "$RUN_DIR/client.err"; then
		echo "SKIPPED: no completion channels"
		exit 77
	fi
	probe_memif
	pair "size 512 -e both" 1024 512 "-e"
	run_pair "size 100 -e server only" 1024 "-s 100 -n $ITERS -c -e" \
		"-s 100 -n $ITERS -c"
	check_pair "size 100 -e server only" 100
	;;
no-gid)
	# Without -g the GID exchanged is zero: the peer's AH gets no GRH,
	# which RoCE cannot do. The server fails to create it (as on any
	# RoCE device) and both exit 1.
	probe_memif
	GIDX=-1
	run_pair "no -g" 1024 "-s 64 -n 10" "-s 64 -n 10"
	[ $SRC -eq 1 ] || fail "no -g: server exit $SRC$(exit_note $SRC), expected 1"
	[ $CRC -eq 1 ] || fail "no -g: client exit $CRC$(exit_note $CRC), expected 1"
	grep -q "^Failed to create AH$" "$RUN_DIR/server.err" ||
		fail "no -g: server did not say 'Failed to create AH'"
	grep -q "^Couldn't connect to remote QP$" "$RUN_DIR/server.err" ||
		fail "no -g: server did not say 'Couldn't connect to remote QP'"
	grep -q "^Couldn't read/write remote address$" "$RUN_DIR/client.err" ||
		fail "no -g: client did not say 'Couldn't read/write remote address'"
	grep -Eq '^  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID ::$' \
		"$RUN_DIR/server.out" || fail "no -g: server's local GID should print as ::"
	if [ $FAILS -eq 0 ]; then
		echo "ok   no -g: server 'Failed to create AH', both exit 1"
	else
		show_logs "$RUN_DIR"
	fi
	;;
errors)
	port=$(free_port) || { echo "FAIL: no free TCP port"; exit 1; }
	# the default port MTU is 1024: a bigger datagram is refused
	run_one "-s 1025 on a 1024 port" 1 \
		'^Requested size larger than port MTU \(1024\)$' \
		-g 1 -s 1025 -p "$port" 127.0.0.1
	run_one "no server on $port" 1 \
		"^Couldn't connect to 127\\.0\\.0\\.1:$port\$" -g 1 -p "$port" 127.0.0.1
	run_one "unknown device" 1 '^IB device nosuchdev not found$' \
		-d nosuchdev 127.0.0.1
	run_one "bad gid index" 1 '^Could not get local gid for gid index 7$' \
		-g 7 -p "$port" 127.0.0.1
	# bad options: the usage on stdout, exit 1
	for args in "-p 70000" "-i 0" "-x" "a b"; do
		RUN=$((RUN + 1))
		# shellcheck disable=SC2086
		timeout 10 "$BIN" $args >"$WORK/usage.out" 2>&1
		rc=$?
		if [ $rc -ne 1 ] || ! grep -q '^Usage:$' "$WORK/usage.out" ||
		   ! grep -q -- '--chk              validate received buffer' "$WORK/usage.out"; then
			fail "'$args': exit $rc, expected 1 with the usage"
			cat "$WORK/usage.out"
		else
			printf 'ok   %-36s %s\n' "'$args'" "usage, exit 1"
		fi
	done
	;;
esac

finish
