#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Smoke test of app/droce-perf: --loopback runs of write_bw, read_bw,
# send_bw, atomic_bw, write_lat (and the other latency tests) with a small
# -n. Checks perftest's table format, that the byte and message counts are
# right (--kv, --check: the data landed where it should, FETCH_AND_ADD
# counters add up) and that no completion failed, with perftest's default
# posting (the ibv_wr_* API) and its --use_old_post_send (ibv_post_send).
# Never asserts a speed.
#
# usage: perf_smoke.sh <droce-perf>
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>")
#
# Environment (optional):
#   DROCE_TEST_EAL_MEM   EAL memory options (default: --in-memory when
#                        hugepages are free, else --no-huge --no-shconf -m 512)
#   DROCE_TEST_KEEP      keep the per-run logs (directory printed at the end)

NAME=perf-smoke
PREFIX=dsm$$
# shellcheck source=test/perf/perf_lib.sh
. "$(dirname "$0")/perf_lib.sh"
# (74 runs of ~0.5 s each, most of it EAL start-up; a sanitizer build
# runs them slower: time_budget scales with meson's timeout)
BUDGET=$(time_budget 80)
EAL_MEM=$(eal_mem_hugepages 512)
NPROC=$(nproc 2>/dev/null || echo 1)
RUNS=0

BW_HDR=' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]'
LAT_HDR=' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] '
NUM='[0-9]+(\.[0-9]+)?'

# kv <file> <key>: the value of key= on the DROCE_PERF line
kv() {
	sed -n "s/^DROCE_PERF .* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1
}

# run <label> <cores> <args...>: one droce-perf --loopback run, which
# must exit with $WANT_RC (default 0)
run() {
	local label=$1 cores=$2 out rc left want=${WANT_RC:-0}
	shift 2
	RUNS=$((RUNS + 1))
	out=$WORK/$RUNS.out
	budget_left "$label" 3 20 || return 1
	left=$LEFT
	DROCE_EAL_ARGS="-l $cores $EAL_MEM --no-pci $LOG --file-prefix ${PREFIX}r" \
		timeout -k 2 "$left" "$BIN" "$@" --loopback --kv --check \
		>"$out" 2>"$out.err"
	rc=$?
	LAST=$out
	if [ $rc -ne "$want" ]; then
		fail "$label: exit code $rc, expected $want"
		tail -n 5 "$out" "$out.err" | sed 's/^/    /'
		return 1
	fi
	# (its EAL's runtime directory, empty, goes with libdroce at exit)
	[ "$(id -u)" -ne 0 ] || [ ! -e "/run/dpdk/${PREFIX}r" ] ||
		fail "$label: /run/dpdk/${PREFIX}r left behind"
	return 0
}

# check_bw <label> <size> <iters> <qps>
check_bw() {
	local label=$1 size=$2 iters=$3 qps=$4 out=$LAST msgs
	msgs=$((iters * qps))
	grep -qxF -- "$BW_HDR" "$out" || fail "$label: no perftest bandwidth header"
	grep -Eq "^ $size +$msgs +$NUM +$NUM *"$'\t\t'"   $NUM *\$" "$out" ||
		fail "$label: no result row '$size $msgs ...'"
	[ "$(kv "$out" msgs)" = "$msgs" ] ||
		fail "$label: msgs=$(kv "$out" msgs), expected $msgs"
	[ "$(kv "$out" bytes)" = "$((msgs * size))" ] ||
		fail "$label: bytes=$(kv "$out" bytes), expected $((msgs * size))"
	[ "$(kv "$out" errors)" = "0" ] || fail "$label: errors=$(kv "$out" errors)"
	[ "$(kv "$out" c_icrc_err)" = "0" ] && [ "$(kv "$out" s_icrc_err)" = "0" ] ||
		fail "$label: ICRC errors on a ring"
	grep -qx " check: size $size OK" "$out" || fail "$label: data check did not pass"
	grep -q '^---------------------------------------------------------------------------------------$' "$out" ||
		fail "$label: no perftest result line"
}

# check_lat <label> <size> <iters>
check_lat() {
	local label=$1 size=$2 iters=$3 out=$LAST row
	grep -qxF -- "$LAT_HDR" "$out" || fail "$label: no perftest latency header"
	row=$(grep -E "^ $size +$iters " "$out" | head -n 1)
	if [ -z "$row" ]; then
		fail "$label: no result row '$size $iters ...'"
	else
		# 7 figures: min max typical avg stdev 99% 99.9%
		[ "$(echo "$row" | awk '{print NF}')" = 9 ] ||
			fail "$label: result row has $(echo "$row" | awk '{print NF}') fields, expected 9"
		echo "$row" | awk '{ if (!($3 <= $5 && $5 <= $4 && $3 <= $8 && $8 <= $9)) exit 1 }' ||
			fail "$label: min <= typical <= max, min <= 99% <= 99.9% violated: $row"
	fi
	[ "$(kv "$out" iters)" = "$iters" ] || fail "$label: iters=$(kv "$out" iters)"
	[ "$(kv "$out" errors)" = "0" ] || fail "$label: errors=$(kv "$out" errors)"
	grep -qx " check: size $size OK" "$out" || fail "$label: check did not pass"
}

# rkeys <label> <n>: $LAST's local address lines show n distinct RKeys
rkeys() {
	[ "$(sed -n 's/^ local address: .*RKey \(0x[0-9a-f]*\).*/\1/p' "$LAST" | sort -u | wc -l)" = "$2" ] ||
		fail "$1: not $2 distinct local RKeys: $(grep '^ local address' "$LAST" | head -n 2)"
}

APP="--engine=app"
# bandwidth tests, one thread driving the engine
run write_bw 0 write_bw -s 64 -n 2000 $APP && check_bw write_bw 64 2000 1 &&
	awk -v b="$(kv "$LAST" c_tx_bursts)" -v p="$(kv "$LAST" c_tx_pkts)" \
	    'BEGIN { exit !(b > 0 && b <= p) }' ||
	fail "write_bw: c_tx_bursts=$(kv "$LAST" c_tx_bursts) for c_tx_pkts=$(kv "$LAST" c_tx_pkts)"
