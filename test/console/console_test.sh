#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Tests of app/droce-console: scripts through --cmdfile and --batch (output
# and exit codes), bad arguments, the interactive prompt under a
# pseudo-terminal (tmux), packet capture to pcapng (decoded by tshark when
# it is installed), and the transports and objects beyond RC: UD, UC, SRQs,
# memory windows, async events (the scripts <feature>.cmd and
# <feature>-bad.cmd next to this one).
#
# usage: console_test.sh <droce-console> <demo.cmd> <mode>
#   mode: demo | batch-ok | batch-fail | bad-args | interactive | capture |
#         ud | uc | srq | mw | events
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>")
#
# Every console run is bounded by timeout(1); temporary files and the
# private tmux server are removed on any exit.

set -u

BIN=${1:?usage: $0 <droce-console> <demo.cmd> <mode>}
DEMO=${2:?usage: $0 <droce-console> <demo.cmd> <mode>}
MODE=${3:?usage: $0 <droce-console> <demo.cmd> <mode>}
HERE=$(cd "$(dirname "$0")" && pwd)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-console-$MODE.XXXXXX") || exit 1
TMUX_SOCK=droce-console-test-$$
cleanup() {
	if command -v tmux >/dev/null 2>&1; then
		tmux -L "$TMUX_SOCK" kill-server >/dev/null 2>&1
	fi
	rm -rf "$WORK"
	[[ -n ${EAL_PREFIX:-} ]] && rm -rf "/run/dpdk/$EAL_PREFIX"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	for f in "$WORK"/out "$WORK"/err; do
		[[ -s $f ]] && { echo "---- $(basename "$f") (last 40 lines)"; tail -n 40 "$f"; }
	done
	exit 1
}
pass() { echo "PASS: $*"; exit 0; }
skip() { echo "SKIPPED: $*"; exit 77; }

[[ -x $BIN ]] || fail "$BIN is not executable"

# No hugepages free and nobody said what to do: run the EAL without them.
if [[ -z ${DROCE_EAL_EXTRA_ARGS:-} ]]; then
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo 2>/dev/null)
	if [[ -z $free || $free -lt 64 ]]; then
		export DROCE_EAL_EXTRA_ARGS="--no-huge -m 1024"
	fi
fi
unset DROCE_EAL_ARGS DROCE_DEVICES
# A runtime directory of this run's own (the EAL makes one even with
# --in-memory), removed on exit; the default one (rte) was left behind.
EAL_PREFIX=droce-console-$$
export DROCE_EAL_EXTRA_ARGS="${DROCE_EAL_EXTRA_ARGS:+$DROCE_EAL_EXTRA_ARGS }--file-prefix=$EAL_PREFIX"

# run <seconds> <console args...>: stdout to out, stderr to err, sets RC
run() {
	local secs=$1
	shift
	timeout -k 5 "$secs" "$BIN" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
	[[ $RC == 124 || $RC == 137 ]] && fail "the console did not finish in $secs s"
	[[ $RC -ge 128 ]] && fail "the console died with signal $((RC - 128))"
	return 0
}

expect_out() {
	grep -q -- "$1" "$WORK/out" || fail "output lacks '$1'"
}

# The common prelude: two nodes, one MR each, connected RC QPs.
prelude() {
	cat <<'EOF'
create pd 0
create pd 1
create mr 0 1m fill random 3
create mr 1 1m
create cq 0
create cq 1
create qp 0 0
create qp 1 1
connect qp 0 1 mtu 1024
EOF
}

