#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The fuzz harness <name> as a meson test (suite 'fuzz'):
#   fuzz-test.sh <binary> <name> <test/fuzz dir> <artifact dir> <runs> <seconds>
#   fuzz-test.sh <binary> <name> <test/fuzz dir> replay
# The second form is for harnesses built without libFuzzer (gcc, with
# fz_standalone.c): the regression inputs, then every corpus input once;
# an open-* input that does not fail there proves nothing (no sanitizer
# may be watching), so it is only reported.
# 1. every input of regress_<name>/ once, each in its own process, with no
#    suppression at all: a crash found earlier must stay fixed. Inputs
#    named open-* reproduce a bug that is reported but not fixed yet: they
#    must still fail (XFAIL); once one passes (XPASS) the test fails until
#    it is renamed without the prefix, so that it guards the fix;
# 2. a deterministic libFuzzer run: corpus_<name>/ loaded (so every seed
#    runs), then <runs> mutations from -seed=1, for at most <seconds>, with
#    the UB of known, reported bugs suppressed (known-ub.supp) and the
#    harnesses steering around their triggers (FZ_AVOID_OPEN_BUGS=1), so
#    that the run looks for new ones. New inputs go to a scratch directory removed
#    afterwards; a crash, leak or timeout stays in <artifact dir> and is
#    printed in hex so the test log alone shows it.
# Exit status: 0 only if both parts passed. Longer runs: devtools/fuzz.sh.
set -u
exe=$1 name=$2 src=$3 art=$4
replay=0
if [ "$art" = replay ]; then
	replay=1
	art=$(mktemp -d "${TMPDIR:-/tmp}/droce-fuzz-art.XXXXXX") || exit 1
else
	runs=$5 secs=$6
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/droce-fuzz-$name.XXXXXX") || exit 1
trap 'rm -rf "$work"; [ $replay = 1 ] && rm -rf "$art"' EXIT
trap 'exit 143' INT TERM
mkdir -p "$work/corpus" "$art" || exit 1
rm -f "$art/$name"-*

show() {
	for f in "$art/$name"-*; do
		[ -f "$f" ] || continue
		echo "artifact $f:"
		od -A x -t x1z -v "$f" | head -n 64
	done
}

fail=0
n=0 nx=0
for f in "$src/regress_$name"/*; do
	if [ ! -f "$f" ] || [ ! -s "$f" ]; then
		continue
	fi
	b=$(basename "$f")
	n=$((n + 1))
	# no suppression here, whatever the caller's environment says
	if FZ_AVOID_OPEN_BUGS=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	   "$exe" -runs=1 "$f" >"$work/regress.log" 2>&1; then
		case $b in
		open-*)
			if [ $replay = 1 ]; then
				echo "fuzz_$name: $b passes here (no sanitizer to see it?)"
			else
				echo "fuzz_$name: XPASS $b: the bug is fixed; rename" \
				     "it without 'open-' (and drop its known-ub.supp line)"
				fail=1
			fi ;;
		esac
		continue
	fi
	case $b in
	open-*)
		nx=$((nx + 1))
		echo "fuzz_$name: XFAIL $b (open bug, see doc/security.md):"
		grep -m 3 -E 'ERROR|runtime error|fz_env|fuzz_' "$work/regress.log" ;;
	*)
		echo "fuzz_$name: REGRESSION: $b fails again:"
		grep -E 'ERROR|runtime error|SUMMARY|fz_env|fuzz_|#[0-9]+ 0x' \
			"$work/regress.log" | head -n 30
		fail=1 ;;
	esac
done
echo "fuzz_$name: $n regression inputs replayed, $nx of them open bugs"

if [ $replay = 1 ]; then
	if ! "$exe" "$src/corpus_$name"; then
		echo "fuzz_$name: a corpus input fails"
		fail=1
	fi
	exit $fail
fi

dict=
[ -f "$src/$name.dict" ] && dict="-dict=$src/$name.dict"
# shellcheck disable=SC2086
FZ_AVOID_OPEN_BUGS=1 \
UBSAN_OPTIONS="suppressions=$src/known-ub.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
"$exe" -seed=1 -runs="$runs" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=4096 -print_final_stats=1 $dict \
	-artifact_prefix="$art/$name-" "$work/corpus" "$src/corpus_$name"
rc=$?
if [ $rc -ne 0 ]; then
	echo "fuzz_$name: libFuzzer exit status $rc"
	show
	echo "To reproduce: $exe <artifact>; then add it to $src/regress_$name/"
	fail=1
fi
exit $fail