# one QP a side: the engine prefetches nothing (from 256 QPs: perf-scale)
[ "$(kv "$LAST" c_eng_prefetch)" = 0 ] ||
	fail "write_bw: c_eng_prefetch=$(kv "$LAST" c_eng_prefetch) with one QP a side"
[ "$(kv "$LAST" c_eng_deep_turns)" = 0 ] ||
	fail "write_bw: c_eng_deep_turns=$(kv "$LAST" c_eng_deep_turns) with one QP a side"
run read_bw 0 read_bw -s 4096 -n 1000 -m 1024 $APP && check_bw read_bw 4096 1000 1 &&
	{ [ "$(kv "$LAST" c_icrc_late)" = 4000 ] ||
	  fail "read_bw: c_icrc_late=$(kv "$LAST" c_icrc_late), expected 4000 (FIRST, MIDDLE, MIDDLE, LAST of each READ's responses checked at placement: each FIRST comes with the READ before it complete)"; }
run send_bw 0 send_bw -s 1000 -n 1000 $APP && check_bw send_bw 1000 1000 1
# one thread serving both ends: the server drains its receive CQ each turn,
# so its receive queue (512) never runs dry under a client's 128 sends in
# flight: no RNR NAK (a server that replaced one batch a turn drew
# thousands a second)
run send_bw-rnr 0 send_bw -s 64 -n 20000 $APP && check_bw send_bw-rnr 64 20000 1 &&
	{ [ "$(kv "$LAST" c_rnr_naks)" = 0 ] ||
	  fail "send_bw-rnr: c_rnr_naks=$(kv "$LAST" c_rnr_naks), want 0"; }
run atomic_bw 0 atomic_bw -n 2000 $APP && check_bw atomic_bw 8 2000 1
run atomic_bw-cas 0 atomic_bw -A CMP_AND_SWAP -n 1000 $APP &&
	check_bw atomic_bw-cas 8 1000 1
# duration mode: a QP's FETCH_AND_ADDs after its last signalled one were
# left out of what the drain waited for, and --check found the responder's
# counter ahead of the completions; each such QP now ends with one
# signalled WR more (-Q 7: a tail on nearly every stop)
run atomic_bw-D 0 atomic_bw -D 0.05 -q 3 -Q 7 $APP &&
	{ grep -qx " check: size 8 OK" "$LAST" && [ "$(kv "$LAST" errors)" = 0 ] ||
	  fail "atomic_bw-D: $(grep -m1 ' check:' "$LAST") errors=$(kv "$LAST" errors)"; }
# several QPs, multi-packet messages, a post list
run write_bw-q4 0 write_bw -s 10000 -n 200 -q 4 -m 1024 $APP &&
	check_bw write_bw-q4 10000 200 4 &&
	{ [ "$(grep -Ec '^ +0x[0-9a-f]{6} +200 ' "$LAST")" = 4 ] ||
	  fail "write_bw-q4: per-QP table does not show 4 QPs x 200 messages"; } &&
	{ l=$(kv "$LAST" s_icrc_late)
	  # 9 of each message's 10 frames (MIDDLE x 8, LAST), but for the
	  # first burst or so per QP: the server's QP learns the client's MAC
	  # from them (such frames are checked first)
	  [ -n "$l" ] && [ "$l" -ge 6480 ] && [ "$l" -le 7200 ] ||
	  fail "write_bw-q4: s_icrc_late=$l, expected 6480..7200"; } &&
	rkeys write_bw-q4 1	# one MR (unlike --mr_per_qp below)
run send_bw-l 0 send_bw -s 64 -n 1000 -l 4 $APP && check_bw send_bw-l 64 1000 1
# -b (bidirectional): both ends post, each checked as sender (its data in
# the other's memory, its completions) and, for SEND, as receiver; the
# table's row is this end's count, its rates both directions' (perftest)
# bidir <label> <size> <iters>: on top of check_bw
bidir() {
	grep -Eq '^ +[A-Z_a-z]+ (FETCH_AND_ADD )?Bidirectional BW Test$' "$LAST" ||
		fail "$1: header does not say Bidirectional"
	[ "$(kv "$LAST" bidirectional)" = 1 ] || fail "$1: kv line lacks bidirectional=1"
	[ "$(kv "$LAST" run_msgs)" = "$((2 * $3))" ] ||
		fail "$1: run_msgs=$(kv "$LAST" run_msgs), want $((2 * $3)) (both directions)"
	[ "$(kv "$LAST" s_tx_pkts)" -ge "$3" ] ||
		fail "$1: the server sent $(kv "$LAST" s_tx_pkts) frames, want >= $3"
}
run write_bw-b 0 write_bw -b -s 300 -n 1000 --report-both $APP &&
	check_bw write_bw-b 300 1000 1 && bidir write_bw-b 300 1000 &&
	{ # --report-both: the sum's row, then the local and the remote one,
	  # whose rates add up to it
	  grep -q '^ Local results: $' "$LAST" && grep -q '^ Remote results: $' "$LAST" &&
	  grep -E '^ 300 +1000 ' "$LAST" | awk '{ r[NR] = $5 }
		END { d = r[1] - r[2] - r[3]; exit !(NR == 3 && d < 2e-6 && d > -2e-6) }' ||
	  fail "write_bw-b --report-both: not a sum row then local and remote rows that add up: $(grep -E '^ 300 ' "$LAST" | tr '\n' '|')"; }
run read_bw-b 0 read_bw -b -s 3000 -n 500 -m 1024 $APP &&
	check_bw read_bw-b 3000 500 1 && bidir read_bw-b 3000 500
run send_bw-b 0 send_bw -b -s 200 -n 2000 -q 2 $APP &&
	check_bw send_bw-b 200 2000 2 && bidir send_bw-b 200 4000 &&
	{ [ "$(kv "$LAST" recv_msgs)" = 4000 ] ||
	  fail "send_bw-b: the server received $(kv "$LAST" recv_msgs), want 4000"; }