# feature <name> [<regex the good run must print>...]
#
# <name>.cmd runs under --batch: exit 0, every operation and check passed.
# <name>.cmd + <name>-bad.cmd under --cmdfile: each bad line fails with the
# message its "# expect: <text>" comment gives, and nothing else fails.
# The same under --batch: a non-zero exit at the first bad line, named on
# stderr, and no later line runs.
feature() {
	local name=$1 good=$HERE/$1.cmd bad=$HERE/$1-bad.cmd re ngood nbad nerr first
	shift
	[[ -r $good && -r $bad ]] || fail "missing $good or $bad"
	run 40 -- --batch <"$good"
	[[ $RC == 0 ]] || fail "$name.cmd under --batch exited $RC"
	expect_out "RESULT: all operations completed"
	grep -q 'check FAILED' "$WORK/out" && fail "$name.cmd: a data check failed"
	for re in "$@"; do
		grep -Eq -- "$re" "$WORK/out" || fail "$name.cmd: output lacks /$re/"
	done
	ngood=$(wc -l <"$good")
	nbad=$(grep -c '# expect: ' "$bad")
	cat "$good" "$bad" >"$WORK/all.cmd"
	run 40 -- --cmdfile "$WORK/all.cmd"
	[[ $RC == 1 ]] || fail "$name: --cmdfile with $nbad failing commands exited $RC, not 1"
	while IFS= read -r line; do
		[[ $line == *'# expect: '* ]] || continue
		grep -qF -- "error: ${line#*# expect: }" "$WORK/out" ||
			fail "$name: no 'error: ${line#*# expect: }' for: ${line%%#*}"
	done <"$bad"
	nerr=$(grep -c '^error: ' "$WORK/out")
	[[ $nerr == "$nbad" ]] || fail "$name: $nerr 'error:' lines for $nbad failing commands"
	grep -q "all.cmd: $nbad commands failed" "$WORK/err" || fail "$name: the failure count is not $nbad"
	# --batch stops at the first failing line and says which
	first=$((ngood + $(grep -n '# expect: ' "$bad" | head -1 | cut -d: -f1)))
	printf 'echo NOT-REACHED\n' >>"$WORK/all.cmd"
	run 40 -- --batch <"$WORK/all.cmd"
	[[ $RC != 0 ]] || fail "$name: --batch exited 0 after a failing command"
	grep -q "stdin:$first: command failed" "$WORK/err" ||
		fail "$name: --batch does not stop at stdin:$first"
	grep -q NOT-REACHED "$WORK/out" && fail "$name: --batch went on after the failing command"
	[[ $(grep -c '^error: ' "$WORK/out") == 1 ]] || fail "$name: --batch ran more than one failing command"
	pass "$name: $name.cmd ok under --batch; $nbad failing commands, each with its message; --batch stops at the first (exit $RC)"
}

case $MODE in
ud)
	feature ud 'transport UD: qkey 0x00004343' 'rx_bad_qkey +1 ' \
		'^  send +UD +SEND .* ok' '^  send_imm +UD ' '^  recv +UD +RECV +3 +3 +0 ' \
		'wc_flags GRH\|WITH_IMM' 'create ah <its dev> ::ffff:198.18.0.2'
	;;
uc)
	feature uc 'transport UC: unacknowledged' 'connected \(UC,' \
		'^  write +UC +RDMA_WRITE .* ok' '^  write_imm +UC ' '^  send +UC ' \
		'traffic flow 0: qp 0 write .* [1-9][0-9]* ops in' \
		'traffic flow 0: qp 0 send .* [1-9][0-9]* ops in'
	;;
srq)
	feature srq 'srq 0 +pd 1 \(droce1\) +size 8 +sge 2 +posted 4 +limit 3 armed +qps 2,3' \
		'event: dev 1 \(droce1\): srq_limit_reached .* srq 0' 'limit 0 \(not armed\)' \
		'receives: from srq 0' '^  recv +SRQ +RECV +4 +3 +0 '
	;;
mw)
	feature mw 'mw 0 +pd 1 .* bound: mr 1 \+65536 len 32768 access rw,rr, to qp 1' \
		'not bound \(invalidated\)' 'wc_flags WITH_INV' \
		'BIND_MW mw 1 type 1 rkey .*: mr 1 \+0 access rw,' 'mw 1 +pd 1 .* type 1 .* not bound$' \
		'^  bind_mw +RC +BIND_MW +5 +5 +0 ' '^  local_inv +RC .* ok' '^  send_inv +RC .* ok'
	;;
pace)
	# the first flow (4 KiB WRITEs) under 40 Mbit/s of frames, the second
	# (2 KiB) under 80: payload below 0.05 and 0.09 Gbit/s (unpaced: 2-20)
	feature pace 'pacing: 40000 kbit/s of frames, max_burst_sz 8192 B, .* waiting' \
		'pace_waits [1-9]' 'RTS -> RTS \(state\|rate_limit\)' 'pacing: off' \
		'qp 0: not paced' \
		'write 4096 B x depth 8: [1-9][0-9]* ops in [0-9.]+ s = [0-9]+ msg/s, 0\.0[0-4][0-9] Gbit/s' \
		'write 2048 B x depth 8: [1-9][0-9]* ops in [0-9.]+ s = [0-9]+ msg/s, 0\.0[0-8][0-9] Gbit/s'
	;;
events)
	feature events 'event: dev 1 \(droce1\): srq_limit_reached' \
		'event: dev 1 \(droce1\): qp_access_err .* qp 1 ' \
		'event: dev 1 \(droce1\): qp_last_wqe_reached .* qp 1 ' 'no async events on this device' \
		'ok, 1 expected error'
	;;
