#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Interop: app/droce-perf against the real perftest (Debian's 4.5+0.17,
# which calls itself 6.06) on Linux Soft-RoCE (rdma_rxe) in a QEMU (TCG)
# guest, both ways round: ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw
# (-A CMP_AND_SWAP and -A FETCH_AND_ADD), ib_write_lat, ib_read_lat,
# ib_send_lat and ib_atomic_lat (both atomics), and ib_write_bw at path MTU
# 4096, with perftest's own out-of-band TCP exchange (versions, system
# data, MTU, the 108-byte address "hand shakes", the bandwidth report,
# "done"). One guest boot serves every run (lib.sh: io_suite_init).
#
# usage: test_perftest_rxe.sh <droce-perf>
# exit: 0 pass, 1 fail, 77 skipped ("SKIPPED: <reason>" on stdout)
#
# Each run checks:
#  - both exit 0, and neither printed an error line;
#  - each side's result row, with #bytes = the message size (8 for
#    atomics) and #iterations = -n, every figure a plain number, and
#    plausible: average bandwidth and message rate above 0 (the peak is
#    0.00 on perftest's send_bw server); latencies above 0 with
#    t_min <= t_typical, t_avg <= t_max (in droce-perf's rows; in
#    perftest's, a note: its clock under TCG is its own). For *_bw but
#    send_bw the server's
#    row is the client's (it comes over the report exchange); the
#    write_lat, send_lat and send_bw servers measure on their own; the
#    read_lat and atomic_lat servers are passive and print no row (perftest
#    and droce-perf alike: a row there fails);
#  - the address exchange: each side's "remote address" line and GID line
#    are the other's "local address" and GID lines, and the GIDs are the
#    IPv4-mapped ones (::ffff:198.18.0.11 rxe, ::ffff:198.18.0.1 droce);
#  - droce-perf --check (when it has it: the client completed every WR; a
#    send_bw server received iters messages of the right size; an
#    atomic_bw FETCH_AND_ADD server's counters add up to iters, wherever
#    in its buffer perftest's client put them) and --kv (bytes = size *
#    iters on the measuring side, iters = -n, errors=0; retransmits,
#    timeouts and NAKs are printed as notes);
#  - at path MTU 4096 (write_bw_mtu4096, first mode only): 4096-byte
#    payloads from the client in the capture (lib.sh: io_jumbo);
#  - UC (uc_write_bw, uc_send_lat, uc_send_bw) and UD (ud_send_lat,
#    ud_send_bw, a full 1024-byte datagram; first mode only): both sides
#    say "Connection type : UC" (UD), and droce sent no ACK; send_bw
#    counts to -n as perftest does (the server has a receive posted for
#    each of the few SENDs, so none is lost but to the wire);
#  - -b (bi_write_bw, bi_send_bw; first mode only): both sides say
#    "Bidirectional BW Test" and print the same row (each end's figures
#    plus the other's, from the report exchange);
#  - -e (ev_send_lat, ev_send_bw; first mode only): both sides say "Test
#    with events", and droce-perf took CQ events;
#  - --use-srq (srq_send_lat, srq_send_bw; first mode only): both sides
#    say "Using SRQ      : ON";
#  - --mr_per_qp -q 2 (mrqp_read_bw; first mode only): two QPs, each with
#    its own MR on both sides: each side's two local RKeys differ, and the
#    row counts both QPs' messages;
#  - --latency_gap 20 (gap_write_lat; first mode only): a wait before
#    each round trip on the client (both ends in perftest), the rows as
#    usual;
#  - --tclass 96 --flow_label 74565 (tc_write_bw; first mode only): in
#    the capture, droce's RoCE frames with IP TOS 96 (no other run sets
#    it) and from UDP source port 58177 (the label's port,
#    ibv_flow_label_to_udp_sport); rxe's with TOS 96 too (perftest 4.5
#    sets no flow label);
#  - a rate limit of 2 MB/sec in bursts of 2 messages (pp_write_bw; first
#    mode only): perftest on rxe with its SW limiter, droce-perf with
#    droce's packet pacing (--rate_limit_type PP, which perftest allows
#    on raw Ethernet QPs only); the client's row at most 2.5 MB/sec (the
#    limit, one burst ahead, and perftest's count of N bursts over N-1
#    gaps), and a droce client's QP waited for its rate (c_pace_waits);
#  - --reversed on both ends (rev_write_bw, rev_send_bw; first mode
#    only): the end that listens sends and the one that connects
#    receives; the rows are checked with the roles so swapped (the
#    listener's own row, the connector's a copy of it for write_bw, its
#    own count of the SENDs for send_bw);
#  - --run_infinitely -D 1 (inf_write_bw; first mode only): the client
#    stopped after 8 s by SIGTERM (the guest's jobs ignore SIGINT), and a
#    row printed for at least two of its periods, each with messages and
#    a bandwidth above 0 (rxe's clock under TCG makes its periods its
#    own, so no upper count; an rxe client's period may end empty, its
#    SIGALRM late under TCG: noted, not failed, where two other rows
#    have figures and rxe retried nothing); the droce-perf client then
#    gives its whole run's row to the server, which perftest's prints and
#    exits 0 with; perftest's client, killed, gives nothing, and the
#    droce-perf server fails that exchange as perftest's would (exit 1,
#    that one complaint);
#  - rxe0's error counters did not move (lib.sh: io_hw_check).
#
# Modes as test_rc_pingpong_rxe.sh: engine and app (the neighbour entry
# pinned; droce-perf also turns its engine while it waits on TCP).
#
# Environment (optional): DROCE_INTEROP_ITERS (-n, default 20),
# DROCE_INTEROP_MODES (default "engine app"), DROCE_INTEROP_PERF_TESTS (a
# subset of the names below), and those of lib.sh (DROCE_INTEROP_SKIP,
# DROCE_INTEROP_KEEP, DROCE_INTEROP_NS, DROCE_INTEROP_CACHE,
# DROCE_TEST_EAL_MEM).

