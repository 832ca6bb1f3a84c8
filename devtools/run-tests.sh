#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Set up (devtools/setup.sh), then run every test with meson, one at a time.
# The last line of output is always "N passed, N failed" (", N skipped" when
# tests were skipped). Exit status is non-zero if anything failed or if no
# test ran at all.
#
#   bash devtools/run-tests.sh [meson test arguments, e.g. a test name]
#
# Environment (all optional):
#   DROCE_TIMEOUT_MULTIPLIER  meson --timeout-multiplier (default 1)
#   DROCE_CLANG=1             also build everything with clang in
#                             $DROCE_CLANG_BUILD_DIR (default build-clang),
#                             counted as one test "clang build"
#                             (default: 1 when CI=true, else 0)
#   DROCE_TEST_BUDGET         seconds for the whole meson test run (default:
#                             no limit); tests still running are stopped and
#                             the run counts one more failure
#   DROCE_SANITIZE=1          also build everything with clang and
#                             -Db_sanitize=address,undefined (and
#                             -Dstamps=true -Dab=true: the datapath's stamps,
#                             phase A/B) in
#                             $DROCE_ASAN_BUILD_DIR (default build-asan) and
#                             run the suites there (all but 'interop', and
#                             the same meson test arguments), counted as one
#                             test "sanitizer pass": leaks (LeakSanitizer,
#                             DPDK-internal ones listed in test/lsan.supp),
#                             memory errors and undefined behaviour fail it
#                             (UB of reported, unfixed bugs is listed in
#                             test/fuzz/known-ub.supp). About 5 minutes on 2
#                             cores after the build (default: 1 when
#                             CI=true, else 0).
#                             DROCE_SANITIZE_BUDGET: seconds (default 1800);
#                             DROCE_SANITIZE_TIMEOUT_MULTIPLIER (default 3).
#   DROCE_BUILD_DIR and the hugepage knobs of devtools/setup.sh.
# Each meson test run is given DROCE_TEST_TIME_SCALE, its timeout
# multiplier, for the scripts' own budgets (time_budget, test_lib.sh).
#
# Before and after the run, stale droce leftovers no process is using are
# removed: files named droce* in hugetlbfs mounts, DPDK runtime directories
# /run/dpdk/droce*, network namespaces named droce*.

set -uo pipefail

DROCE_TAG=tests
# shellcheck source=devtools/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$DROCE_ROOT" || exit 1

if [[ -z ${DROCE_CLANG:-} ]]; then
	if [[ ${CI:-} == true || ${CI:-} == 1 ]]; then DROCE_CLANG=1; else DROCE_CLANG=0; fi
fi
if [[ -z ${DROCE_SANITIZE:-} ]]; then
	if [[ ${CI:-} == true || ${CI:-} == 1 ]]; then DROCE_SANITIZE=1; else DROCE_SANITIZE=0; fi
fi
DROCE_ASAN_BUILD_DIR=${DROCE_ASAN_BUILD_DIR:-build-asan}

n_pass=0 n_fail=0 n_skip=0
failed_names=()
pass() { n_pass=$((n_pass + 1)); }
fail() { n_fail=$((n_fail + 1)); failed_names+=("$1"); }

summary() {
	if ((n_fail)); then
		droce_log "failed:"
		printf '[tests]   %s\n' "${failed_names[@]}"
	fi
	local line="$n_pass passed, $n_fail failed"
	((n_skip)) && line+=", $n_skip skipped"
	echo "$line"
	((n_fail == 0))
	exit $?
}

pick_python() {
	local p
	for p in /usr/bin/python3 python3; do
		if command -v "$p" >/dev/null 2>&1; then echo "$p"; return; fi
	done
}

