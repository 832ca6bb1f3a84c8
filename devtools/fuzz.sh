#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A longer libFuzzer run of one harness (see doc/security.md).
#
#   bash devtools/fuzz.sh <parse|rx|post|verbs|args|console> [seconds] [-- libFuzzer options]
#   bash devtools/fuzz.sh --merge <parse|rx|post|verbs|args|console>   # fold the run's new
#                                                    # inputs into the seeds
#
# Builds the harness with clang (ASan + UBSan + libFuzzer) in
# $DROCE_FUZZ_BUILD_DIR (default build-fz) if needed, then fuzzes for
# [seconds] (default 600) starting from test/fuzz/corpus_<h>. What it learns
# stays in <build>/fuzz-work/<h>/corpus across runs; crashes, leaks and
# timeouts land in <build>/fuzz-work/<h>/artifacts. Bugs already reported
# and not fixed do not stop the run: their UB is suppressed
# (test/fuzz/known-ub.supp) and the harnesses steer around their triggers
# (FZ_AVOID_OPEN_BUGS=1; set it to 0 to hit them).
# FUZZ_JOBS=<n> runs n jobs in parallel (libFuzzer -jobs/-workers).
# Exit status: 0 if nothing was found.
#
# A crash: reproduce with `<build>/test/fuzz/fuzz_<h> <artifact>`
# (FZ_VERBOSE=1 shows the engine's log and, for rx, the QP state after each
# frame), minimise with -minimize_crash=1 -runs=10000, and add it to
# test/fuzz/regress_<h>/ (named open-<what> while the bug is not fixed).

set -uo pipefail
DROCE_TAG=fuzz
# shellcheck source=devtools/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$DROCE_ROOT" || exit 1

merge=0
if [[ ${1:-} == --merge ]]; then
	merge=1
	shift
fi
h=${1:-}
h=${h#fuzz_}
case $h in
parse|rx|post|verbs|args|console) ;;
*) droce_die "usage: $0 [--merge] <parse|rx|post|verbs|args|console> [seconds] [-- libFuzzer options]" ;;
esac
shift
secs=600
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
	secs=$1
	shift
fi
[[ ${1:-} == -- ]] && shift

b=${DROCE_FUZZ_BUILD_DIR:-build-fz}
command -v clang >/dev/null || droce_die "clang is needed (apt-get install clang libclang-rt-14-dev)"
if [[ ! -f $b/meson-private/coredata.dat ]]; then
	droce_log "CC=clang meson setup $b"
	CC=clang meson setup "$b" >/dev/null || droce_die "meson setup $b failed"
fi
ninja -C "$b" "test/fuzz/fuzz_$h" >/dev/null || droce_die "build of fuzz_$h failed"
exe=$b/test/fuzz/fuzz_$h
if [[ $("$exe" -help=1 2>&1) != *max_total_time* ]]; then
	droce_die "$b was not built with libFuzzer (is it a clang build?)"
fi

work=$b/fuzz-work/$h
mkdir -p "$work/corpus" "$work/artifacts"
src=test/fuzz

if ((merge)); then
	before=$(find "$src/corpus_$h" -type f | wc -l)
	# New edges only, not new hit counts of known ones (-use_counters=0):
	# a 40-minute fuzz_verbs run kept 2 500 inputs by counts and 490 by
	# edges, and the seeds are replayed by every test run.
	"$exe" -merge=1 -use_counters=0 -use_value_profile=0 \
		"$src/corpus_$h" "$work/corpus" >"$work/merge.log" 2>&1 ||
		droce_die "merge failed, see $work/merge.log"
	after=$(find "$src/corpus_$h" -type f | wc -l)
	droce_log "corpus_$h: $before -> $after files ($(cat "$src/corpus_$h"/* | wc -c) bytes);" \
		"keep it to a few hundred KB"
	exit 0
fi

jobs=()
if [[ -n ${FUZZ_JOBS:-} ]]; then
	jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
fi
droce_log "fuzz_$h for $secs s; corpus $work/corpus, artifacts $work/artifacts"
FZ_AVOID_OPEN_BUGS=${FZ_AVOID_OPEN_BUGS:-1} \
UBSAN_OPTIONS="suppressions=$DROCE_ROOT/$src/known-ub.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
"$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
	-print_final_stats=1 -dict="$src/$h.dict" \
	-artifact_prefix="$work/artifacts/" "${jobs[@]}" "$@" \
	"$work/corpus" "$src/corpus_$h"
rc=$?
found=$(find "$work/artifacts" -type f -newer "$work/corpus" 2>/dev/null | wc -l)
if ((rc != 0)); then
	droce_log "fuzz_$h stopped with status $rc; artifacts:"
	ls -l "$work/artifacts"
	droce_log "reproduce: $exe <artifact>"
	exit 1
fi
droce_log "fuzz_$h: nothing found in $secs s ($found new artifacts)"
exit 0