demo)
	# The built-in demo: every operation, data checks, traffic, summary.
	t0=$(date +%s%N)
	run 50 -- --cmdfile "$DEMO"
	ms=$((($(date +%s%N) - t0) / 1000000))
	[[ $RC == 0 ]] || fail "demo exited $RC"
	expect_out "RESULT: all operations completed"
	for row in "RC SEND" "RC SEND_WITH_IMM" "RC RDMA_WRITE" "RC RDMA_WRITE_WITH_IMM" \
		   "RC RDMA_READ" "RC ATOMIC_CMP_AND_SWP" "RC ATOMIC_FETCH_AND_ADD" \
		   "RC SEND_WITH_INV" "RC BIND_MW" "RC LOCAL_INV" "RC RECV" \
		   "UD SEND" "UD SEND_WITH_IMM" "UD RECV" "UC RDMA_WRITE" "UC SEND_WITH_IMM" \
		   "UC RECV" "SRQ RECV"; do
		grep -Eq "^  [a-z_]+ +${row% *} +${row#* } +[0-9]+ +[1-9][0-9]* +0 +[0-9]+  ok" "$WORK/out" ||
			fail "summary: ${row#* } on ${row% *} did not complete without errors"
	done
	n=$(grep -c '^check OK' "$WORK/out")
	((n >= 28)) || fail "only $n data checks passed"
	# UD: the payload at +40, the GRH's IPv4 header before it
	expect_out "check OK: mr 0 +0 == mr 4 +40, 2048 B"
	expect_out "check OK: mr 4 +20 = 69 (0x45)"
	expect_out "event: dev 1 (droce1): srq_limit_reached"
	expect_out "event: dev 1 (droce1): qp_access_err"
	grep -Eq '^  write +RC +RDMA_WRITE .* ok, 1 expected error' "$WORK/out" ||
		fail "the WRITE through the invalidated window was not refused as expected"
	echo "demo: $ms ms"
	grep -q 'check FAILED' "$WORK/out" && fail "a data check failed"
	grep -Eq 'traffic flow 0: qp 0 write .* [1-9][0-9]* ops in' "$WORK/out" ||
		fail "no WRITE traffic in the summary"
	grep -Eq 'p50 [0-9.]+ us, p99 [0-9.]+ us, p99.9 [0-9.]+ us' "$WORK/out" ||
		fail "no latency percentiles"
	pass "demo: every operation completed, $n data checks passed, traffic ran ($ms ms)"
	;;
batch-ok)
	{ prelude; cat <<'EOF'
post recv 1 len 8k
post send 0 len 8k wait
poll cq 1 1
check cmp 0 0 1 0 8k
post write 0 len 100000 roff 8k wait
check crc 1 8k 100000 eq 0 0
mr fill 1 byte 0x5a off 512k len 4k
post read 0 off 900k len 4k roff 512k wait
check pattern 0 900k 4k byte 0x5a
mr set 1 1024 41
post faa 0 off 1000000 roff 1024 wait
check value 1 1024 42
show qp 0
show stats
summary
EOF
	} >"$WORK/script"
	run 40 -- --batch <"$WORK/script"
	[[ $RC == 0 ]] || fail "batch exited $RC"
	expect_out "RESULT: all operations completed and all 4 data checks passed"
	expect_out "requester: sq_psn"
	expect_out "tx_pkts"
	pass "batch: 4 data checks, exit 0"
	;;
batch-fail)
	# A failing check stops --batch there, non-zero, naming the line.
	{ prelude; cat <<'EOF'
post write 0 len 4k wait
check cmp 0 0 1 0 4k
mr fill 1 byte 1 len 1
check cmp 0 0 1 0 4k
echo NOT-REACHED
EOF
	} >"$WORK/script"
	run 40 -- --batch <"$WORK/script"
	[[ $RC != 0 ]] || fail "batch exited 0 after a failed check"
	expect_out "check OK: mr 0 +0 == mr 1 +0, 4096 B"
	expect_out "check FAILED: mr 0 +0 != mr 1 +0"
	grep -q "NOT-REACHED" "$WORK/out" && fail "batch went on after the failed command"
	grep -q "stdin:13: command failed: check cmp 0 0 1 0 4k" "$WORK/err" ||
		fail "stderr does not name the failing line (stdin:13)"
	# The same failing check in a --cmdfile run: the script goes on, and
	# the exit status says something failed.
	cp "$WORK/script" "$WORK/script.cmd"
	run 40 -- --cmdfile "$WORK/script.cmd"
	[[ $RC == 1 ]] || fail "--cmdfile with a failed check exited $RC, not 1"
	expect_out "NOT-REACHED"
	grep -q "script.cmd:13: command failed" "$WORK/err" || fail "--cmdfile does not name the line"
	pass "batch stops at the failing check (exit $RC), cmdfile goes on and exits 1"
	;;