run atomic_bw-b 0 atomic_bw -b -n 1000 $APP &&
	check_bw atomic_bw-b 8 1000 1 && bidir atomic_bw-b 8 1000

# -e: a loop turn that finds no completion sleeps on the CQs' channels
# (poll(2) on their fds, then ibv_get_cq_event, ack, arm again); events=
# counts the events taken (without -e there is no such field). Meanwhile
# an app-driven engine is turned by its keeper (every 20 us while a CQ is
# armed). In one process a turn may find a completion every time (both
# ends' polls run an app-driven engine; an engine lcore may keep ahead of
# a slow thread, as under ASan, whose send_lat -e took none), so
# events <label> wants the field, not a count; perf_pair.sh's two
# processes, where a turn waits a round trip, count them.
events() {
	local n
	n=$(kv "$LAST" events)
	[ -n "$n" ] && [ "$n" -ge 0 ] || fail "$1: events=${n:-none}, want a count"
	grep -q '^ Test with events. Using droce_lb0_comp0$' "$LAST" ||
		fail "$1: no 'Test with events' line"
}
run send_bw-e 0 send_bw -e -s 1000 -n 1000 $APP &&
	check_bw send_bw-e 1000 1000 1 && events send_bw-e
run send_bw-e-b 0 send_bw -e -b -s 200 -n 1000 -q 2 $APP &&
	check_bw send_bw-e-b 200 1000 2 && bidir send_bw-e-b 200 2000 &&
	events send_bw-e-b
run send_bw-e-ud 0 send_bw -e -c UD -s 256 -n 500 -q 2 $APP &&
	check_bw send_bw-e-ud 256 500 2 && events send_bw-e-ud
if run read_bw-e-a 0 read_bw -e -a -n 20 $APP; then
	events read_bw-e-a
	[ "$(grep -c '^ check: size [0-9]* OK$' "$LAST")" = 23 ] ||
		fail "read_bw-e-a: $(grep -c '^ check: size [0-9]* OK$' "$LAST") of 23 sizes checked"
fi
run atomic_bw-e 0 atomic_bw -e -n 1000 $APP &&
	check_bw atomic_bw-e 8 1000 1 && events atomic_bw-e
run send_lat-e 0 send_lat -e -n 300 $APP && check_lat send_lat-e 2 300 &&
	events send_lat-e
run read_lat-e 0 read_lat -e -s 64 -n 300 $APP && check_lat read_lat-e 64 300 &&
	events read_lat-e
if run read_lat-poll 0 read_lat -s 64 -n 30 $APP; then
	[ -z "$(kv "$LAST" events)" ] || fail "read_lat without -e: events=$(kv "$LAST" events)"
fi

# --use-srq: the receiving end's QPs share one SRQ of -r's depth; each
# QP still receives its -n messages (counted by the QP that received,
# whose receive it took is only where the data lands)
srq_on() {
	grep -q '^ Connection type : [A-Z]*		Using SRQ      : ON$' "$LAST" ||
		fail "$1: the header does not say 'Using SRQ : ON'"
}
run send_bw-srq 0 send_bw --use-srq -q 4 -s 1000 -n 1000 $APP &&
	check_bw send_bw-srq 1000 1000 4 && srq_on send_bw-srq &&
	{ [ "$(kv "$LAST" recv_msgs)" = 4000 ] ||
	  fail "send_bw-srq: the server received $(kv "$LAST" recv_msgs), want 4000"; }
run send_bw-srq-b 0 send_bw --use-srq -b -q 2 -s 200 -n 1000 $APP &&
	check_bw send_bw-srq-b 200 1000 2 && bidir send_bw-srq-b 200 2000 &&
	srq_on send_bw-srq-b
# (UD, one QP: the SRQ holds a receive for every datagram, none is lost)
run send_bw-srq-ud 0 send_bw --use-srq -c UD -s 512 -n 300 -m 1024 $APP &&
	check_bw send_bw-srq-ud 512 300 1 && srq_on send_bw-srq-ud
run send_lat-srq 0 send_lat --use-srq -n 300 $APP && check_lat send_lat-srq 2 300 &&
	srq_on send_lat-srq
run send_bw-srq-e 0 send_bw --use-srq -e -q 2 -s 4096 -n 500 $APP &&
	check_bw send_bw-srq-e 4096 500 2 && srq_on send_bw-srq-e

# --run_infinitely: a row every -D seconds until SIGINT, then the whole
# run's row and the usual end (--kv, --check), exit 0
# start_inf: write_bw --run_infinitely -D 0.2 in the background; sets
# INF_OUT (its output; stderr in $INF_OUT.err) and ipid
start_inf() {
	RUNS=$((RUNS + 1))
	INF_OUT=$WORK/$RUNS.out
	DROCE_EAL_ARGS="-l 0 $EAL_MEM --no-pci $LOG --file-prefix ${PREFIX}i" \
		"$BIN" write_bw -s 64 \
		--run_infinitely -D 0.2 --loopback $APP --kv --check \
		>"$INF_OUT" 2>"$INF_OUT.err" &
	ipid=$!
	PIDS="$PIDS $ipid"
}
start_inf
INF=$INF_OUT
interrupt_after_rows $ipid "$INF" '^ 64 +[0-9]+ +0\.00 ' 3 run_infinitely
wait $ipid
rc=$?
if [ $rc -ne 0 ]; then
	fail "run_infinitely: exit code $rc after SIGINT"
	tail -n 5 "$INF" "$INF.err" | sed 's/^/    /'
else
	# every period moved messages; the last row (the whole run) has at
	# least their sum, and it is what --kv says
	grep -E '^ 64 +[0-9]+ +0\.00 ' "$INF" | awk -v kv="$(kv "$INF" msgs)" '
		{ n[NR] = $2 }
		END {
			if (NR < 4) { print "rows " NR; exit 1 }
			for (i = 1; i < NR; i++) { if (n[i] <= 0) { print "empty period " i; exit 1 } s += n[i] }
			if (n[NR] < s || n[NR] != kv) { print "whole run " n[NR] ", periods " s ", kv " kv; exit 1 }
		}' >"$INF.why" || fail "run_infinitely: $(cat "$INF.why")"
	grep -qx ' check: size 64 OK' "$INF" || fail "run_infinitely: data check did not pass"