set -u

BIN=${1:?usage: $0 <droce-perf>}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ITERS=${DROCE_INTEROP_ITERS:-20}
QPS=1
MODES=${DROCE_INTEROP_MODES:-engine app}
PORT=18520

# name  perftest test  size  extra arguments (":" for a space, "-" none)
TESTS_ALL="
write_bw     write_bw   4096   -
write_bw64k  write_bw   65536  -
read_bw      read_bw    4096   -
send_bw      send_bw    4096   -
cas_bw       atomic_bw  8      -A:CMP_AND_SWAP
faa_bw       atomic_bw  8      -A:FETCH_AND_ADD
write_lat    write_lat  64     -
read_lat     read_lat   64     -
send_lat     send_lat   64     -
cas_lat      atomic_lat 8      -A:CMP_AND_SWAP
faa_lat      atomic_lat 8      -A:FETCH_AND_ADD
write_bw_mtu4096 write_bw 65536 -m:4096
uc_write_bw  write_bw   4096   -c:UC
uc_send_lat  send_lat   64     -c:UC
uc_send_bw   send_bw    4096   -c:UC
ud_send_lat  send_lat   1024   -c:UD
ud_send_bw   send_bw    1024   -c:UD
bi_write_bw  write_bw   4096   -b
bi_send_bw   send_bw    4096   -b
ev_send_lat  send_lat   64     -e
ev_send_bw   send_bw    4096   -e
srq_send_lat send_lat   64     --use-srq
srq_send_bw  send_bw    4096   --use-srq
mrqp_read_bw read_bw    4096   --mr_per_qp:-q:2
gap_write_lat write_lat 64     --latency_gap:20
tc_write_bw  write_bw   4096   --tclass:96:--flow_label:74565
pp_write_bw  write_bw   4096   --rate_limit:2:--rate_units:M:--rate_limit_type:SW:--burst_size:2
rev_write_bw write_bw   4096   --reversed
rev_send_bw  send_bw    4096   --reversed
inf_write_bw write_bw   4096   --run_infinitely:-D:1
"
TESTS=${DROCE_INTEROP_PERF_TESTS:-$(echo "$TESTS_ALL" | awk 'NF {print $1}')}