bad-args)
	# Wrong commands and arguments: each says why, none stops the console.
	cat >"$WORK/bad.cmd" <<'EOF'
frobnicate
show
show nothing
create
create pd
create pd 9
create pd x
create mr 0 1k
create pd 0
create mr 0 0
create mr 0 huge
create mr 0 4k access xyz
create mr 0 4k fill random
create cq 0 -5
create qp 0 7
destroy qp 3
destroy pd 0 extra
modify qp 0 rts
post send 0
post read
post write 42 len 1
poll cq
poll cq 9 1 100
check cmp 0 0 0 0
check crc 0 0 99999999999
check value x 0 1
mr dump 5
port config 0 ip 300.1.1.1
port config 9 ip 1.2.3.4
port config 0 mtu 1000
traffic start 0 dance
traffic stop
capture start 77 /nonexistent/dir/x.pcapng
capture stop
sleep forever
help nothing
quit now
connect qp 0 0
echo survived
show devices
EOF
	nbad=$(($(grep -cv '^$' "$WORK/bad.cmd") - 3))	# create pd 0, echo, show devices succeed
	run 40 -- --cmdfile "$WORK/bad.cmd"
	[[ $RC == 1 ]] || fail "exit status $RC (expected 1: some commands failed)"
	expect_out "survived"
	expect_out "droce0"
	nerr=$(grep -c '^error: ' "$WORK/out")
	[[ $nerr == "$nbad" ]] || fail "$nerr 'error:' messages for $nbad bad commands"
	grep -q "$nbad commands failed" "$WORK/err" || fail "the failure count is not $nbad"
	expect_out "error: unknown command 'frobnicate'"
	expect_out "error: show: unknown 'nothing'; one of:"
	expect_out "error: create pd: no device 9"
	expect_out "error: create mr: size must be a size"
	expect_out "error: create mr: access takes"
	expect_out "error: modify qp: there is no qp 0"
	expect_out "error: port config: '300.1.1.1' is not an IPv4 address"
	expect_out "error: traffic start: unknown operation 'dance'"
	expect_out "error: capture start: "
	pass "$nbad bad commands, each with a message, the console stayed up"
	;;