fi

# the same stopped by two SIGTERMs 50 ms apart (as coreutils' timeout
# sends one to the program and one to its process group): one request,
# the same graceful end; a signal a second later would end it outright
start_inf
INF2=$INF_OUT
for _ in $(seq 150); do
	[ "$(grep -Ecs '^ 64 +[0-9]+ +0\.00 ' "$INF2")" -ge 2 ] && break
	kill -0 $ipid 2>/dev/null || break
	sleep 0.1
done
kill -TERM $ipid 2>/dev/null
sleep 0.05
kill -TERM $ipid 2>/dev/null
wait $ipid
rc=$?
[ $rc -eq 0 ] && grep -qx ' check: size 64 OK' "$INF2" ||
	{ fail "run_infinitely, two SIGTERMs 50 ms apart: exit code $rc"; tail -n 3 "$INF2" "$INF2.err" | sed 's/^/    /'; }

# latency
run write_lat 0 write_lat -n 1000 $APP && check_lat write_lat 2 1000
run read_lat 0 read_lat -s 64 -n 500 $APP && check_lat read_lat 64 500
run send_lat 0 send_lat -n 500 $APP && check_lat send_lat 2 500
run atomic_lat 0 atomic_lat -n 500 $APP && check_lat atomic_lat 8 500
# perftest's default posting is the ibv_wr_* API (above); its
# --use_old_post_send is ibv_post_send: both must move the same data
grep -q '^ ibv_wr\* API     : ON$' "$LAST" ||
	fail "atomic_lat: info does not say ibv_wr* API ON (perftest's default flow)"
run write_bw-old 0 write_bw -s 64 -n 2000 -l 4 $APP --use_old_post_send &&
	check_bw write_bw-old 64 2000 1 &&
	{ grep -q '^ ibv_wr\* API     : OFF$' "$LAST" ||
	  fail "write_bw-old: info does not say ibv_wr* API OFF"; }
run send_bw-old-inline 0 send_bw -s 100 -n 1000 -I 128 $APP --use_old_post_send &&
	check_bw send_bw-old-inline 100 1000 1
run atomic_bw-old 0 atomic_bw -n 1000 $APP --use_old_post_send &&
	check_bw atomic_bw-old 8 1000 1
run read_lat-old 0 read_lat -s 64 -n 300 $APP --use_old_post_send &&
	check_lat read_lat-old 64 300
run write_bw-inline-l 0 write_bw -s 100 -n 2000 -l 4 -I 128 $APP &&
	check_bw write_bw-inline-l 100 2000 1

# --cycles: the verbs calls' cycles and (devarg cycles=1) the engine's
# stages; without it, no engine line (the stages are not timed)
# eng <key>: a value on the DROCE_ENGINE line of $LAST
eng() {
	sed -n "s/^DROCE_ENGINE .* $1=\([^ ]*\).*/\1/p" "$LAST" | head -n 1
}
grep -q '^DROCE_ENGINE ' "$LAST" && fail "write_bw-inline-l: DROCE_ENGINE line without --cycles"
run write_bw-cycles 0 write_bw -s 64 -n 2000 $APP --cycles &&
	check_bw write_bw-cycles 64 2000 1 &&
	{ grep -Eq '^DROCE_CYCLES .* msgs=2000 .* post_per_msg=[1-9]' "$LAST" ||
	  fail "write_bw-cycles: no DROCE_CYCLES line for 2000 messages"
	  awk -v l="$(eng c_eng_loops)" -v i="$(eng c_eng_idle)" \
	      -v r="$(eng c_eng_rx_per_rx_frame)" -v w="$(eng c_eng_work_per_tx_frame)" \
	      -v m="$(eng c_eng_per_msg)" -v t="$(eng c_eng_timers_per_msg)" \
	      'BEGIN { exit !(l > 0 && i >= 0 && i < 1 && r > 0 && w > 0 && m > 0 && t != "" && t >= 0 && t < m) }' ||
	  fail "write_bw-cycles: engine stages missing or zero: $(grep '^DROCE_ENGINE' "$LAST")"; }

# the engine on its own lcore, when there are two cores
if [ "$NPROC" -ge 2 ]; then
	run write_bw-lcore 0-1 write_bw -s 64 -n 2000 --engine=lcore &&
		check_bw write_bw-lcore 64 2000 1
	run write_lat-lcore 0-1 write_lat -n 1000 --engine=lcore &&
		check_lat write_lat-lcore 2 1000
	# an engine per side: the client's in this thread, the server's on lcore 1
	run send_bw-split 0-1 send_bw -s 64 -n 2000 --engine=split --cycles &&
		check_bw send_bw-split 64 2000 1 &&
		{ grep -q ' engine=split ' "$LAST" || fail "send_bw-split: not reported as split"; } &&
		{ [ -n "$(eng c_eng_per_msg)" ] && [ -n "$(eng s_eng_per_msg)" ] ||
		  fail "send_bw-split --cycles: not one engine line per side: $(grep '^DROCE_ENGINE' "$LAST")"; }
	run read_lat-split 0-1 read_lat -s 64 -n 500 --engine=split &&
		check_lat read_lat-split 64 500
	run send_bw-e-lcore 0-1 send_bw -e -s 512 -n 2000 --engine=lcore &&
		check_bw send_bw-e-lcore 512 2000 1 && events send_bw-e-lcore
fi

# perftest's naming: a link called ib_write_bw runs write_bw
ln -s "$(readlink -f "$BIN")" "$WORK/ib_write_bw"
RUNS=$((RUNS + 1))
DROCE_EAL_ARGS="-l 0 $EAL_MEM --no-pci $LOG --file-prefix ${PREFIX}l" timeout -k 2 20 \
	"$WORK/ib_write_bw" -s 128 -n 500 --loopback --engine=app --kv --check \
	>"$WORK/$RUNS.out" 2>&1
