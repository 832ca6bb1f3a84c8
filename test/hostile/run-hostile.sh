#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The hostile-packet test (suite 'hostile'): a network namespace droce-h-<pid>
# with a veth pair; hostile_node (droce on DPDK net_af_packet) on one end,
# test_hostile.py (scapy) on the other. See test_hostile.py.
#   run-hostile.sh <hostile_node> <test_hostile.py> [case ...]
# Skips (77) without root, network namespaces, veth, af_packet or scapy.
# The namespace and every process in it go away on exit, whatever happens.
set -u
node=$1 py=$2
shift 2
PY=/usr/bin/python3		# Debian's, with python3-scapy
NS=droce-h-$$
BUDGET=${HOSTILE_BUDGET:-150}

skip() { echo "SKIPPED: $*"; exit 77; }

cleanup() {
	local pids
	pids=$(ip netns pids "$NS" 2>/dev/null)
	if [[ -n $pids ]]; then
		# shellcheck disable=SC2086
		kill $pids 2>/dev/null
		sleep 0.5
		pids=$(ip netns pids "$NS" 2>/dev/null)
		# shellcheck disable=SC2086
		[[ -n $pids ]] && kill -9 $pids 2>/dev/null
	fi
	ip netns delete "$NS" 2>/dev/null
	[[ -n ${LOG:-} ]] && rm -f "$LOG"
}

[[ $(id -u) == 0 ]] || skip "needs root (network namespace, veth, af_packet)"
command -v ip >/dev/null || skip "no iproute2"
[[ -x $PY ]] && $PY -c 'import scapy.contrib.roce' 2>/dev/null ||
	skip "$PY has no scapy (apt-get install python3-scapy)"
# stale namespaces of runs that were killed outright
for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
	[[ $ns == droce-h-* ]] || continue
	kill -0 "${ns#droce-h-}" 2>/dev/null && continue
	ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns delete "$ns" 2>/dev/null
done

trap cleanup EXIT
trap 'exit 143' TERM INT
ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
# no IPv6 chatter (router solicitations, MLD) on the link
ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
	net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
ip -n "$NS" link add dh-node type veth peer name dh-peer 2>/dev/null ||
	skip "cannot create a veth pair"
ip -n "$NS" link set lo up
for l in dh-node dh-peer; do
	ip -n "$NS" link set "$l" mtu 9000 up || exit 1
done

LOG=$(mktemp "${TMPDIR:-/tmp}/droce-hostile.XXXXXX")
timeout --kill-after=10 "$BUDGET" ip netns exec "$NS" "$PY" "$py" \
	--node "$node" --node-if dh-node --peer-if dh-peer --log "$LOG" "$@"
rc=$?
if [[ $rc != 0 && $rc != 77 ]]; then
	echo "--- hostile_node stderr:"
	tail -n 40 "$LOG"
fi
if [[ $rc == 77 ]]; then
	grep -h SKIPPED "$LOG" || echo "SKIPPED: hostile_node could not start (af_packet?)"
fi
((rc == 124)) && echo "FAIL: over the ${BUDGET} s budget"
exit $rc
