# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
#
# Shell helpers of the test scripts (sourced by test/examples/pingpong_lib.sh,
# test/perf/perf_lib.sh, test/interop/lib.sh; devtools/bench/lib.sh for the
# ports and memif_frames). TCP ports on this machine, for the out-of-band
# exchange of two-process tests, from /proc/net/tcp{,6}:
#   port_in_use <port>     any socket on it, in any state (TIME_WAIT too)
#   port_listening <port>  a socket listening on it
#   free_port              a port in 20000..59999 no socket uses
# EAL memory:
#   eal_mem_hugepages <MB>  --in-memory when 1 GiB of hugepages is free,
#                          else --no-huge --no-shconf -m <MB>;
#                          DROCE_TEST_EAL_MEM overrides
# memif frames for a path MTU (see below):
#   memif_frames <path mtu>  sets MEMIF_FRAME_ARGS and PORT_FRAME_ARGS
# A script's own time budget:
#   time_budget <seconds>  the budget for this run: seconds times
#                          DROCE_TEST_TIME_SCALE (devtools/run-tests.sh
#                          exports meson's timeout multiplier there, 3 in
#                          the sanitizer pass), so a budget kept below
#                          meson's timeout stays below it when that grows

port_in_use() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p {f=1}
			  END {exit !f}' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && $4 == "0A" &&
			  substr($2, length($2) - 4) == p {f=1}
			  END {exit !f}' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

free_port() {
	local p
	for _ in $(seq 1 200); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		port_in_use "$p" || { echo "$p"; return 0; }
	done
	return 1
}

time_budget() {
	awk -v s="$1" -v m="${DROCE_TEST_TIME_SCALE:-1}" \
		'BEGIN { if (m + 0 < 1) m = 1; printf "%d\n", s * m }'
}

eal_mem_hugepages() {
	local hp_free hp_kb

	if [ -n "${DROCE_TEST_EAL_MEM:-}" ]; then
		echo "$DROCE_TEST_EAL_MEM"
		return
	fi
	hp_free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo 2>/dev/null)
	hp_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo 2>/dev/null)
	if [ $(( ${hp_free:-0} * ${hp_kb:-0} )) -ge $((1024 * 1024)) ]; then
		echo "--in-memory"
	else
		echo "--no-huge --no-shconf -m $1"
	fi
}

# DPDK 22.11's memif reports 1518-byte frames at most (ethdev then refuses
# a larger MTU) but carries any frame that fits one of its buffers. For a
# path MTU whose frames are larger: memif buffers of <path mtu> + 256 bytes
# (",bsize=..." for both memif vdevs) and the L3 MTU the port really carries
# (",port_mtu=..." for both droce devices; droce sizes its path MTU and
# mbufs by it and configures ethdev within the reported limit).
memif_frames() {
	MEMIF_FRAME_ARGS=",bsize=$(($1 + 256))"
	PORT_FRAME_ARGS=",port_mtu=$(($1 + 192))"
}
