#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# devtools/ab.sh: an experiment's effect on the rate, measured within
# each run (phase A/B, lib/rdma/droce_ab.h): the code under
# DROCE_AB_ON(<bits>) runs in every other phase of 2^<shift> TSC cycles,
# and the ratio of completions polled in the "on" phases over the "off"
# ones is its effect. Runs the experiment and a control (DROCE_AB=0: the
# same alternation with nothing switched, the instrument's own spread)
# in turn, and prints each run and the medians.
#
#   devtools/ab.sh [--build DIR] [--reps N] [--bits X] [--shift S]
#                  [--loopback] [--no-control] [droce-perf args...]
#
#   --build DIR   a build configured with -Dab=true (default build-ab,
#                 configured and built here when missing)
#   --reps N      runs of each (default 5)
#   --bits X      DROCE_AB's bits, the experiments switched (default 1)
#   --shift S     the TSC bit that switches phases (default 24: ~7 ms at
#                 2.45 GHz; an effect that builds up over more than a
#                 phase is diluted toward 1)
#   --loopback    one process over droce's net_ring pair, engine on lcore
#                 1 (default: two processes over a memif pair at path MTU
#                 4096, an app-driven engine a core, as bench.sh's remote)
#   args          droce-perf's (default: write_bw -s 64 -D 5)
#
# ratio counts completions, so it is the rate's where every completion
# stands for the same work (perftest's cq_mod fixed, one message size);
# tx_ratio counts the frames the engine sent. Where the two disagree, the
# experiment moved work between phases (it changed what runs first, not
# what it costs: droce_ab.h) and only whole runs can judge it.
# Example: devtools/ab.sh --bits 0x2 write_bw -s 64 -q 16384 -t 16 -D 5
#
# Which end bounds the rate: --bits 0x80000000 (the requester) or
# 0x40000000 (the responder) adds a wait of DROCE_AB_PROBE_CYC TSC cycles
# (default 100) to each request frame that end sends or takes, in the
# "on" phases (droce_ab.h): roughly T/(T + wait) where that end sets the
# pace at T cycles a message, ~1 where it waits on the other; compare the
# two ends at one wait rather than read T off.
#
# An experiment that changes what is inlined where must not be measured
# with both variants in one function: the switch and the second variant
# change how the compiler lays out the first. Build the old version of the
# whole file under other names beside the new one and switch the caller
# (doc/performance.md, the forty-second round).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$ROOT/build-ab
REPS=5
BITS=1
SHIFT=24
LOOP=0
CONTROL=1

while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--bits) BITS=$2; shift 2 ;;
	--shift) SHIFT=$2; shift 2 ;;
	--loopback) LOOP=1; shift ;;
	--no-control) CONTROL=0; shift ;;
	-h|--help) sed -n '3,45p' "$0"; exit 0 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || set -- write_bw -s 64 -D 5
case $REPS in ''|*[!0-9]*) echo "--reps wants a number" >&2; exit 2 ;; esac

if [ ! -f "$BUILD/build.ninja" ]; then
	echo "configuring $BUILD (-Dab=true)" >&2
	meson setup "$BUILD" "$ROOT" -Dab=true -Dtests=false \
		--buildtype=debugoptimized </dev/null >&2 || exit 1
fi
if ! grep -q DROCE_AB_BUILD "$BUILD/build.ninja"; then
	echo "$BUILD is not an ab build: meson configure $BUILD -Dab=true" >&2
	exit 2
fi
ninja -C "$BUILD" app/droce-perf/droce-perf </dev/null >&2 || exit 1
BUILD=$(cd "$BUILD" && pwd)
PERF=$BUILD/app/droce-perf/droce-perf
unset DROCE_EAL_ARGS DROCE_DEVICES DROCE_EAL_EXTRA_ARGS DROCE_AB

LOG="--log-level=*:warning"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-ab.XXXXXX")
trap 'rm -rf /run/dpdk/bench$$* "$WORK" 2>/dev/null' EXIT
# shellcheck source=bench/lib.sh
. "$HERE/bench/lib.sh"
EAL_MEM=$(eal_mem)
memif_frames 4096
MEMIF_ARGS=$MEMIF_FRAME_ARGS
PAIR_DEVARGS="mtu=4096$PORT_FRAME_ARGS"

# run <bits> <droce-perf args...>: one run with DROCE_AB=<bits>:$SHIFT,
# "<msg_rate> <off> <on> <ratio>", or nothing when it failed
run() {
	local b=$1 out ab
	shift
	if [ $LOOP -eq 1 ]; then
		out=$(DROCE_AB=$b:$SHIFT LB_CORES=0-1 lb "$@")
		ab=$(grep -h '^DROCE_AB ' "$WORK"/lb.* 2>/dev/null | tail -n 1)
		rm -f "$WORK"/lb.*
	else
		out=$(DROCE_AB=$b:$SHIFT pair "$@")
		ab=$(grep -h '^DROCE_AB ' "$WORK"/pair.*/client 2>/dev/null | tail -n 1)
		rm -rf "$WORK"/pair.*
	fi
	[ -n "$ab" ] || return 0
	echo "$(kvget "$out" msg_rate) $(kvget "$ab" off) $(kvget "$ab" on) $(kvget "$ab" ratio) $(kvget "$ab" tx_ratio)"
}

echo "# phase A/B: DROCE_AB=$BITS$([ $CONTROL -eq 1 ] && [ "$BITS" != 0 ] && echo " (control 0)"), 2^$SHIFT TSC cycles a phase, $REPS runs each"
echo "# $(cpu_line); droce $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) ($BUILD)"
echo "# $([ $LOOP -eq 1 ] && echo "one process (--loopback)" || echo "two processes over memif"): $*"
printf '%-8s %-10s %12s %10s %10s %8s %8s\n' time bits msg/s off on ratio tx_ratio
R_EXP=() R_CTL=() T_EXP=() T_CTL=()
for i in $(seq "$REPS"); do
	for b in $BITS $([ $CONTROL -eq 1 ] && [ "$BITS" != 0 ] && echo 0); do
		r=$(run "$b" "$@")
		if [ -z "$r" ]; then
			printf '%-8s %-10s run failed\n' "$(date +%T)" "$b"
			continue
		fi
		read -r rate off on ratio txr <<<"$r"
		printf '%-8s %-10s %12s %10s %10s %8s %8s\n' "$(date +%T)" "$b" \
			"$(si "$rate")" "$off" "$on" "$ratio" "$txr"
		if [ "$b" = 0 ] && [ "$BITS" != 0 ]; then
			R_CTL+=("$ratio"); T_CTL+=("$txr")
		else
			R_EXP+=("$ratio"); T_EXP+=("$txr")
		fi
	done
done
echo "median ratio: experiment $(median "${R_EXP[@]}") (frames sent $(median "${T_EXP[@]}")) over ${#R_EXP[@]} runs$([ $CONTROL -eq 1 ] && [ "$BITS" != 0 ] && echo ", control $(median "${R_CTL[@]}") (frames $(median "${T_CTL[@]}")) over ${#R_CTL[@]} (min $(printf '%s\n' "${R_CTL[@]}" | sort -g | head -1), max $(printf '%s\n' "${R_CTL[@]}" | sort -g | tail -1))")"
