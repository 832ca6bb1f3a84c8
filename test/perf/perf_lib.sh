# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034
#
# Shared prologue of the test/perf scripts (sourced): the program under
# test, a work directory removed on exit (kept with DROCE_TEST_KEEP=1) and
# the processes started in the background killed, a failure counter, and
# the helpers the two-process tests need.
#
# The sourcing script sets NAME (a short name for temporary files) and
# PREFIX (of its EAL --file-prefix, or empty) and passes its arguments;
# then it has:
#   BIN      its first argument (exits 1 if not executable)
#   WORK     the work directory; PIDS: pids to kill at exit (append)
#   LOG      EAL log options; START: $SECONDS at the start
#   fail <message>, FAILS
#   need_two_cores <why>: exits 77 on one core
#   port_listening <port>, free_port, eal_mem_hugepages <MB>
#       (test/common/test_lib.sh)
#   interrupt_after_rows <pid> <file> <regex> <n> <label>: SIGINT to pid
#       once file has n lines matching regex (15 s at most), then up to
#       10 s for it to end (else fail and SIGKILL); pid is not reaped
#   await_listening <label> <pid> <log> <command...>: waits until the
#       command (a listening check) succeeds; fails, shows the log's
#       tail, kills and reaps pid and returns 1 if pid exits first or 20 s
#       pass
#   budget_left <label> <least> <most>: LEFT, the seconds a process of
#       the next run may take (what BUDGET has left, at most <most>);
#       fails and returns 1 when fewer than <least> are left
#   finish <what was run>: the summary line and the exit code

set -u

BIN=${1:?usage: $0 <program>}
START=$SECONDS
unset DROCE_EAL_ARGS DROCE_DEVICES DROCE_EAL_EXTRA_ARGS
if [ ! -x "$BIN" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi
LOG="--log-level=*:warning"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-$NAME.XXXXXX") || exit 1
PIDS=""
perf_lib_cleanup() {
	local p

	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	# the EAL runtime directories of --file-prefix "$PREFIX..." runs
	[ -n "${PREFIX:-}" ] && rm -rf /run/dpdk/"$PREFIX"* 2>/dev/null
	if [ -n "${DROCE_TEST_KEEP:-}" ]; then
		echo "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap perf_lib_cleanup EXIT

FAILS=0
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

need_two_cores() {
	if [ "$(nproc 2>/dev/null || echo 1)" -lt 2 ]; then
		echo "SKIPPED: $*"
		exit 77
	fi
}

# port_listening, free_port, eal_mem_hugepages
# shellcheck source=test/common/test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../common/test_lib.sh"

interrupt_after_rows() {
	local pid=$1 file=$2 re=$3 want=$4 label=$5 n t0=$SECONDS

	# a count that fails is 0: the output file may not exist yet (the
	# forked shell opens it), and a SIGINT before the program installs its
	# handler would be ignored, as by any background job of a script
	while n=$(grep -Ecs "$re" "$file")
		[ "${n:-0}" -lt "$want" ] && kill -0 "$pid" 2>/dev/null &&
		[ $((SECONDS - t0)) -lt 15 ]; do
		sleep 0.1
	done
	kill -INT "$pid" 2>/dev/null
	t0=$SECONDS
	while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - t0)) -lt 10 ]; do
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "$label: still running 10 s after SIGINT"
		kill -9 "$pid" 2>/dev/null
	fi
}

await_listening() {
	local label=$1 pid=$2 log=$3 t0=$SECONDS
	shift 3
	until "$@"; do
		if ! kill -0 "$pid" 2>/dev/null || [ $((SECONDS - t0)) -gt 20 ]; then
			fail "$label: server never listened"
			tail -n 5 "$log" | sed 's/^/    /'
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 1
		fi
		sleep 0.05
	done
}

budget_left() {
	LEFT=$((BUDGET - (SECONDS - START)))
	if [ "$LEFT" -lt "$2" ]; then
		fail "$1: out of time budget (${BUDGET}s)"
		return 1
	fi
	[ "$LEFT" -gt "$3" ] && LEFT=$3
	return 0
}

finish() {
	echo "$*, $FAILS failure(s), $((SECONDS - START)) s"
	[ "$FAILS" -eq 0 ] || exit 1
	exit 0
}