unset DROCE_EAL_ARGS DROCE_DEVICES DROCE_EAL_EXTRA_ARGS
IO_LOG_PREFIX=interop-perftest
IO_BUDGET=260		# seconds after the guest build (a run takes about 120)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

if [ -n "${DROCE_INTEROP_SKIP:-}" ]; then
	echo "SKIPPED: DROCE_INTEROP_SKIP is set"
	exit 77
fi
if [ ! -x "$BIN" ]; then
	echo "FAIL: $BIN is not executable"
	exit 1
fi
# droce-perf is usable when its usage says it is (no EAL needed for that)
HELP=$(timeout 10 "$BIN" --help 2>&1)
rc=$?
if [ $rc -ne 0 ] || ! printf '%s\n' "$HELP" | grep -q 'write_bw'; then
	echo "SKIPPED: '$BIN --help' exits $rc or lists no tests: $(printf '%s\n' "$HELP" | tail -n 1)"
	exit 77
fi
DX_CHECK=
DX_KV=
printf '%s\n' "$HELP" | grep -q -- '--check' && DX_CHECK=--check
printf '%s\n' "$HELP" | grep -q -- '--kv' && DX_KV=--kv

io_suite_init
echo "droce-perf: $("$BIN" write_bw -V 2>&1 | head -n 1)${DX_CHECK:+, }$DX_CHECK${DX_KV:+ }$DX_KV"

# ------------------------------------------------------------- checks

# row <out>: the last result row ("#bytes #iterations ...")
row() {
	grep -E '^ +[0-9]+ +[0-9]+ +[-+0-9.a-z]+' "$1" | tail -n 1
}

# addr <out> <local|remote>: the address line and the GID line after it
addr() {
	awk -v w="$2" '$1 == w && $2 == "address:" { sub(/^ *[a-z]+ address: */, ""); a = $0
		getline; sub(/^ *GID: */, ""); print a " | GID " $0; exit }' "$1"
}

# gid <dotted> -> perftest's GID text for ::ffff:<dotted>
gid_text() {
	local IFS=.
	# shellcheck disable=SC2086
	set -- $1
	printf '00:00:00:00:00:00:00:00:00:00:255:255:%02d:%02d:%02d:%02d' "$1" "$2" "$3" "$4"
}