LAST=$WORK/$RUNS.out
if grep -q "RDMA_Write BW Test" "$LAST"; then
	check_bw ib_write_bw 128 500 1
else
	fail "ib_write_bw: not run as write_bw"
fi
# UC (-c UC) and UD (-c UD): WRITEs and SENDs with no ACK at all, the
# data checked (UD: after the receive's 40-byte GRH slot)
# unrel_checks <label> <UC|UD>: said in the header, no ACK either way
unrel_checks() {
	grep -q "^ Connection type : $2" "$LAST" || fail "$1: header does not say $2"
	[ "$(kv "$LAST" c_acks)" = 0 ] && [ "$(kv "$LAST" s_acks)" = 0 ] ||
		fail "$1: ACKs on $2: c_acks=$(kv "$LAST" c_acks) s_acks=$(kv "$LAST" s_acks)"
}
run write_bw-uc 0 write_bw -c UC -s 3000 -n 1000 -m 1024 $APP &&
	check_bw write_bw-uc 3000 1000 1 && unrel_checks write_bw-uc UC
run write_lat-uc 0 write_lat -c UC -s 64 -n 500 $APP &&
	check_lat write_lat-uc 64 500 && unrel_checks write_lat-uc UC
run send_lat-uc 0 send_lat -c UC -s 64 -n 500 $APP &&
	check_lat send_lat-uc 64 500 && unrel_checks send_lat-uc UC
# send_bw over UC only in duration mode: what arrives is counted
run send_bw-uc 0 send_bw -c UC -s 512 -D 0.5 $APP && unrel_checks send_bw-uc UC &&
	{ [ "$(kv "$LAST" errors)" = 0 ] && [ "$(kv "$LAST" msgs)" -gt 0 ] ||
	  fail "send_bw-uc: errors=$(kv "$LAST" errors) msgs=$(kv "$LAST" msgs)"; }
# send_bw over UC and UD counting to -n, as perftest's default: a SEND
# that finds no receive is dropped (rx_no_recv), so the server counts
# what arrives and ends 1 s after the last; -r 4 makes sure some are
# dropped. Every SEND sent either arrived or was counted dropped.
# unrel_n <label> <sent>
unrel_n() {
	local recv drop
	recv=$(kv "$LAST" recv_msgs) drop=$(kv "$LAST" s_rx_no_recv)
	[ "$(kv "$LAST" errors)" = 0 ] && [ "$(kv "$LAST" msgs)" = "$2" ] &&
		[ "${recv:-0}" -gt 0 ] && [ "${drop:-0}" -gt 0 ] &&
		[ $((recv + drop)) = "$2" ] ||
		fail "$1: sent $(kv "$LAST" msgs) of $2, received ${recv:-?}, dropped ${drop:-?}"
	grep -q "^ $recv of $2 SENDs arrived over" "$LAST.err" ||
		fail "$1: no 'SENDs arrived' line"
	grep -q '^ check: size [0-9]* OK$' "$LAST" || fail "$1: data check did not pass"
}
run send_bw-uc-n 0 send_bw -c UC -s 512 -n 2000 -r 4 $APP &&
	unrel_checks send_bw-uc-n UC && unrel_n send_bw-uc-n 2000
run send_bw-ud-n 0 send_bw -c UD -s 256 -n 1000 -q 2 -r 4 $APP &&
	unrel_checks send_bw-ud-n UD && unrel_n send_bw-ud-n 2000
# every size of -a: the receives a size leaves posted (its lost SENDs')
# serve the next, larger one
if run send_bw-uc-a 0 send_bw -c UC -a -n 50 -r 4 $APP; then
	n=$(grep -c '^ check: size [0-9]* OK$' "$LAST")
	[ "$n" = 23 ] || fail "send_bw-uc-a: $n sizes checked OK, want 23 (2 B .. 8 MiB)"
	n=$(grep -c '^ [0-9]* of 50 SENDs arrived over UC' "$LAST.err")
	[ "$n" -gt 0 ] || fail "send_bw-uc-a: no size lost a SEND"
fi
# -a over UD: 2 B up to the path MTU, as perftest (a datagram is one packet)
if run send_bw-ud-a 0 send_bw -c UD -a -m 1024 -n 200 $APP; then
	unrel_checks send_bw-ud-a UD
	v=$(grep -E '^ +[0-9]+ +[0-9]+ ' "$LAST" | awk '{printf "%s ", $1}')
	[ "$v" = "2 4 8 16 32 64 128 256 512 1024 " ] ||
		fail "send_bw-ud-a: sizes '$v', want 2 .. 1024"
	[ "$(grep -c '^ check: size [0-9]* OK$' "$LAST")" = 10 ] ||
		fail "send_bw-ud-a: not 10 sizes checked OK"
fi
# UD: a full 1024-byte datagram (the path MTU), and the old post path
run send_lat-ud 0 send_lat -c UD -s 1024 -m 1024 -n 500 $APP &&
	check_lat send_lat-ud 1024 500 && unrel_checks send_lat-ud UD
run send_bw-ud 0 send_bw -c UD -s 256 -q 2 -D 0.5 $APP --use_old_post_send &&
	unrel_checks send_bw-ud UD &&
	{ [ "$(kv "$LAST" errors)" = 0 ] && [ "$(kv "$LAST" msgs)" -gt 0 ] &&
	  grep -qx ' check: size 256 OK' "$LAST" ||
	  fail "send_bw-ud: errors=$(kv "$LAST" errors) msgs=$(kv "$LAST" msgs) $(grep ' check:' "$LAST")"; }

# --mr_per_qp: an MR per QP (READ's address lines: an RKey each), the
# data checked in each QP's own slots (SEND: each receive under its QP's
# MR); -X 0, the one vector
run read_bw-mr_per_qp 0 read_bw --mr_per_qp -X 0 -q 4 -s 3000 -n 200 -m 1024 $APP &&
	check_bw read_bw-mr_per_qp 3000 200 4 && rkeys read_bw-mr_per_qp 4
run send_bw-mr_per_qp 0 send_bw --mr_per_qp -q 3 -s 500 -n 300 $APP &&
	check_bw send_bw-mr_per_qp 500 300 3
