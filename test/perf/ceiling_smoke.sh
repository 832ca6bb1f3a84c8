#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# app/droce-perf's droce-ceiling, the raw figures devtools/bench.sh puts
# beside droce's: every mode once, briefly. One process: pps and rtt over
# the net_ring pair (rtt also with --ack), memcpy, crc, clmul (at a width
# droce folds with), stalls (stopped
# for 0.2 s: it must see that). Two processes over a memif pair (no kernel
# side): rx/tx and pong/ping (also with --ack, two frames a way), as
# bench's ceil_pair runs them; both
# sides must exit 0 (they end quietly: neither is in a burst when the other
# exits, see ceiling.c), the measuring side print its line, and the counts
# add up (pong echoes exactly ping's frames). The same over net_af_packet
# on a veth pair (root only): its receiver needs --room for the bigger
# frames. Bad option values (sizes out of range, seconds that are not
# finite, words) are refused before anything runs.
# A stamps build (--stamps) also checks ping's and pong's stamps against
# those counts, and that devtools/stamps.py reads their hops.
# Never a speed beyond > 0.
#
# usage: ceiling_smoke.sh <droce-ceiling> [--stamps]
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>")

NAME=ceiling-smoke
PREFIX=dcs$$
# shellcheck source=test/perf/perf_lib.sh
. "$(dirname "$0")/perf_lib.sh"
need_two_cores "the two-process modes need two cores"
EAL_MEM="--no-huge -m 256"
N=0

# val <file> <key>: key= on the file's CEILING line
val() {
	sed -n "s/^CEILING .* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1
}

positive() {
	awk -v v="${1:-}" 'BEGIN { exit !(v != "" && v + 0 > 0) }'
}

# one <label> <cores> <args...>: a one-process mode; its output in $OUT
one() {
	local label=$1 cores=$2
	shift 2
	N=$((N + 1))
	OUT=$WORK/$N.out
	# shellcheck disable=SC2086
	timeout -k 2 30 "$BIN" -l "$cores" $EAL_MEM --no-pci $LOG \
		--file-prefix "${PREFIX}o$N" -- "$@" >"$OUT" 2>&1 ||
		{ fail "$label: exit code $?"; tail -n 3 "$OUT" | sed 's/^/    /'; return 1; }
}

one pps-1core 0 pps -f 138 -D 0.3 &&
	{ positive "$(val "$OUT" pps)" || fail "pps: $(grep CEILING "$OUT")"; }
one pps-2cores 0-1 pps -f 138 -D 0.3 --cores 2 &&
	{ positive "$(val "$OUT" pps)" || fail "pps --cores 2: $(grep CEILING "$OUT")"; }
one rtt 0 rtt -f 82 -n 2000 &&
	{ positive "$(val "$OUT" rtt_median)" || fail "rtt: $(grep CEILING "$OUT")"; }
one rtt-ack 0 rtt -f 82 --ack 62 -n 2000 &&
	{ positive "$(val "$OUT" rtt_median)" && [ "$(val "$OUT" ack)" = 62 ] ||
		fail "rtt --ack: $(grep CEILING "$OUT")"; }
one memcpy 0 memcpy -s 65536 -D 0.2 &&
	{ positive "$(val "$OUT" Bps)" || fail "memcpy: $(grep CEILING "$OUT")"; }
one crc 0 crc -s 4096 -D 0.2 &&
	{ positive "$(val "$OUT" Bps)" || fail "crc: $(grep CEILING "$OUT")"; }
one clmul 0 clmul -D 0.2 &&
	{ positive "$(val "$OUT" fold_Bps)" && positive "$(val "$OUT" mults_per_tsc)" &&
	  case "$(val "$OUT" bits)" in 128 | 256 | 512) true ;; *) false ;; esac ||
		fail "clmul: $(grep CEILING "$OUT")"; }