# check_row <out> <label> <size> <bw|lat> [mirror]: #bytes, #iterations, numbers
# only, plausible figures (bw: MsgRate above 0, BW average too unless
# it rounds to 0.00 MB/s; lat:
# t_min, t_max, t_typical, t_avg, ... above 0, t_min <= t_typical, t_avg
# <= t_max). Implausible figures fail in droce-perf's rows and are a note
# in perftest's: its clock under TCG is its own business (an ib_send_bw
# client once printed an average of 0.00 for a run droce-perf's server
# measured at 2.44 MB/s). "mirror": the row is perftest's, printed again
# by a droce-perf server from the report exchange (a write_bw client on
# rxe once printed 0.00 MB/s and 0 Mpps at MTU 4096, and the droce-perf
# server's copy of it failed the test): implausible figures are a note.
check_row() {
	local r f=$1 lbl=$2 kind=$4 mirror=${5:-} bad why=io_fail
	r=$(row "$1")
	if [ -z "$r" ]; then
		io_fail "$lbl: no result row"
		return 1
	fi
	# shellcheck disable=SC2086
	set -- "$2" "$3" $r
	[ "$3" = "$2" ] || io_fail "$1: #bytes $3, expected $2"
	[ "$4" = "$((ITERS * QPS))" ] || io_fail "$1: #iterations $4, expected $((ITERS * QPS))"
	shift 2
	# perftest divides cycles by the CPU MHz it measured, and reports 0
	# MHz when TSC and gettimeofday disagree (r^2 < 0.9: its
	# sample_get_cpu_mhz), which a guest under TCG now and then does:
	# every figure is then inf or nan, in its row and in the copy a
	# droce-perf server prints from the report exchange. perftest's own
	# clock, not droce; droce's end of the run is checked as usual.
	case $f:$mirror in */rxe.out:*|*:mirror)
		if [ -z "$(printf '%s\n' "${@:3}" | grep -Evx -- '-?(inf|nan)')" ]; then
			note "$lbl: perftest on rxe measured its CPU clock as 0 MHz (row '$r'): its figures are not checked"
			return 0
		fi ;;
	esac
	bad=0
	while [ $# -gt 0 ]; do
		case $1 in
		*[!0-9.]*|"") io_fail "$lbl: result row '$r': '$1' is not a number"; bad=1 ;;
		esac
		shift
	done
	[ $bad -eq 0 ] || return 1
	case $f in */rxe.out) why=note ;; esac
	[ "$mirror" = mirror ] && why=note
	if [ "$kind" = lat ]; then
		echo "$r" | awk '{ for (i = 3; i <= NF; i++) if ($i + 0 <= 0) exit 1
			if ($3 > $5 || $3 > $6 || $5 > $4 || $6 > $4) exit 1 }' ||
			$why "$lbl: implausible latencies (t_min t_max t_typical t_avg ...): '$r'"
	else
		# (BW peak may be 0: perftest's send_bw server prints 0.00; the
		# average too when bytes x Mpps rounds to 0.00 MB/s, e.g. 8-byte
		# atomics at a few hundred ops/s under TCG)
		echo "$r" | awk '{ exit !($5 > 0 && ($4 > 0 || $1 * $5 < 0.01)) }' ||
			$why "$lbl: implausible bandwidth or rate: '$r'"
	fi
	return 0
}

note() { echo "note: $*"; }

# check_errors <file> <label>: no error lines (EAL's notes are not)
check_errors() {
	local l
	l=$(grep -Ei 'error|fail|couldn|unable|unrecognized|not compatible|incompatib|check:' "$1" |
		grep -v '^EAL: \|^TELEMETRY: \|^DROCE_PERF ' | head -n 3)
	[ -z "$l" ] || io_fail "$2: $(echo "$l" | tr '\n' '|')"
}

# check_kv <droce out> <label> <bytes>: droce-perf's --kv summary
check_kv() {
	local kv v n
	kv=$(grep '^DROCE_PERF ' "$1" | tail -n 1)
	[ -n "$kv" ] || return 0
	# bandwidth lines have bytes=, latency lines do not
	v=$(echo "$kv" | tr ' ' '\n' | sed -n 's/^bytes=//p')
	[ -z "$v" ] || [ "$v" = "$3" ] || io_fail "$2: droce-perf --kv bytes=$v, expected $3"
	v=$(echo "$kv" | tr ' ' '\n' | sed -n 's/^iters=//p')
	[ -z "$v" ] || [ "$v" = "$ITERS" ] || io_fail "$2: droce-perf --kv iters=$v, expected $ITERS"
	v=$(echo "$kv" | tr ' ' '\n' | sed -n 's/^errors=//p')
	[ "${v:-0}" = 0 ] || io_fail "$2: droce-perf --kv errors=$v"
	for n in c_retransmits c_timeouts c_naks c_rnr_naks; do
		v=$(echo "$kv" | tr ' ' '\n' | sed -n "s/^$n=//p")
		[ "${v:-0}" = 0 ] || echo "note: $2: droce $n=$v"
	done
}