# --no_lock: QPs, CQs, the SRQ and the MRs in a thread domain's parent
# domain, the data checked
run send_bw-no_lock 0 send_bw --no_lock --use-srq -q 3 -s 500 -n 300 $APP &&
	check_bw send_bw-no_lock 500 300 3
run write_bw-no_lock 0 write_bw --no_lock -q 2 -s 64 -n 2000 $APP &&
	check_bw write_bw-no_lock 64 2000 2
# --use_hugepages: the buffer on huge pages (MAP_HUGETLB), the data checked
# in every slot; more than the free pages: refused, exit 1 (skipped where
# 8 GiB of huge pages are free)
hp_free_kb=$(awk '/^HugePages_Free:/ {f=$2} /^Hugepagesize:/ {s=$2}
		  END {print f * s}' /proc/meminfo)
if [ "${hp_free_kb:-0}" -ge 65536 ]; then
	run write_bw-hugepages 0 write_bw --use_hugepages -q 4 -s 3000 -n 300 $APP &&
		check_bw write_bw-hugepages 3000 300 4 &&
		{ [ "$(kv "$LAST" hugepages)" = 1 ] ||
		  fail "write_bw-hugepages: no hugepages=1 in the kv line"; }
fi
if [ "${hp_free_kb:-0}" -lt 8388608 ]; then
	WANT_RC=1 run write_bw-hugepages-short 0 write_bw --use_hugepages \
		-q 4096 -s 1048576 -n 10 $APP &&
		{ grep -q "Couldn't allocate 8589934592 bytes of huge pages" "$LAST.err" ||
		  fail "write_bw-hugepages-short: no refusal: $(tail -n 2 "$LAST.err")"; }
fi
# droce has one completion vector: -X 1 reaches ibv_create_cq, refused
WANT_RC=1 run vector-1 0 read_bw -X 1 -n 10 $APP &&
	{ grep -q "Couldn't create CQ: Invalid argument" "$LAST.err" ||
	  fail "vector-1: no 'Couldn't create CQ: Invalid argument'"; }
# -w / -y, perftest's verifier limits: exit 1 below them, 0 above
run write_bw-limits 0 write_bw -s 64 -n 1000 -w 0.001 -y 0.000001 $APP &&
	check_bw write_bw-limits 64 1000 1
WANT_RC=1 run write_bw-limit-y 0 write_bw -s 64 -n 1000 -y 1000000 $APP &&
	{ grep -qx "Error: Msg rate is below msg_rate limit" "$LAST.err" &&
	  ! grep -q "BW result is below" "$LAST.err" ||
	  fail "write_bw-limit-y: not the msg_rate limit's error alone: $(cat "$LAST.err")"; }
WANT_RC=1 run write_bw-limit-w 0 write_bw -s 64 -n 1000 -w 1000000 --report_gbits $APP &&
	{ grep -qx "Error: BW result is below bw limit" "$LAST.err" ||
	  fail "write_bw-limit-w: no bw limit error: $(cat "$LAST.err")"; }
# --tclass and --flow_label go into the QPs' address (the wire is checked
# against rxe, test_perftest_rxe.sh's tc_write_bw); here: the run is whole
run write_bw-tclass 0 write_bw -s 64 -n 1000 --tclass 96 --flow_label 74565 $APP &&
	check_bw write_bw-tclass 64 1000 1
# --cpu_util (-D): perftest's column, a percentage of the window
run write_bw-cpu_util 0 write_bw -s 64 -D 0.6 --cpu_util $APP &&
	{ grep -qxF -- "$BW_HDR    CPU_Util[%]" "$LAST" ||
	  fail "write_bw-cpu_util: no CPU_Util[%] column in the header"
	  awk -v u="$(kv "$LAST" cpu_util)" 'BEGIN { exit !(u > 0 && u <= 100) }' ||
	  fail "write_bw-cpu_util: cpu_util=$(kv "$LAST" cpu_util), not in (0, 100]"
	  grep -Eq "^ 64 +[0-9]+ +0\.00 +$NUM *"$'\t\t'"   $NUM"$'\t'"    $(kv "$LAST" cpu_util) *\$" "$LAST" ||
	  fail "write_bw-cpu_util: the row does not end in the CPU figure"; }
# --latency_gap: the client waits before each round trip (300 x 200 us:
# at least 60 ms), and the figures leave the waits out (if they were in,
# the one-way median would be 100 us and more)
run write_lat-gap 0 write_lat -n 300 --latency_gap 200 $APP &&
	check_lat write_lat-gap 2 300 &&
	awk -v w="$(kv "$LAST" wall_ms)" -v m="$(kv "$LAST" t_median)" \
	    'BEGIN { exit !(w >= 60 && m < 50) }' ||
	fail "write_lat-gap: wall_ms=$(kv "$LAST" wall_ms) t_median=$(kv "$LAST" t_median)"
# with -e too: the gap is a busy wait, not a sleep on the channels
# (which, nothing in flight, lasted its 20 ms: 300 gaps took 6.6 s)
run send_lat-e-gap 0 send_lat -e -n 300 --latency_gap 100 $APP &&
	check_lat send_lat-e-gap 2 300 &&
	awk -v w="$(kv "$LAST" wall_ms)" 'BEGIN { exit !(w >= 30 && w < 2000) }' ||
	fail "send_lat-e-gap: wall_ms=$(kv "$LAST" wall_ms) for 300 gaps of 100 us"
run send_lat-gap-D 0 send_lat -D 0.6 --latency_gap 100 $APP &&
	awk -v n="$(kv "$LAST" iters)" -v a="$(kv "$LAST" t_avg)" \
	    'BEGIN { exit !(n > 0 && n <= 3000 && a > 0 && a < 50) }' ||
	fail "send_lat-gap-D: iters=$(kv "$LAST" iters) t_avg=$(kv "$LAST" t_avg) (0.3 s window, 100 us gaps)"

# --out_json: perftest's report file, the row's figures (with -a, the last
# size's: the file is rewritten with each row)
run write_bw-json 0 write_bw -a -n 50 --out_json --out_json_file "$WORK/bw.json" $APP &&
	row=$(grep -E '^ 8388608 +50 ' "$LAST") &&
	{ [ "$(grep -c '^results: {$' "$WORK/bw.json")" = 1 ] &&
	  grep -qx 'test: RDMA_Write_BW_Test,' "$WORK/bw.json" &&
	  grep -qx 'MsgSize: 8388608,' "$WORK/bw.json" &&
	  grep -qx 'n_iterations: 50,' "$WORK/bw.json" &&
	  grep -qx "BW_average: $(echo "$row" | awk '{print $4}')," "$WORK/bw.json" &&
	  grep -qx "MsgRate: $(echo "$row" | awk '{print $5}')," "$WORK/bw.json" ||
	  fail "write_bw-json: the file is not the last row '$row': $(tr '\n' ' ' <"$WORK/bw.json")"; }
run send_lat-json 0 send_lat -n 200 --out_json --out_json_file "$WORK/lat.json" $APP &&
	row=$(grep -E '^ 2 +200 ' "$LAST") &&
	{ grep -qx 'test: Send_Latency_Test,' "$WORK/lat.json" &&
	  grep -qx "t_typical: $(echo "$row" | awk '{print $5}')," "$WORK/lat.json" &&
	  grep -qx "percentile_99.9: $(echo "$row" | awk '{print $9}')," "$WORK/lat.json" ||
	  fail "send_lat-json: the file is not the row '$row': $(tr '\n' ' ' <"$WORK/lat.json")"; }

# perftest 4.5's options without effect here: the run is whole; a P_Key
# index beyond droce's one gets perftest's note and 0
run write_bw-noops 0 write_bw -s 64 -n 500 --pkey_index 2 --inline_recv 64 --retry_count 3 $APP &&
	check_bw write_bw-noops 64 500 1 &&
	{ grep -q "Specified PKey Index, 2, greater than allowed max, 0" "$LAST.err" ||
	  fail "write_bw-noops: no P_Key index note: $(cat "$LAST.err")"; }

# rate limits (never a speed: only that the rate is not above the limit)
# rate_at_most <label> <bytes/s>: $LAST's bandwidth at most that (5 % for
# the clock's one burst ahead), and the pacing counter as the limiter says
rate_at_most() {
	awk -v b="$(kv "$LAST" bw_Bps)" -v l="$2" 'BEGIN { exit !(b > 0 && b <= l * 1.05) }' ||
		fail "$1: bw_Bps=$(kv "$LAST" bw_Bps), limit $2"
}
# SW, perftest's: bursts of 16 messages every 16 / (0.1e9 / 8 / 1024) s
run write_bw-sw 0 write_bw -s 1024 -n 2000 --rate_limit 0.1 --rate_limit_type SW --burst_size 16 $APP &&
	check_bw write_bw-sw 1024 2000 1 && rate_at_most write_bw-sw 12500000 &&
	{ [ "$(kv "$LAST" c_pace_waits)" = 0 ] || fail "write_bw-sw: c_pace_waits=$(kv "$LAST" c_pace_waits)"; }
# the HW limiter is InfiniBand's: on RoCE perftest (and droce-perf) use SW
run read_bw-hw 0 read_bw -s 4096 -n 400 --rate_limit 2.5 --burst_size 8 $APP &&
	check_bw read_bw-hw 4096 400 1 && rate_at_most read_bw-hw 312500000 &&
	{ grep -q "providing SW rate limit" "$LAST.err" ||
	  fail "read_bw-hw: no fall back to SW: $(cat "$LAST.err")"; }
# PP: droce's engine paces the QP (10 "MB/s": 81920 kbit/s of frames,
# payload less); the waits are counted, on the client's device only
# a rate whose burst gap is past any clock (its conversion to TSC cycles
# was undefined; the sanitizer pass aborts on such a conversion): one
# burst, then nothing until the duration ends
run write_bw-sw-slow 0 write_bw -s 64 -D 0.05 --rate_limit 1e-300 --rate_limit_type SW --burst_size 4 $APP &&
	{ [ "$(kv "$LAST" errors)" = "0" ] || fail "write_bw-sw-slow: errors=$(kv "$LAST" errors)"; }
run write_bw-pp 0 write_bw -s 1024 -n 2000 --rate_limit 10 --rate_units M --rate_limit_type PP $APP &&
	check_bw write_bw-pp 1024 2000 1 && rate_at_most write_bw-pp 10240000 &&
	{ [ "$(kv "$LAST" c_pace_waits)" -gt 100 ] && [ "$(kv "$LAST" s_pace_waits)" = 0 ] ||
	  fail "write_bw-pp: c_pace_waits=$(kv "$LAST" c_pace_waits) s_pace_waits=$(kv "$LAST" s_pace_waits)"; }
# read_bw: the server's QP is paced too (droce-perf sets PP on both ends)
# and its READ responses go at the rate
run read_bw-pp 0 read_bw -s 4096 -n 600 --rate_limit 10 --rate_units M --rate_limit_type PP $APP &&
	check_bw read_bw-pp 4096 600 1 && rate_at_most read_bw-pp 10240000 &&
	{ [ "$(kv "$LAST" s_pace_waits)" -gt 100 ] ||
	  fail "read_bw-pp: the responder never waited: s_pace_waits=$(kv "$LAST" s_pace_waits)"; }
run send_bw-ud-pp 0 send_bw -c UD -s 1024 -n 2000 --rate_limit 10 --rate_units M --rate_limit_type PP --burst_size 8 --typical_pkt_size 1100 $APP &&
	check_bw send_bw-ud-pp 1024 2000 1 && rate_at_most send_bw-ud-pp 10240000

# unsupported transports and UC's missing operations are refused cleanly
# refused <label> <message> <args...>
refused() {
	local label=$1 msg=$2
	shift 2
	if DROCE_EAL_ARGS="-l 0 $EAL_MEM --no-pci $LOG --file-prefix ${PREFIX}x" \
		timeout -k 2 20 "$BIN" "$@" --loopback >"$WORK/refused.out" 2>&1; then
		fail "$label: accepted"
	elif ! grep -q -- "$msg" "$WORK/refused.out"; then
		fail "$label: no '$msg' message: $(tail -n 1 "$WORK/refused.out")"
	fi
	# (a refusal after the EAL started leaves nothing either)
	if [ "$(id -u)" -eq 0 ] && [ -e "/run/dpdk/${PREFIX}x" ]; then
		fail "$label: /run/dpdk/${PREFIX}x left behind"
		rm -rf "/run/dpdk/${PREFIX}x"
	fi
}
refused "-c XRC" "is not supported" write_bw -c XRC
refused "write_bw -c UD" "RDMA Write is not supported over UD" write_bw -c UD
refused "send_lat -c UD -s 2048 -m 1024" "Max msg size in UD is MTU 1024" send_lat -c UD -s 2048 -m 1024
refused "read_bw -c UC" "RDMA Read is not supported over UC" read_bw -c UC
refused "atomic_bw -c UC" "Atomic operations are not supported over UC" atomic_bw -c UC
refused "write_lat -b" "Bidirectional is only available in BW test" write_lat -b
refused "write_lat --run_infinitely" "run_infinitely exists only in BW tests" write_lat --run_infinitely
refused "send_bw -b --run_infinitely" "not supported in SEND Bidirectional" send_bw -b --run_infinitely
refused "write_bw -e" "Events feature not available on WRITE verb" write_bw -e
refused "write_bw --use-srq" "Using SRQ only avavilible in SEND tests" write_bw --use-srq
refused "send_bw --use-srq -q 8 -r 4" "SRQ depth should be greater than number of QPs" send_bw --use-srq -q 8 -r 4
refused "send_bw -e -D 1" "Duration mode doesn't work with events" send_bw -e -D 1
refused "read_bw -e --run_infinitely" "run_infinitely does not support events" read_bw -e --run_infinitely
refused "write_bw --latency_gap" "Latency gap feature is only for latency tests" write_bw --latency_gap 10
refused "write_lat -y" "are for bandwidth tests" write_lat -y 1
refused "write_bw -w -1" "Invalid minimum BW limit" write_bw -w -1
refused "write_bw --tclass 256" "Invalid traffic class" write_bw --tclass 256
refused "write_bw --flow_label 0x100000" "Invalid flow label" write_bw --flow_label 0x100000
refused "write_bw --reversed" "--reversed swaps the roles of two processes" write_bw --reversed
refused "write_bw --pkey_index x" "Invalid Pkey index" write_bw --pkey_index x
refused "write_bw --rate_units x" "Invalid rate limit units" write_bw --rate_limit 1 --rate_units x
refused "write_bw --rate_limit_type XX" "Invalid rate limit type flag" write_bw --rate_limit 1 --rate_limit_type XX
refused "write_bw --burst_size 4" "Can't enable burst mode when rate limiter is off" write_bw --burst_size 4
refused "write_bw --rate_limit 1" "Unknown rate limit value" write_bw --rate_limit 1
refused "write_bw --rate_limit 10 HW" "failed to accept HW rate limit" write_bw --rate_limit 10 --rate_limit_type HW
refused "write_bw --rate_limit 10 p HW" "pps rate limit units is not supported" write_bw --rate_limit 10 --rate_units p
refused "write_bw --rate_limit 10 g PP" "Packet Pacing only supports MEGA_BYTE_PS" write_bw --rate_limit 10 --rate_limit_type PP
refused "write_bw --typical_pkt_size" "Typical packet size only supports PP" write_bw --rate_limit 1 --rate_limit_type SW --typical_pkt_size 100
refused "write_lat SW" "SW Rate limiter cann't be executed" write_lat --rate_limit 1 --rate_limit_type SW
refused "write_bw SW --run_infinitely" "run_infinitely does not support rate limit" write_bw --rate_limit 1 --rate_limit_type SW --run_infinitely
refused "write_bw PP 1e9 MB/s" "Failed to modify QP to RTS" write_bw --rate_limit 1000000000 --rate_units M --rate_limit_type PP
refused "write_lat --rx_spin=2000" "Invalid rx_spin" write_lat --rx_spin=2000
# (refused once the EAL runs: it has one lcore, -l 0)
refused "write_bw --engine=split, one lcore" "needs a worker lcore" write_bw --engine=split
# seconds and rates that are not finite numbers (strtod takes "inf" and
# "nan"): -D inf ran no message and exited 0, as did a -D too short to
# measure; a datagram no MTU carries is refused before its buffers exist
refused "write_bw -D inf" "Invalid duration" write_bw -D inf
refused "write_bw -D 1e300" "Invalid duration" write_bw -D 1e300
refused "write_bw -D 0.0009" "Invalid duration" write_bw -D 0.0009
refused "write_bw -D nan" "Invalid duration" write_bw -D nan
refused "write_bw -f nan" "Invalid margin" write_bw -D 1 -f nan
refused "write_bw -f inf" "Invalid margin" write_bw -D 1 -f inf
refused "write_bw -w inf" "Invalid minimum BW limit" write_bw -w inf
refused "write_bw -y nan" "Invalid minimum msgRate limit" write_bw -y nan
refused "write_bw --rate_limit inf" "Rate limit must be" write_bw --rate_limit inf --rate_limit_type SW
refused "write_bw --retry_connect nan" "Invalid retry_connect" write_bw --retry_connect nan
# (the HW limiter compared a missing rate's string: a crash)
refused "read_bw --rate_limit_type HW" "needs a --rate_limit" read_bw --rate_limit_type HW
refused "write_bw --rate_limit_type SW" "needs a --rate_limit" write_bw --rate_limit_type SW
refused "send_bw --rate_limit_type PP" "needs a --rate_limit" send_bw --rate_limit_type PP
refused "send_bw -c UD -s 2^31 -q 16384" "Max msg size in UD is MTU 4096" send_bw -c UD -s 2147483648 -q 16384 --mr_per_qp

finish "$RUNS runs"