# --- stale leftovers ---------------------------------------------------------
cleanup_stale() {
	local when=$1 inuse removed=() kept=() m f d ns
	# Every path some process maps or holds open.
	inuse=$({
		cat /proc/[0-9]*/maps 2>/dev/null | awk '$6 ~ /^\// { print $6 }'
		find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -type l -printf '%l\n' 2>/dev/null
	} | sort -u)
	in_use() { grep -qF -- "$1" <<<"$inuse"; }

	while read -r m; do
		for f in "$m"/droce*; do
			[[ -e $f ]] || continue
			if in_use "$f"; then kept+=("$f (in use)"); continue; fi
			rm -f -- "$f" && removed+=("$f")
		done
	done < <(awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts)

	for d in /run/dpdk/droce*; do
		[[ -d $d ]] || continue
		if in_use "$d/"; then kept+=("$d (in use)"); continue; fi
		rm -rf -- "$d" && removed+=("$d")
	done

	if command -v ip >/dev/null 2>&1; then
		while read -r ns; do
			[[ $ns == droce* ]] || continue
			if [[ -n $(ip netns pids "$ns" 2>/dev/null) ]]; then
				kept+=("netns $ns (in use)")
				continue
			fi
			ip netns delete "$ns" 2>/dev/null && removed+=("netns $ns")
		done < <(ip netns list 2>/dev/null | awk '{ print $1 }')
	fi

	if ((${#removed[@]})); then
		droce_log "cleanup ($when): removed ${#removed[@]} stale: ${removed[*]}"
	else
		droce_log "cleanup ($when): nothing stale"
	fi
	if ((${#kept[@]})); then
		droce_log "cleanup ($when): left alone: ${kept[*]}"
	fi
}

# --- meson test results --------------------------------------------------------
# Prints "<passed> <failed> <skipped>" then one failed test name per line.
count_results() {
	local log=$1 py
	py=$(pick_python)
	if [[ -n $py ]]; then
		"$py" - "$log" <<'EOF'
import json, sys
ok = bad = skip = 0
names = []
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        t = json.loads(line)
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            ok += 1
        elif r == "SKIP":
            skip += 1
        else:
            bad += 1
            names.append("%s (%s)" % (t.get("name"), r))
print(ok, bad, skip)
for n in names:
    print(n)
EOF
	elif command -v jq >/dev/null 2>&1; then
		jq -rs 'def bad: .result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP";
			([ (map(select(.result == "OK" or .result == "EXPECTEDFAIL")) | length),
			   (map(select(bad)) | length),
			   (map(select(.result == "SKIP")) | length) ] | map(tostring) | join(" ")),
			(.[] | select(bad) | "\(.name) (\(.result))")' "$log"
	else
		echo "cannot parse $log: neither python3 nor jq" >&2
		return 1
	fi
}

zero_tests() {
	cat <<EOF
[tests] ############################################################
[tests] ERROR: ZERO TESTS RAN ($1).
[tests] $2
[tests] That counts as a failure.
[tests] ############################################################
EOF
	fail "test suite: zero tests ran ($1)"
}

run_meson_tests() {
	local b=$DROCE_BUILD_DIR log rc counts p f s name
	log=$b/meson-logs/testlog.json
	# (the scripts' own budgets grow with meson's timeouts: time_budget
	# in test/common/test_lib.sh)
	local cmd=(env DROCE_TEST_TIME_SCALE="${DROCE_TIMEOUT_MULTIPLIER:-1}"
		meson test -C "$b" --num-processes 1 --print-errorlogs
		--timeout-multiplier "${DROCE_TIMEOUT_MULTIPLIER:-1}" "$@")
	if [[ -n ${DROCE_TEST_BUDGET:-} ]]; then
		cmd=(timeout --signal=TERM --kill-after=60 "$DROCE_TEST_BUDGET" "${cmd[@]}")
	fi
	rm -f "$log"
	droce_log "${cmd[*]}"
	"${cmd[@]}" </dev/null
	rc=$?
	if ((rc == 124)) && [[ -n ${DROCE_TEST_BUDGET:-} ]]; then
		local listed logged=0
		listed=$(meson test -C "$b" --no-rebuild --list "$@" 2>/dev/null </dev/null | grep -c .)
		[[ -f $log ]] && logged=$(grep -c . "$log")
		fail "test run stopped: over its ${DROCE_TEST_BUDGET} s budget, $((listed - logged)) of $listed tests not run"
	fi
	if [[ ! -s $log ]]; then
		zero_tests "meson test exit status $rc, no $log" \
			"Tests must be registered with meson's test() (see test/meson.build)."
		return
	fi
	if ! counts=$(count_results "$log"); then
		fail "test suite: cannot read $log"
		return
	fi
	read -r p f s <<<"$(head -n 1 <<<"$counts")"
	n_pass=$((n_pass + p)) n_fail=$((n_fail + f)) n_skip=$((n_skip + s))
	while read -r name; do
		[[ -n $name ]] && failed_names+=("$name")
	done < <(tail -n +2 <<<"$counts")
	if ((p + f + s == 0)); then
		zero_tests "empty $log" "meson wrote no result."
	elif ((p + f == 0)); then
		zero_tests "all $s tests skipped" "A test that cannot run here exits 77; not one could run."
	elif ((f == 0 && rc != 0 && rc != 124)); then
		fail "meson test: exit status $rc"
	fi
}

clang_build() {
	local b=$DROCE_CLANG_BUILD_DIR
	if ! command -v clang >/dev/null 2>&1; then
		fail "clang build (no clang)"
		return
	fi
	if [[ ! -f $b/meson-private/coredata.dat ]]; then
		droce_log "clang: CC=clang meson setup $b"
		# shellcheck disable=SC2086
		if ! CC=clang meson setup "$b" ${DROCE_MESON_ARGS:-} </dev/null; then
			fail "clang build (meson setup)"
			return
		fi
	fi
	droce_log "clang: ninja -C $b"
	if ninja -C "$b" </dev/null; then
		pass
		droce_log "clang build: ok"
	else
		fail "clang build"
	fi
}

# The whole suite again, built with ASan + UBSan (clang); one entry.
sanitize_pass() {
	local b=$DROCE_ASAN_BUILD_DIR log rc counts p f s name names=()
	local budget=${DROCE_SANITIZE_BUDGET:-1800}
	if ! command -v clang >/dev/null 2>&1; then
		fail "sanitizer pass (no clang)"
		return
	fi
	if [[ ! -f $b/meson-private/coredata.dat ]]; then
		# (with the datapath's stamps and phase A/B built in: perf-pair
		# then checks them, lib/rdma/droce_stamp.h and droce_ab.h)
		droce_log "sanitizer: CC=clang meson setup $b -Db_sanitize=address,undefined -Db_lundef=false -Dstamps=true -Dab=true"
		# shellcheck disable=SC2086
		if ! CC=clang meson setup "$b" -Db_sanitize=address,undefined \
			-Db_lundef=false -Dstamps=true -Dab=true ${DROCE_MESON_ARGS:-} </dev/null; then
			fail "sanitizer pass (meson setup)"
			return
		fi
	fi
	droce_log "sanitizer: ninja -C $b"
	if ! ninja -C "$b" </dev/null; then
		fail "sanitizer pass (build)"
		return
	fi
	log=$b/meson-logs/testlog.json
	rm -f "$log"
	droce_log "sanitizer: meson test -C $b --no-suite interop $*"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:print_summary=1 \
	LSAN_OPTIONS=suppressions=$DROCE_ROOT/test/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=$DROCE_ROOT/test/fuzz/known-ub.supp \
	DROCE_TEST_TIME_SCALE="${DROCE_SANITIZE_TIMEOUT_MULTIPLIER:-3}" \
	timeout --signal=TERM --kill-after=60 "$budget" \
		meson test -C "$b" --num-processes 1 --print-errorlogs \
		--timeout-multiplier "${DROCE_SANITIZE_TIMEOUT_MULTIPLIER:-3}" \
		--no-suite interop "$@" </dev/null
	rc=$?
	if ((rc == 124)); then
		fail "sanitizer pass (over its $budget s budget)"
		return
	fi
	if [[ ! -s $log ]] || ! counts=$(count_results "$log"); then
		fail "sanitizer pass (meson test exit status $rc, no results)"
		return
	fi
	read -r p f s <<<"$(head -n 1 <<<"$counts")"
	while read -r name; do
		[[ -n $name ]] && names+=("$name")
	done < <(tail -n +2 <<<"$counts")
	if ((f == 0 && rc == 0 && p > 0)); then
		pass
		droce_log "sanitizer pass: ok ($p passed, $s skipped)"
	elif ((f == 0 && p == 0)); then
		fail "sanitizer pass (no test ran)"
	else
		fail "sanitizer pass ($f failed: ${names[*]})"
	fi
}

cleanup_stale before
bash "$DROCE_ROOT/devtools/setup.sh" </dev/null
rc=$?
if ((rc == 3)); then
	fail "gcc build ($DROCE_BUILD_DIR)"
elif ((rc != 0)); then
	fail "setup (devtools/setup.sh exit status $rc)"
	summary
fi
droce_load_eal_env

if ((rc == 0)); then
	run_meson_tests "$@"
fi
if [[ $DROCE_CLANG == 1 ]]; then
	clang_build
fi
if [[ $DROCE_SANITIZE == 1 ]]; then
	sanitize_pass "$@"
fi
cleanup_stale after
summary