# check_pair <label> <dir> <test> <size> <server: rxe|droce>
check_pair() {
	local label=$1 dir=$2 t=$3 size=$4 s=$5 c before=$IO_FAILS src crc
	local sout cout
	if [ "$s" = rxe ]; then
		c=droce; src=$IO_GRC; crc=$IO_DRC
		sout=$dir/rxe.out; cout=$dir/droce.out
	else
		c=rxe; src=$IO_DRC; crc=$IO_GRC
		sout=$dir/droce.out; cout=$dir/rxe.out
	fi
	[ "$src" -eq 0 ] || io_fail "$label: $s server exit code $src$([ "$src" -eq 124 ] && echo ' (still running: killed)')"
	[ "$crc" -eq 0 ] || io_fail "$label: $c client exit code $crc"
	check_errors "$dir/rxe.out" "$label (rxe)"
	check_errors "$dir/droce.out" "$label (droce)"
	check_errors "$dir/droce.err" "$label (droce stderr)"
	if [ "${REV:-}" = 1 ]; then
		# --reversed: the listener is the test's client (it sends)
		local tmp=$sout
		sout=$cout; cout=$tmp
		tmp=$s; s=$c; c=$tmp
	fi
	if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ]; then
		local kind=bw
		case $t in *_lat) kind=lat ;; esac
		check_row "$cout" "$label ($c client)" "$size" $kind
		case $t in
		write_lat|send_lat|send_bw)
			# the server measures on its own
			check_row "$sout" "$label ($s server)" "$size" $kind ;;
		read_lat|atomic_lat)
			# the server is passive: no row
			[ -z "$(row "$sout")" ] ||
				io_fail "$label: the passive $s server printed a result row '$(row "$sout")'" ;;
		*)	# the server prints the client's row (report exchange)
			check_row "$sout" "$label ($s server)" "$size" $kind \
				"$([ "$c" = rxe ] && echo mirror)"
			[ "$(row "$sout")" = "$(row "$cout")" ] ||
				io_fail "$label: the server's row '$(row "$sout")' is not the client's '$(row "$cout")'" ;;
		esac
		[ "$(addr "$dir/rxe.out" remote)" = "$(addr "$dir/droce.out" local)" ] ||
			io_fail "$label: rxe's remote address '$(addr "$dir/rxe.out" remote)' is not droce's local '$(addr "$dir/droce.out" local)'"
		[ "$(addr "$dir/droce.out" remote)" = "$(addr "$dir/rxe.out" local)" ] ||
			io_fail "$label: droce's remote address '$(addr "$dir/droce.out" remote)' is not rxe's local '$(addr "$dir/rxe.out" local)'"
		case $(addr "$dir/droce.out" local) in
		*"GID $(gid_text "$IO_DROCE_IP")") ;;
		*) io_fail "$label: droce's local GID: $(addr "$dir/droce.out" local)" ;;
		esac
		case $(addr "$dir/rxe.out" local) in
		*"GID $(gid_text "$IO_GUEST_ROCE_IP")") ;;
		*) io_fail "$label: rxe's local GID: $(addr "$dir/rxe.out" local)" ;;
		esac
		check_kv "$dir/droce.out" "$label" $((size * ITERS * QPS))
	fi
	io_hw_check "$dir/rxe.out" "$label"
	if [ $IO_FAILS -ne "$before" ]; then
		io_show "$dir"/*.out "$dir"/*.err
		io_guest_diag
	else
		printf 'ok   %-52s %s\n' "$label" "$(row "$cout" | awk '{$1 = $1; print}')"
	fi
}

# tc_check <label>: the traffic class and flow label on the wire
# (tcpdump reads the capture so far; a note when there is none)
tc_check() {
	local f=$IO_WORK/rxe.pcap n
	if ! command -v tcpdump >/dev/null 2>&1 || [ ! -s "$f" ]; then
		note "$1: no capture: traffic class not checked"
		return
	fi
	pcap_settle "$f"
	n=$(tcpdump -nr "$f" "udp dst port 4791 and src host $IO_DROCE_IP and ip[1] == 96" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || io_fail "$1: no RoCE frame from droce with IP TOS 96 (--tclass 96)"
	n=$(tcpdump -nr "$f" "udp dst port 4791 and src host $IO_DROCE_IP and src port 58177" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || io_fail "$1: no RoCE frame from droce's UDP port 58177 (--flow_label 74565)"
	n=$(tcpdump -nr "$f" "udp dst port 4791 and src host $IO_GUEST_ROCE_IP and ip[1] == 96" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || io_fail "$1: no RoCE frame from rxe with IP TOS 96 (perftest --tclass 96)"
}

# inf_check <label> <dir> <size> <rxe|droce: the server>: a --run_infinitely
# pair (see the header)
inf_check() {
	local label=$1 dir=$2 size=$3 s=$4 c cout n bad good before=$IO_FAILS
	local re="^ +$size[[:space:]]+[0-9]+[[:space:]]+0\\.00[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+"
	if [ "$s" = rxe ]; then
		c=droce; cout=$dir/droce.out
		[ "$IO_DRC" -eq 124 ] ||
			io_fail "$label: droce's exit code $IO_DRC, not 124 (stopped after 8 s)"
		[ "$IO_GRC" -eq 0 ] ||
			io_fail "$label: rxe's server exit code $IO_GRC, not 0 (after droce's report)"
		# the server's row: the client's whole run, given at the end
		[ -n "$(row "$dir/rxe.out")" ] &&
		[ "$(row "$dir/rxe.out")" = "$(row "$cout")" ] ||
			io_fail "$label: rxe's row '$(row "$dir/rxe.out")' is not droce's last '$(row "$cout")'"
		check_errors "$dir/droce.err" "$label (droce stderr)"
	else
		c=rxe; cout=$dir/rxe.out
		# (124 from the guest's timeout, or 143 as the guest's job
		# runner reports a program ended by SIGTERM)
		case $IO_GRC in 124|143) ;;
		*) io_fail "$label: rxe's exit code $IO_GRC, not 124/143 (stopped after 8 s)" ;;
		esac
		[ "$IO_DRC" -eq 1 ] ||
			io_fail "$label: droce's server exit code $IO_DRC, not 1 (its client gone before the report exchange)"
		# (its client gone, the report exchange is what it may complain of)
		grep -v 'Failed to exchange data between server and clients' \
			"$dir/droce.err" >"$dir/droce.err.rest"
		check_errors "$dir/droce.err.rest" "$label (droce stderr)"
	fi
	check_errors "$dir/rxe.out" "$label (rxe)"
	check_errors "$dir/droce.out" "$label (droce)"
	n=$(grep -cE "$re" "$cout")
	bad=$(grep -E "$re" "$cout" | awk '!($2 > 0 && $4 > 0 && $5 > 0)' | head -n 1)
	[ "$n" -ge 2 ] ||
		io_fail "$label: the $c client printed $n rows in 8 s of --run_infinitely -D 1 (2 or more expected)"
	# (perftest's periods are SIGALRMs timed by the guest's clock; under
	# TCG one can end with no messages while the link ran on: one zero
	# row is let pass, only from the rxe client, with two rows of figures
	# beside it, and rxe having retried nothing, which a droce that
	# stopped answering for a period would have made it do)
	good=$(grep -E "$re" "$cout" | awk '$2 > 0 && $4 > 0 && $5 > 0' | wc -l)
	if [ -n "$bad" ] && [ "$c" = rxe ] && [ "$good" -ge 2 ] &&
	   [ $((n - good)) -eq 1 ] && io_hw_quiet "$dir/rxe.out"; then
		echo "note: $label: the rxe client's row '$bad' has a zero figure; $good rows with figures and no retry by rxe: let pass"
		bad=
	fi
	[ -z "$bad" ] || io_fail "$label: the $c client's row '$bad' has a zero figure"
	io_hw_check "$dir/rxe.out" "$label"
	if [ $IO_FAILS -ne "$before" ]; then
		io_show "$dir"/*.out "$dir"/*.err
		io_guest_diag
	else
		printf 'ok   %-52s %s rows\n' "$label" "$n"
	fi
}

# run <mode> <name> <rxe|droce: the server>
run() {
	local mode=$1 name=$2 line t size extra label dir dx
	line=$(echo "$TESTS_ALL" | awk -v n="$name" '$1 == n')
	if [ -z "$line" ]; then
		io_fail "unknown test $name"
		return
	fi
	# shellcheck disable=SC2086
	set -- "$1" "$2" "$3" $line
	t=$5
	size=$6
	extra=${7//:/ }
	[ "$extra" = - ] && extra=
	# a bandwidth row counts every QP's messages (perftest's too)
	QPS=$(echo "$extra" | sed -n 's/.*-q \([0-9]*\).*/\1/p')
	QPS=${QPS:-1}
	case $t in atomic_*) ;; *) extra="$extra -s $size" ;; esac
	dir=$IO_WORK/run$((IO_RUN + 1))
	label="$mode $name: $3 server"
	if [ "$(io_remaining)" -le 8 ]; then
		io_fail "$label: out of time budget (${IO_BUDGET}s)"
		return
	fi
	dx="$DX_KV $DX_CHECK"
	# droce paces its QP itself (a later --rate_limit_type wins)
	case $name in pp_*) dx="$dx --rate_limit_type PP" ;; esac
	local args="-x 1 -F -p $PORT -n $ITERS $extra"
	case $name in
	*_mtu4096)
		# path MTU 4096: jumbo links and droce port (lib.sh: io_jumbo)
		if ! io_jumbo on; then
			io_fail "$label: rxe0 active_mtu '$IO_RXE_MTU' after MTU 9000 on its netdev"
			io_jumbo off
			return
		fi ;;
	esac
	# --run_infinitely: the client stopped by SIGTERM after 8 s (the
	# server by the end of the exchange; at worst by the harness)
	local gto= dto=
	case $name in inf_*)
		if [ "$3" = rxe ]; then
			gto="timeout 25 "; dto="timeout 8"
		else
			gto="timeout 8 "
		fi ;;
	esac
	if [ "$3" = rxe ]; then
		# shellcheck disable=SC2086
		io_pair_rxe_server "$mode" "$dir" "$PORT" "${gto}ib_$t -d rxe0 $args" \
			$dto "$BIN" "$t" $args $dx "$IO_GUEST_OOB_IP" ||
			{ io_fail "$label: the guest job did not start"; return; }
	else
		# shellcheck disable=SC2086
		if ! io_pair_droce_server "$mode" "$dir" "$PORT" \
			"${gto}ib_$t -d rxe0 $args $IO_HOST_OOB_IP" \
			$dto "$BIN" "$t" $args $dx; then
			io_fail "$label: droce-perf does not listen on $PORT"
			io_show "$dir"/*
			return
		fi
	fi
	# perftest's SW rate limiter needs the CPU clock it measures, and
	# under TCG that measurement fails now and then ("couldn't acquire
	# cpu frequency for rate limiter"): perftest then runs unlimited. Its
	# clock, not droce: the run once more (a second failure fails).
	if grep -q "couldn't acquire cpu frequency" "$dir/rxe.out" 2>/dev/null &&
	   [ -z "${RXE_CLOCK_RETRY:-}" ]; then
		note "$label: perftest on rxe could not measure its CPU clock for its rate limiter: once more"
		RXE_CLOCK_RETRY=1
		run "$mode" "$name" "$3"
		RXE_CLOCK_RETRY=
		return
	fi
	case $name in inf_*)
		inf_check "$label" "$dir" "$size" "$3"
		return ;;
	esac
	REV=
	case $name in rev_*) REV=1 ;; esac
	check_pair "$label" "$dir" "$t" "$size" "$3"
	REV=
	case $name in
	uc_*|ud_*)
		local ct acks
		ct=$(echo "${name%%_*}" | tr a-z A-Z)
		grep -q "Connection type : $ct" "$dir/rxe.out" &&
		grep -q "Connection type : $ct" "$dir/droce.out" ||
			io_fail "$label: not both sides say 'Connection type : $ct'"
		acks=$(grep '^DROCE_PERF ' "$dir/droce.out" | tail -n 1 |
		       tr ' ' '\n' | sed -n 's/^c_acks=//p')
		[ "${acks:-0}" = 0 ] ||
			io_fail "$label: droce sent $acks ACKs on a $ct QP" ;;
	bi_*)
		# both ends print the sum of both directions (perftest's report
		# exchange after the run): the same row
		grep -q 'Bidirectional BW Test' "$dir/rxe.out" &&
		grep -q 'Bidirectional BW Test' "$dir/droce.out" ||
			io_fail "$label: not both sides say 'Bidirectional BW Test'"
		[ -n "$(row "$dir/droce.out")" ] &&
		[ "$(row "$dir/droce.out")" = "$(row "$dir/rxe.out")" ] ||
			io_fail "$label: droce's row '$(row "$dir/droce.out")' is not rxe's '$(row "$dir/rxe.out")'" ;;
	tc_*)
		tc_check "$label" ;;
	pp_*)
		local pw
		row "$([ "$3" = rxe ] && echo "$dir/droce.out" || echo "$dir/rxe.out")" |
			awk '{ exit !($4 <= 2.5) }' ||
			io_fail "$label: the client's row '$(row "$dir/droce.out")' is above 2 MB/sec (and a burst)"
		if [ "$3" = rxe ]; then
			pw=$(grep '^DROCE_PERF ' "$dir/droce.out" | tail -n 1 |
			     tr ' ' '\n' | sed -n 's/^c_pace_waits=//p')
			[ "${pw:-0}" -gt 0 ] ||
				io_fail "$label: droce's QP never waited for its rate (c_pace_waits=${pw:-none})"
		fi ;;
	mrqp_*)
		local f
		for f in "$dir/rxe.out" "$dir/droce.out"; do
			[ "$(sed -n 's/^ local address: .*RKey \(0x[0-9a-f]*\).*/\1/p' "$f" | sort -u | wc -l)" = 2 ] ||
				io_fail "$label: ${f##*/}: not 2 distinct local RKeys: $(grep '^ local address' "$f" | tr '\n' ' ')"
		done ;;
	srq_*)
		grep -q 'Using SRQ      : ON' "$dir/rxe.out" &&
		grep -q 'Using SRQ      : ON' "$dir/droce.out" ||
			io_fail "$label: not both sides say 'Using SRQ : ON'" ;;
	ev_*)
		local ev
		grep -q '^ Test with events' "$dir/rxe.out" &&
		grep -q '^ Test with events' "$dir/droce.out" ||
			io_fail "$label: not both sides say 'Test with events'"
		ev=$(grep '^DROCE_PERF ' "$dir/droce.out" | tail -n 1 |
		     tr ' ' '\n' | sed -n 's/^events=//p')
		[ "${ev:-0}" -gt 0 ] ||
			io_fail "$label: droce-perf took ${ev:-no} events" ;;
	*_mtu4096)
		# the client sends the payloads
		if [ "$3" = rxe ]; then
			io_jumbo_check_capture "$label" "$IO_DROCE_IP"
		else
			io_jumbo_check_capture "$label" "$IO_GUEST_ROCE_IP"
		fi
		io_jumbo off || io_fail "$label: MTU back to 1500: rxe0 active_mtu '$IO_RXE_MTU'" ;;
	esac
}

FIRST_MODE=
for mode in $MODES; do
	io_mode_prepare "$mode" || continue
	[ -n "$FIRST_MODE" ] || FIRST_MODE=$mode
	for name in $TESTS; do
		# the MTU 4096, UC, UD, -b, -e, SRQ, MR-per-QP, gap and tclass runs in one mode only
		case $name in *_mtu4096|uc_*|ud_*|bi_*|ev_*|srq_*|mrqp_*|gap_*|tc_*|pp_*|rev_*|inf_*) [ "$mode" = "$FIRST_MODE" ] || continue ;; esac
		run "$mode" "$name" rxe
		run "$mode" "$name" droce
	done
done

io_suite_end perftest