# await_ready <pid> <file> <what>: until the process says it is ready
# (its ' ready' line); fails if it dies first or takes over 20 s
await_ready() {
	local t0=$SECONDS
	until grep -q ' ready$' "$2" 2>/dev/null; do
		if ! kill -0 "$1" 2>/dev/null || [ $((SECONDS - t0)) -gt 20 ]; then
			fail "$3 never got ready"
			tail -n 3 "$2" | sed 's/^/    /'
			return 1
		fi
		sleep 0.02
	done
}

# stalls: a spin of 1 s that we stop for 0.2 s once it is ready must see
# that stop (one step of at least 150 ms, at least 15 % lost), and its
# counts must agree with each other
stalls_stopped() {
	local pid per secs n
	N=$((N + 1))
	OUT=$WORK/$N.out
	# shellcheck disable=SC2086
	"$BIN" -l 0 $EAL_MEM --no-pci $LOG --file-prefix "${PREFIX}s$N" \
		-- stalls -D 1 >"$OUT" 2>&1 &
	pid=$!
	PIDS="$PIDS $pid"
	await_ready $pid "$OUT" "stalls:" || return 1
	sleep 0.1
	kill -STOP $pid && sleep 0.2 && kill -CONT $pid
	if ! wait $pid; then
		fail "stalls: exit code $?"
		return 1
	fi
	n=$(val "$OUT" stalls); per=$(val "$OUT" per_s); secs=$(val "$OUT" secs)
	awk -v n="$n" -v per="$per" -v s="$secs" -v lost="$(val "$OUT" lost)" \
	    -v med="$(val "$OUT" median_us)" -v max="$(val "$OUT" max_us)" \
	    'BEGIN { exit !(n >= 1 && s >= 1 && s < 1.5 && lost >= 0.15 &&
			  lost < 1 && max >= 150000 && med >= 5 && med <= max &&
			  per >= (n - 1) / s && per <= (n + 1) / s) }' ||
		fail "stalls: the 0.2 s stop not seen right: $(grep 'CEILING mode=stalls [a-z]*=' "$OUT")"
}
stalls_stopped

# pair <label> <rx-mode> <tx-mode> <args...>: receiver on core 0, sender on
# core 1, as devtools/bench/lib.sh's ceil_pair; outputs in $RXO, $TXO
pair() {
	local label=$1 rxm=$2 txm=$3 sock rpid rrc trc
	shift 3
	N=$((N + 1))
	RXO=$WORK/$N.rx
	TXO=$WORK/$N.tx
	sock=$WORK/memif.$N.sock
	# shellcheck disable=SC2086
	timeout -k 2 40 "$BIN" -l 0 $EAL_MEM --no-pci $LOG --file-prefix "${PREFIX}r$N" \
		--vdev="${VDEV_S:-net_memif0,role=server,socket=$sock}" -- "$rxm" "$@" >"$RXO" 2>&1 &
	rpid=$!
	PIDS="$PIDS $rpid"
	await_ready $rpid "$RXO" "$label: the $rxm side" || return 1
	# shellcheck disable=SC2086
	timeout -k 2 40 "$BIN" -l 1 $EAL_MEM --no-pci $LOG --file-prefix "${PREFIX}t$N" \
		--vdev="${VDEV_C:-net_memif0,role=client,socket=$sock}" -- "$txm" "$@" >"$TXO" 2>&1
	trc=$?
	wait $rpid
	rrc=$?
	if [ $rrc -ne 0 ] || [ $trc -ne 0 ]; then
		fail "$label: exit codes $rxm $rrc, $txm $trc"
		tail -n 3 "$RXO" "$TXO" | sed 's/^/    /'
		return 1
	fi
}

