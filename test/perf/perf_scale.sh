#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Many QPs: droce-perf write_bw --loopback on 16384 QP pairs (32768 QPs in
# one process), 64-byte WRITEs, tx depth 4, perftest's default ACK timeout
# (-u 14, 67 ms), 16 messages per QP; the engine on its own lcore when
# there are two cores. Must finish within a time bound with every message
# completed successfully and the data checked. The engine used to pop and
# re-queue every active QP each iteration while its transmit queue was
# backed up, starving receive: requesters timed out and the run failed
# with IBV_WC_RETRY_EXC_ERR; and setting up the QPs took 40-50 s (each
# control call slept 10 us per look). Never asserts a speed beyond the
# bound.
#
# usage: perf_scale.sh <droce-perf>
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>")

NAME=perf-scale
PREFIX=dsc$$
# shellcheck source=test/perf/perf_lib.sh
. "$(dirname "$0")/perf_lib.sh"
QPS=${DROCE_SCALE_QPS:-16384}
ITERS=16
BOUND=${DROCE_SCALE_BOUND_S:-40}
EAL_MEM=$(eal_mem_hugepages 1024)
if [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then
	CORES=0-1; ENGINE=lcore
else
	CORES=0; ENGINE=app
fi

out=$WORK/out

start=$SECONDS
DROCE_EAL_ARGS="-l $CORES $EAL_MEM --no-pci --log-level=*:warning --file-prefix $PREFIX" \
	timeout -k 2 "$BOUND" "$BIN" write_bw -s 64 -q "$QPS" -t 4 -u 14 \
	-n $ITERS --engine=$ENGINE --loopback --kv --check >"$out" 2>&1
rc=$?
wall=$((SECONDS - start))
kv() { sed -n "s/^DROCE_PERF .* $1=\([^ ]*\).*/\1/p" "$out" | head -n 1; }

if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	fail "$QPS QPs: not done within ${BOUND}s"
elif [ $rc -ne 0 ]; then
	fail "$QPS QPs: exit code $rc"
fi
if [ $FAILS -eq 0 ]; then
	msgs=$((QPS * ITERS))
	[ "$(kv msgs)" = "$msgs" ] || fail "msgs=$(kv msgs), expected $msgs"
	[ "$(kv bytes)" = "$((msgs * 64))" ] || fail "bytes=$(kv bytes)"
	[ "$(kv errors)" = "0" ] || fail "errors=$(kv errors)"
	grep -qx " check: size 64 OK" "$out" || fail "data check did not pass"
	# thousands of QPs: the engine prefetches them ahead (256 or more)
	[ "$(kv c_eng_prefetch)" = "1" ] ||
		fail "c_eng_prefetch=$(kv c_eng_prefetch), expected 1 with $QPS QPs"
	# four WRITEs a visit: the active list is prefetched a QP further
	# ahead, with the next QP's source line (eng_deep_turns; ~800-1100
	# turns here, ASan or not)
	[ "$(kv c_eng_deep_turns)" -gt 0 ] 2>/dev/null ||
		fail "c_eng_deep_turns=$(kv c_eng_deep_turns), expected > 0 at -t 4"
fi
echo "$QPS QP pairs, engine=$ENGINE: ${wall}s; msg_rate=$(kv msg_rate)" \
	"timeouts=$(kv c_timeouts) retransmits=$(kv c_retransmits)"
if [ $FAILS -ne 0 ]; then
	tail -n 15 "$out" | sed 's/^/    /'
	exit 1
fi
exit 0
