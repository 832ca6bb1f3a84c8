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

finish() {
	echo "$*, $FAILS failure(s), $((SECONDS - START)) s"
	[ "$FAILS" -eq 0 ] || exit 1
	exit 0
}
