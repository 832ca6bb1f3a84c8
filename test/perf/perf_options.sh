#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# droce-perf given random options: seeded random tests with up to six of
# perftest's and droce-perf's options each, values at and past each
# range's ends, words it does not know, combinations perftest refuses.
# Every run is a whole --loopback run (--kv --check), so what the parser
# accepts also reaches the run. A run passes when it exits 0 or 1 (a
# refusal, a resource a device lacks), in bounded time, with no data
# check failed, no completion in error, no sanitizer report and no EAL
# runtime directory left; one that exits 0 must have printed its summary
# with no errors. A failure prints the command to repeat it.
#
# usage: perf_options.sh <droce-perf>
# exit: 0 pass, 1 fail
#
# Environment (optional):
#   DROCE_TEST_SEED       the seed (default: from the clock; printed)
#   DROCE_PERF_OPT_RUNS   how many runs (default 40; the budget may end
#                         them sooner, which is not a failure)
#   DROCE_PERF_OPT_PAIRS  how many two-process pairs then (default 6)
#   DROCE_TEST_EAL_MEM    EAL memory options (default: --in-memory when
#                         hugepages are free, else --no-huge --no-shconf -m 512)

NAME=perf-options
PREFIX=dpo$$
# shellcheck source=test/perf/perf_lib.sh
. "$(dirname "$0")/perf_lib.sh"
BUDGET=$(time_budget 70)
RUN_S=$(time_budget 20)		# a run's bound (a sanitizer build is slower)
EAL_MEM=$(eal_mem_hugepages 512)
NPROC=$(nproc 2>/dev/null || echo 1)
SEED=${DROCE_TEST_SEED:-$(( $(date +%s) % 1000000 ))}
WANT=${DROCE_PERF_OPT_RUNS:-40}
RANDOM=$SEED
echo "seed $SEED (DROCE_TEST_SEED=$SEED repeats the runs)"

TESTS=(write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat)
# option|values (space separated; '' for a flag). Sizes and counts stay
# small enough that any combination ends within seconds; what is past a
# range is there to be refused.
OPTS=(
	"-s|1 2 8 64 1000 4096 65536 1048576 0 -1 x 2147483649"
	"-n|5 50 200 4 x"
	"-D|0.05 0.001 0 inf nan 0.0009"
	"-f|0 0.01 1 nan"
	"-q|1 2 16 64 0 16385"
	"-t|1 2 64 16384 0"
	"-r|1 64 512 0"
	"-l|1 2 4 16 0 4097"
	"-I|0 1 64 220 4096 4097"
	"-o|1 16 0 65536"
	"-Q|1 2 100 0"
	"-c|RC UC UD XRC"
	"-m|256 1024 4096 300"
	"-x|0 1 3 256"
	"-u|0 14 31 32"
	"-A|CMP_AND_SWAP FETCH_AND_ADD XX"
	"-a|"
	"-b|"
	"-e|"
	"-N|"
	"-C|"
	"-H|"
	"-U|"
	"-F|"
	"--report_gbits|"
	"--use-srq|"
	"--output|bandwidth message_rate latency x"
	"--engine|app lcore split x"
	"--post_drive|0 1 32 1048576 1048577"
	"--rx_spin|0 8 1024 1025"
	"--idle_us|0 1000000"
	"--nb_mbuf|1023 1024 x"
	"--zc_min|0 64 65536 65537"
	"--per_qp|"
	"--cycles|"
	"--no_info|"
	"--use_old_post_send|"
	"--mr_per_qp|"
	"--use_hugepages|"
	"--no_lock|"
	"--cpu_util|"
	"--reversed|"
	"--latency_gap|0 10 1000001"
	"-w|0 1e-9 nan"
	"-y|0 1e-9 inf"
	"--tclass|0 255 256"
	"--flow_label|0 1048575 1048576"
	"--rate_limit|0.5 10 100 0"
	"--rate_limit_type|SW HW PP x"
	"--rate_units|M g p"
	"--burst_size|0 4 x"
	"--typical_pkt_size|0 100 65536"
	"--pkey_index|0 1"
	"-X|0 1"
	"--out_json|"
	"--inline_recv|0 x"
	"--retry_count|0 7 x"
	"-T|0"
	"-g|"
	"-R|"
	"--dont_xchg_versions|"
	"--bogus|"
)