for i in 1 2 3; do
	if pair "rx/tx $i" rx tx -f 138 -D 0.5; then
		positive "$(val "$RXO" pps)" || fail "rx/tx $i: no rate: $(grep CEILING "$RXO")"
		positive "$(val "$TXO" sent)" || fail "rx/tx $i: nothing sent: $(grep CEILING "$TXO")"
		# the receiver never counts more than was sent
		awk -v r="$(val "$RXO" total)" -v s="$(val "$TXO" sent)" \
		    'BEGIN { exit !(r > 0 && r <= s) }' ||
			fail "rx/tx $i: received $(val "$RXO" total) of $(val "$TXO" sent)"
	fi
	if pair "pong/ping $i" pong ping -f 82 -n 3000 -D 20; then
		positive "$(val "$TXO" rtt_median)" ||
			fail "pong/ping $i: no RTT: $(grep CEILING "$TXO")"
		[ "$(val "$TXO" iters)" = 3000 ] ||
			fail "pong/ping $i: $(val "$TXO" iters) iterations, want 3000"
		# 3000 and the warm-up's 310
		[ "$(val "$RXO" echoed)" = 3310 ] ||
			fail "pong/ping $i: pong echoed $(val "$RXO" echoed), want 3310"
	fi
done

# An RC ping-pong's shape: an ACK-sized frame ahead of each frame, each
# way, in one burst; pong counts both (it stops on the last one)
if pair "pong/ping --ack" pong ping -f 82 --ack 62 -n 3000 -D 20; then
	positive "$(val "$TXO" rtt_median)" && [ "$(val "$TXO" ack)" = 62 ] ||
		fail "pong/ping --ack: $(grep CEILING "$TXO")"
	[ "$(val "$RXO" echoed)" = 6620 ] ||
		fail "pong/ping --ack: pong echoed $(val "$RXO" echoed), want 6620"
fi
# A build with -Dstamps=true (meson passes --stamps): ping and pong stamp
# the port's calls as droce's engine does (DROCE_STAMPS); each process's
# transmit and receive stamps carry exactly the 6 620 frames it sent and
# took, and devtools/stamps.py follows the hops of the middle of the run
# both ways (80 % of the 3 310 bursts, 2 648, less the few it cannot
# place).
if [ "${2:-}" = --stamps ] &&
   DROCE_STAMPS=$WORK/cst pair "pong/ping stamped" pong ping -f 82 --ack 62 -n 3000 -D 20; then
	pids=$(ls "$WORK"/cst.* 2>/dev/null | sed 's/.*cst\.\([0-9]*\)\..*/\1/' | sort -u)
	[ "$(echo $pids | wc -w)" = 2 ] ||
		fail "pong/ping stamped: want two processes' stamps, found: $pids"
	for p in $pids; do
		for ev in 1 2 8; do	# TX, RX, RX_CALL: frames in c
			v=$(cat "$WORK"/cst."$p".* | awk -v e=$ev \
				'$1 !~ /^#/ && $2 == e { s += $5 } END { print s + 0 }')
			[ "$v" = 6620 ] ||
				fail "pong/ping stamped: pid $p, event $ev: $v frames, want 6620"
		done
	done
	out=$(/usr/bin/python3 "$(dirname "$0")/../../devtools/stamps.py" "$WORK/cst" 2>&1) ||
		fail "pong/ping stamped: stamps.py failed: $out"
	echo "$out" | awk '/^raw ping-pong / { r = 1 }
		/hops followed:/ { n++; if ($NF + 0 < 2400 || $NF + 0 > 3310) bad = 1 }
		/^  hop / { if ($2 + 0 > 0) t++ }
		END { exit !(r && n == 2 && !bad && t == 2) }' ||
		fail "pong/ping stamped: stamps.py did not follow the hops: $(echo "$out" | head -4)"
