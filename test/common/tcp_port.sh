# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
#
# TCP ports on this machine, for the out-of-band exchange of two-process
# tests and benchmarks (sourced by test/examples/pingpong_lib.sh,
# test/perf/perf_lib.sh and devtools/bench/lib.sh), from /proc/net/tcp{,6}:
#   port_in_use <port>     any socket on it, in any state (TIME_WAIT too)
#   port_listening <port>  a socket listening on it
#   free_port              a port in 20000..59999 no socket uses

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