pick() {
	local -a w
	read -r -a w <<<"$1"
	echo "${w[RANDOM % ${#w[@]}]}"
}

# runs in the work directory: --out_json writes perftest_out.json there
BIN=$(readlink -f "$BIN")
cd "$WORK" || exit 1
N=0
while [ "$N" -lt "$WANT" ]; do
	LEFT=$((BUDGET - (SECONDS - START)))
	# a run may take RUN_S; fewer left ends the series (not a failure)
	[ "$LEFT" -ge "$RUN_S" ] || { echo "budget reached after $N runs"; break; }
	N=$((N + 1))
	args=("${TESTS[RANDOM % ${#TESTS[@]}]}")
	k=$((RANDOM % 7))
	has_len=0
	for _ in $(seq $k); do
		o=${OPTS[RANDOM % ${#OPTS[@]}]}
		name=${o%%|*}
		vals=${o#*|}
		case $name in -n | -D) has_len=1 ;; esac
		if [ -z "$vals" ]; then
			args+=("$name")
		else
			args+=("$name" "$(pick "$vals")")
		fi
	done
	# perftest's default iterations (5 000) times 64 QPs of 1 MiB
	# would run for minutes
	[ $has_len = 1 ] || args+=(-n "$(pick "5 50 200")")
	# and so would -a (2 B to 8 MiB) or 1 MiB on many QPs: the last -n
	# and -q given win, as in perftest
	if printf '%s\n' "${args[@]}" | grep -qx -- -a; then
		args+=(-n 5 -q 2)
	elif printf '%s\n' "${args[@]}" | grep -qx 1048576; then
		args+=(-q 2)
	fi
	# one lcore (an app-driven engine) or two (the engine on its own:
	# one polling thread a core)
	lcores=0
	[ "$NPROC" -ge 2 ] && [ $((RANDOM % 3)) = 0 ] && lcores=0-1
	out=$WORK/$N.out
	rm -f "$out"
	DROCE_EAL_ARGS="-l $lcores $EAL_MEM --no-pci $LOG --file-prefix ${PREFIX}r" \
		timeout -k 2 "$RUN_S" "$BIN" "${args[@]}" --loopback --kv --check \
		>"$out" 2>&1
	rc=$?
	again="DROCE_TEST_SEED=$SEED run $N: DROCE_EAL_ARGS=\"-l $lcores ...\" $(basename "$BIN") ${args[*]} --loopback --kv --check"
	why=
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		why="not done in $RUN_S s"
	elif [ $rc -gt 1 ]; then
		why="exit code $rc"
	elif grep -Eq "check: FAILED|differs|Completion with error|runtime error|Sanitizer" "$out"; then
		why=$(grep -Em1 "check: FAILED|differs|Completion with error|runtime error|Sanitizer" "$out")
	elif [ $rc -eq 0 ] && ! grep -q '^DROCE_PERF ' "$out"; then
		why="exit code 0 without a summary line"
	elif [ $rc -eq 0 ] && grep '^DROCE_PERF ' "$out" | grep -qv ' errors=0 '; then
		why="a summary with errors: $(grep '^DROCE_PERF ' "$out" | grep -v ' errors=0 ' | head -n 1 | cut -c1-160)"
	elif [ "$(id -u)" -eq 0 ] && [ -e "/run/dpdk/${PREFIX}r" ]; then
		why="/run/dpdk/${PREFIX}r left behind"
		rm -rf "/run/dpdk/${PREFIX}r"
	fi
	if [ -n "$why" ]; then
		fail "$why"
		echo "    $again"
		tail -n 4 "$out" | sed 's/^/    /'
	fi
	# a tally of what the runs did: refused, ran
	[ $rc -eq 0 ] && RAN=$((${RAN:-0} + 1))
done
echo "$N runs: ${RAN:-0} ran to the end, $((N - ${RAN:-0})) refused or failed as allowed"

# Then two processes (a memif pair, perftest's exchange on 127.0.0.1),
# each end with its own options, the same ones half the time: ends given
# different options read each other's messages out of step, and must
# still both end (exit 0 or 1), the server within 12 s of the client.
# A client that refused its options never connected: its server waits
# for a client, as perftest's does, and is stopped. So is a server that
# refused its own: no client runs.
PAIRS=${DROCE_PERF_OPT_PAIRS:-6}
PAIR_OPTS=("-q 2" "-q 4" "-s 64" "-s 4096" "-s 1000" "-b" "-c UC" "-c UD"
	"-t 16" "-l 4" "-Q 7" "-a" "-D 0.3" "-I 64" "--use-srq" "-e" "-o 4"
	"-A CMP_AND_SWAP" "-m 1024" "-r 64" "-x 0" "--reversed" "--mr_per_qp"
	"--use_old_post_send")
PAIR_S=$(time_budget 25)
pair_args() {
	local a="${TESTS[RANDOM % ${#TESTS[@]}]} -n 200"
	for _ in $(seq $((RANDOM % 4))); do
		a="$a ${PAIR_OPTS[RANDOM % ${#PAIR_OPTS[@]}]}"
	done
	echo "$a"
}
P=0
if [ "$NPROC" -lt 2 ]; then
	echo "pairs skipped: two processes need two cores"
	PAIRS=0
fi
while [ "$P" -lt "$PAIRS" ]; do
	LEFT=$((BUDGET - (SECONDS - START)))
	[ "$LEFT" -ge $((PAIR_S + 15)) ] || { echo "budget reached after $P pairs"; break; }
	P=$((P + 1))
	sa=$(pair_args)
	ca=$sa
	[ $((RANDOM % 2)) = 0 ] || ca=$(pair_args)
	sock=$WORK/memif.$P.sock
	port=$(free_port) || { fail "pair $P: no free TCP port"; break; }
	so=$WORK/pair$P.server
	co=$WORK/pair$P.client
	again="DROCE_TEST_SEED=$SEED pair $P: server '$sa', client '$ca'"
	# shellcheck disable=SC2086
	DROCE_EAL_ARGS="-l 0 --no-huge -m 256 --no-pci $LOG --file-prefix ${PREFIX}s --vdev=net_memif0,role=server,socket=$sock" \
	DROCE_DEVICES="port=net_memif0,ip=198.18.0.1,lcore=app" \
		timeout -k 2 "$PAIR_S" "$BIN" $sa -p "$port" >"$so" 2>&1 &
	spid=$!
	PIDS="$PIDS $spid"
	t0=$SECONDS
	until port_listening "$port" || ! kill -0 $spid 2>/dev/null ||
		[ $((SECONDS - t0)) -gt 20 ]; do
		sleep 0.05
	done
	crc=-
	if port_listening "$port"; then
		# shellcheck disable=SC2086
		DROCE_EAL_ARGS="-l 1 --no-huge -m 256 --no-pci $LOG --file-prefix ${PREFIX}c --vdev=net_memif0,role=client,socket=$sock" \
		DROCE_DEVICES="port=net_memif0,ip=198.18.0.2,lcore=app" \
			timeout -k 2 "$PAIR_S" "$BIN" $ca -p "$port" 127.0.0.1 >"$co" 2>&1
		crc=$?
		if ! grep -q "local address" "$co"; then
			kill $spid 2>/dev/null	# (never connected)
		else
			t0=$SECONDS
			while kill -0 $spid 2>/dev/null && [ $((SECONDS - t0)) -lt 12 ]; do
				sleep 0.1
			done
			if kill -0 $spid 2>/dev/null; then
				fail "pair $P: the server still runs 12 s after its client ended"
				echo "    $again"
				kill $spid 2>/dev/null
			fi
		fi
	else
		kill $spid 2>/dev/null	# (refused its options, or never listened)
	fi
	wait $spid 2>/dev/null
	src=$?
	rm -f "$sock"
	case $crc in
	-|0|1) ;;
	*) fail "pair $P: client exit code $crc"; echo "    $again"; tail -n 3 "$co" | sed 's/^/    /' ;;
	esac
	# (143: stopped by the test, as meant above)
	case $src in
	0|1|143) ;;
	*) fail "pair $P: server exit code $src"; echo "    $again"; tail -n 3 "$so" | sed 's/^/    /' ;;
	esac
	if grep -Eq "runtime error|Sanitizer|check: FAILED" "$so" "$co" 2>/dev/null; then
		fail "pair $P: $(grep -Ehm1 "runtime error|Sanitizer|check: FAILED" "$so" "$co")"
		echo "    $again"
	fi
done
[ "$PAIRS" -gt 0 ] && echo "$P pairs of two processes ended"
finish "$N runs, $P pairs (seed $SEED)"