interactive)
	command -v tmux >/dev/null 2>&1 || skip "tmux is not installed (apt-get install tmux)"
	T="tmux -L $TMUX_SOCK"
	pane() { $T capture-pane -p -J -t con -S -2000 2>/dev/null | grep -v '^$'; }
	# wait_for <regex> [seconds]: until the pane shows it
	wait_for() {
		local i
		for ((i = 0; i < ${2:-10} * 10; i++)); do
			pane | grep -Eq -- "$1" && return 0
			sleep 0.1
		done
		pane >"$WORK/out"
		fail "the terminal never showed /$1/"
	}
	$T new-session -d -s con -x 180 -y 50 \
		"cd '$WORK' && '$BIN' -- -i 2>'$WORK/err'; echo \"CONSOLE-EXIT=\$?\"; sleep 60" ||
		fail "cannot start tmux"
	wait_for '^droce> $' 20
	# TAB completes a command word, then a sub-command.
	$T send-keys -t con 'sho' Tab
	wait_for '^droce> show $'
	$T send-keys -t con 'dev' Tab
	wait_for '^droce> show devices $'
	$T send-keys -t con Enter
	wait_for '^1 +droce1 +1 +198\.18\.0\.2'
	# TAB completes the common part of several choices, then lists them.
	$T send-keys -t con 'post se' Tab
	wait_for '^droce> post send$'
	$T send-keys -t con Tab
	wait_for '^ +send_imm +SEND with immediate'
	wait_for '^ +send_inv +SEND with invalidate'
	$T send-keys -t con C-c
	$T send-keys -t con 'show e' Tab
	wait_for '^ +endpoint +our GID, QPN, PSN'
	wait_for '^ +events +read the async events'
	$T send-keys -t con C-c
	# Fixed choices after an id, event types, SRQ sub-commands.
	$T send-keys -t con 'create mw 0 t' Tab
	wait_for '^droce> create mw 0 type$'
	$T send-keys -t con C-c
	$T send-keys -t con 'wait event srq_l' Tab
	wait_for '^droce> wait event srq_limit_reached $'
	$T send-keys -t con C-c
	$T send-keys -t con 'post srq ' Tab
	wait_for '^ +recv +post receive WQEs to an SRQ'
	$T send-keys -t con C-c
	$T send-keys -t con 'modify qp 0 r' Tab
	wait_for '^ +rtr'
	$T send-keys -t con C-c
	# Bad commands get a message and the prompt comes back.
	$T send-keys -t con 'frobnicate now' Enter
	wait_for "error: unknown command 'frobnicate'"
	$T send-keys -t con 'create mr 5 banana' Enter
	wait_for "error: create mr: there is no pd 5"
	$T send-keys -t con 'post send' Enter
	wait_for "error: post send: usage"
	# Still usable: objects, a transfer, a check, history (Up).
	$T send-keys -t con 'create pd 0' Enter
	wait_for '^pd 0 created'
	$T send-keys -t con 'create mr 0 64k fill inc' Enter
	wait_for '^mr 0 created'
	$T send-keys -t con 'check pattern 0 0 64k inc' Enter
	wait_for '^check OK: mr 0 \+0 65536 B hold pattern inc'
	$T send-keys -t con 'echo still-alive' Enter
	wait_for '^still-alive'
	$T send-keys -t con Up Enter
	for ((i = 0; i < 50; i++)); do
		[[ $(pane | grep -c '^still-alive') -ge 2 ]] && break
		sleep 0.1
	done
	[[ $(pane | grep -c '^still-alive') -ge 2 ]] || { pane >"$WORK/out"; fail "Up did not recall the last command"; }
	# ^C interrupts a long command, the prompt stays.
	$T send-keys -t con 'sleep 30000' Enter
	sleep 0.5
	$T send-keys -t con C-c
	wait_for 'error: sleep: interrupted'
	$T send-keys -t con 'quit' Enter
	wait_for 'CONSOLE-EXIT=0' 15
	pass "completion (commands, sub-commands, choices after an id, event types), listing, bad commands, history, ^C, quit"
	;;
capture)
	{ prelude; cat <<EOF
capture start all $WORK/roce.pcapng
post recv 1 len 4k
post send 0 len 3000 wait
post write 0 len 5000 wait
post read 0 len 2500 wait
post faa 0 wait
post cas 0 compare 1 swap 2 wait
poll cq 1 1
create qp 0 0 type ud
create qp 1 1 type ud
modify qp 2 init
modify qp 2 rtr
modify qp 2 rts
modify qp 3 init
modify qp 3 rtr
modify qp 3 rts
create ah 0 198.18.0.2
post recv 3 len 1064
post send 2 len 1024 ah 0 rqp 3 wait
poll cq 1 1 flags grh
create qp 0 0 type uc
create qp 1 1 type uc
connect qp 4 5
post write 4 len 2000 wait
create mw 1 type2
post bind_mw 1 mw 0 wait
post recv 1 len 64
post send_inv 0 len 64 mw 0 wait
capture show
capture stop
EOF
	} >"$WORK/script"
	run 40 -- --batch <"$WORK/script"
	[[ $RC == 0 ]] || fail "capture run exited $RC"
	expect_out "capture stopped: "
	[[ -s $WORK/roce.pcapng ]] || fail "no pcapng file, or an empty one"
	magic=$(od -An -tx1 -N4 "$WORK/roce.pcapng" | tr -d ' \n')
	[[ $magic == 0a0d0d0a ]] || fail "not a pcapng file (starts with $magic)"
	if ! command -v tshark >/dev/null 2>&1; then
		pass "pcapng written ($(stat -c %s "$WORK/roce.pcapng") bytes); tshark not installed, frames not decoded"
	fi
	tshark -r "$WORK/roce.pcapng" -Y infiniband >"$WORK/out" 2>"$WORK/err" ||
		fail "tshark cannot read the file"
	for what in "RC Send First" "RC RDMA Write First" "RC RDMA Read Request" \
		    "RC RDMA Read Response" "RC Fetch Add" "RC Compare Swap" \
		    "RC Acknowledge" "RC Atomic Acknowledge" "UD Send Only" \
		    "UC RDMA Write Only" "RC Send Only Invalidate"; do
		expect_out "$what"
	done
	n=$(grep -c RRoCE "$WORK/out")
	((n >= 10)) || fail "only $n RoCE frames decoded"
	pass "pcapng with $n frames tshark decodes as RoCEv2 (RRoCE)"
	;;
*)
	fail "unknown mode $MODE"
	;;
esac