fi
# The kernel link of bench's kernel section: net_af_packet on a veth pair
# (root only), its frames bigger than the default mbufs hold: the receiver
# cannot start without --room, and runs with it
KLINK=dcs$$a
if ip link add "$KLINK" type veth peer name "dcs$$b" 2>/dev/null; then
	trap 'ip link del "$KLINK" 2>/dev/null; perf_lib_cleanup' EXIT
	for l in "$KLINK" "dcs$$b"; do
		sysctl -qw "net.ipv6.conf.$l.disable_ipv6=1" 2>/dev/null
		ip link set "$l" mtu 9000 up
	done
	VDEV_S="net_af_packet0,iface=$KLINK,framesz=4352,blocksz=69632"
	VDEV_C="net_af_packet0,iface=dcs$$b,framesz=4352,blocksz=69632"
	N=$((N + 1))
	# shellcheck disable=SC2086
	if timeout -k 2 30 "$BIN" -l 0 $EAL_MEM --no-pci $LOG --file-prefix "${PREFIX}k$N" \
		--vdev="$VDEV_S" -- rx -D 0.2 >"$WORK/$N.out" 2>&1; then
		fail "af_packet rx without --room: started ($(grep CEILING "$WORK/$N.out" | head -1))"
	fi
	if pair "af_packet rx/tx" rx tx -f 138 -D 0.5 --room 4352; then
		positive "$(val "$RXO" pps)" || fail "af_packet rx/tx: no rate: $(grep CEILING "$RXO")"
		awk -v r="$(val "$RXO" total)" -v s="$(val "$TXO" sent)" \
		    'BEGIN { exit !(r > 0 && r <= s) }' ||
			fail "af_packet rx/tx: received $(val "$RXO" total) of $(val "$TXO" sent)"
	fi
	if pair "af_packet pong/ping" pong ping -f 82 -n 1000 -D 20 --room 4352; then
		positive "$(val "$TXO" rtt_median)" ||
			fail "af_packet pong/ping: no RTT: $(grep CEILING "$TXO")"
		[ "$(val "$RXO" echoed)" = 1110 ] ||
			fail "af_packet pong/ping: pong echoed $(val "$RXO" echoed), want 1110"
	fi
	# (the ceiling turns the interfaces' promiscuous mode on, and off at
	# its end)
	ip -o link show | grep -E " dcs$$[ab]@" | grep -q PROMISC &&
		fail "af_packet: an interface left promiscuous: $(ip -o link show | grep -E " dcs$$[ab]@" | grep PROMISC)"
	unset VDEV_S VDEV_C
	ip link del "$KLINK" 2>/dev/null
else
	echo "af_packet part skipped: no veth pair (root and the veth driver needed)"
fi

# Each refused before it runs (exit code 2, a "bad" line naming it); a
# seconds value that is not finite made a window that never ended (NaN)
# or ended at once (inf)
for bad in "--ack 40" "--ack 100" "--room 70000" "-D nan" "-D inf" "-D -1" \
	"-D 0" "-D 1e300" "-D 0.5x" "--cores 0" "--cores 3" "-n 5" "-n 1e3" \
	"-n 134217729" "-f 59" "-f 9001" "-f 0x" "-s 0" "-s 1073741825" \
	"-s -1" "--room -1" "--ack 9001" "extra"; do
	N=$((N + 1))
	# shellcheck disable=SC2086
	timeout -k 2 30 "$BIN" -l 0 $EAL_MEM --no-pci $LOG --file-prefix "${PREFIX}b$N" \
		-- rtt -f 82 -n 100 $bad >"$WORK/$N.out" 2>&1
	rc=$?
	if [ $rc -ne 2 ]; then
		fail "rtt -f 82 -n 100 $bad: exit code $rc, expected 2 (refused)"
	elif ! grep -Eq "^(bad ${bad%% *} |unexpected argument )" "$WORK/$N.out"; then
		fail "rtt $bad: no message naming it: $(tail -n 1 "$WORK/$N.out")"
	fi
done
# the same modes still take the ranges' ends
one memcpy-ends 0 memcpy -s 1 -D 0.001 &&
	{ positive "$(val "$OUT" copies)" || fail "memcpy -s 1 -D 0.001: $(grep CEILING "$OUT")"; }
one rtt-ends 0 rtt -f 60 --ack 60 -n 10 --cores 1 &&
	{ positive "$(val "$OUT" rtt_median)" || fail "rtt -f 60 -n 10: $(grep CEILING "$OUT")"; }

finish "$N runs"
