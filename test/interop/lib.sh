# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
#
# Host side of the interop tests, sourced by the test scripts and by
# boot-peer.sh: a network namespace with two bridges, the rxe guest booted
# under QEMU TCG on taps, the guest's job agent (guest/droce-agent), and
# droce processes on a veth with DPDK's net_af_packet PMD. See
# doc/interop.md for the picture.
#
#   namespace $IO_NS ("droce-io-<pid>"), IPv6 off
#   ┌──────────────────────────────────────────────────────────────────┐
#   │ dr-br-roce: dr-tap-roce (guest eth0 = rxe0, 198.18.0.11)         │
#   │             dr-droce-br ── veth ── dr-droce (DPDK net_af_packet; │
#   │                                     droce ip 198.18.0.1)         │
#   │ dr-br-oob:  dr-tap-oob  (guest eth1, 198.18.1.11: agent, TCP)    │
#   │             dr-oob-br   ── veth ── dr-oob (198.18.1.1)           │
#   └──────────────────────────────────────────────────────────────────┘
#
# Everything is torn down by io_cleanup (call it from an EXIT trap).

IO_NS=${IO_NS:-droce-io-$$}
IO_GUEST_ROCE_IP=198.18.0.11
IO_GUEST_OOB_IP=198.18.1.11
IO_DROCE_IP=198.18.0.1
IO_HOST_OOB_IP=198.18.1.1
IO_GUEST_ROCE_MAC=52:54:00:18:00:0b
IO_GUEST_OOB_MAC=52:54:00:18:01:0b
IO_DROCE_IF=dr-droce
IO_AGENT_PORT=7000
IO_QEMU_PID=
IO_PIDS=()
IO_NS_MADE=0
IO_LOG_PREFIX=${IO_LOG_PREFIX:-interop}

io_say() { echo "$IO_LOG_PREFIX: $*" >&2; }

nsx() { ip netns exec "$IO_NS" "$@"; }

# io_reap_stale: namespaces droce-io-<pid> whose <pid> is gone (a test
# killed with SIGKILL): their processes are killed and they are deleted
io_reap_stale() {
	local ns pid p
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' |
		    grep -E '^droce-io-[0-9]+$'); do
		pid=${ns#droce-io-}
		kill -0 "$pid" 2>/dev/null && continue
		io_say "removing stale namespace $ns"
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
}

# io_netns_up: the namespace, bridges, taps and veths (returns 1 on failure)
io_netns_up() {
	ip netns add "$IO_NS" || return 1
	IO_NS_MADE=1
	nsx sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1
	nsx ip link set lo up || return 1
	local br
	for br in dr-br-roce dr-br-oob; do
		nsx ip link add "$br" type bridge stp_state 0 forward_delay 0 || return 1
		nsx ip link set "$br" up || return 1
	done
	nsx ip tuntap add dev dr-tap-roce mode tap || return 1
	nsx ip tuntap add dev dr-tap-oob mode tap || return 1
	nsx ip link add "$IO_DROCE_IF" type veth peer name dr-droce-br || return 1
	nsx ip link add dr-oob type veth peer name dr-oob-br || return 1
	nsx ip link set dr-tap-roce master dr-br-roce || return 1
	nsx ip link set dr-droce-br master dr-br-roce || return 1
	nsx ip link set dr-tap-oob master dr-br-oob || return 1
	nsx ip link set dr-oob-br master dr-br-oob || return 1
	nsx ip addr add "$IO_HOST_OOB_IP/24" dev dr-oob || return 1
	local l
	for l in dr-tap-roce dr-tap-oob "$IO_DROCE_IF" dr-droce-br dr-oob dr-oob-br; do
		nsx ip link set "$l" up || return 1
	done
	# the kernel must not answer for the DPDK port's veth (it has no
	# address; be explicit anyway)
	nsx sysctl -qw "net.ipv4.conf.$IO_DROCE_IF.arp_ignore=8" >/dev/null 2>&1
	return 0
}

# io_qemu_cmd <guest dir> <command file>: the QEMU command line (without
# -serial) in the array IO_QEMU_CMD; the guest runs <command file> with sh
# (handed over through fw_cfg)
io_qemu_cmd() {
	local g=$1 cmd=$2
	local app="console=ttyS0 loglevel=4 panic=-1 quiet"
	app+=" droce.roce=$IO_GUEST_ROCE_IP/24,$IO_GUEST_ROCE_MAC"
	app+=" droce.oob=$IO_GUEST_OOB_IP/24,$IO_GUEST_OOB_MAC"
	# shellcheck disable=SC2054
	IO_QEMU_CMD=(ip netns exec "$IO_NS"
		qemu-system-x86_64 -machine pc -accel tcg -cpu max -smp 1 -m 1024
		-nodefaults -no-user-config -display none -vga none -no-reboot
		-kernel "$g/vmlinuz" -initrd "$g/initrd.img" -append "$app"
		-netdev tap,id=roce,ifname=dr-tap-roce,script=no,downscript=no
		-device "virtio-net-pci,netdev=roce,mac=$IO_GUEST_ROCE_MAC"
		-netdev tap,id=oob,ifname=dr-tap-oob,script=no,downscript=no
		-device "virtio-net-pci,netdev=oob,mac=$IO_GUEST_OOB_MAC"
		-fw_cfg "name=opt/droce/cmd,file=$cmd")
}

# io_boot <guest dir> <serial log> <command file>: start QEMU (TCG) in the
# namespace, in the background, the console going to <serial log> (QEMU's
# own messages to <serial log>.qemu)
io_boot() {
	local log=$2
	io_qemu_cmd "$1" "$3"
	: >"$log"
	"${IO_QEMU_CMD[@]}" -serial "file:$log" </dev/null >"$log.qemu" 2>&1 &
	IO_QEMU_PID=$!
}

# io_wait_serial <log> <ERE> <seconds>: until a console line matches
# (returns 1 on timeout or when QEMU is gone)
io_wait_serial() {
	local log=$1 re=$2 t=$3 t0=$SECONDS
	while ! grep -aEq "$re" "$log" 2>/dev/null; do
		if [ -n "$IO_QEMU_PID" ] && ! kill -0 "$IO_QEMU_PID" 2>/dev/null; then
			return 1
		fi
		[ $((SECONDS - t0)) -ge "$t" ] && return 1
		sleep 0.2
	done
	return 0
}

# io_agent <seconds> <request line>: one request to the guest's agent; its
# reply on stdout. Retries while the agent is not listening (yet).
io_agent() {
	local t=$1 req=$2 rc
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		timeout -k 2 "$t" ip netns exec "$IO_NS" bash -c \
			'exec 3<>"/dev/tcp/$1/$2" 2>/dev/null || exit 111
			 printf "%s\n" "$3" >&3; cat <&3' _ \
			"$IO_GUEST_OOB_IP" "$IO_AGENT_PORT" "$req"
		rc=$?
		[ $rc -ne 111 ] && return $rc
		sleep 0.5
	done
	return $rc
}

# io_guest_run <seconds> <shell command>: run it in the guest, output on
# stdout (the @@rc line removed), its exit status returned (124: timeout;
# 125: no answer from the agent)
io_guest_run() {
	local out rc
	out=$(io_agent $(($1 + 10)) "run64 $1 $(printf '%s' "$2" | base64 -w0)")
	rc=$(echo "$out" | sed -n 's/^@@rc=\([0-9]*\)$/\1/p' | tail -n 1)
	echo "$out" | grep -v '^@@rc='
	[ -n "$rc" ] || return 125
	return "$rc"
}

# io_guest_start <id> <shell command>: a background job in the guest
io_guest_start() {
	io_agent 20 "start64 $1 $(printf '%s' "$2" | base64 -w0)" |
		grep -q "^@@started $1\$"
}

# io_guest_wait <id> <seconds>: its output on stdout; returns its exit
# status, or 124 when it is still running, 125 when the agent is silent
io_guest_wait() {
	local out rc
	out=$(io_agent $(($2 + 10)) "wait $1 $2")
	rc=$(echo "$out" | sed -n 's/^@@rc=\(.*\)$/\1/p' | tail -n 1)
	echo "$out" | grep -v '^@@rc='
	case $rc in
	running) return 124 ;;
	"") return 125 ;;
	*) return "$rc" ;;
	esac
}

io_guest_kill() { io_agent 10 "kill $1" >/dev/null; }

# io_guest_job <id> <seconds> <shell command>: as io_guest_run, but as a
# job in its own session that is killed, all of it, when it runs out of
# time (124) or the agent stops answering (125). The agent's "run" only
# kills the shell it started on timeout: a program that shell started
# (the io_hw_wrap wrapper runs it as a child) went on, and an rxe
# ping-pong client retried for ever, busy-polling the guest's only CPU.
io_guest_job() {
	local rc
	io_guest_start "$1" "$3" || return 125
	io_guest_wait "$1" "$2"
	rc=$?
	case $rc in 124|125) io_guest_kill "$1" ;; esac
	return $rc
}

# io_guest_port_listening <port>: a TCP socket listens in the guest
io_guest_port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	io_guest_run 5 "grep -q ':$hex 00000000:0000 0A' /proc/net/tcp" >/dev/null
}

# io_port_listening <port>: a TCP socket listens in the namespace
io_port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	nsx awk -v p=":$hex" 'NR > 1 && $4 == "0A" &&
		substr($2, length($2) - 4) == p {f=1} END {exit !f}' /proc/net/tcp
}

# io_kill_pid <pid>: TERM, a moment, KILL; then reap
io_kill_pid() {
	local p=$1
	kill -TERM "$p" 2>/dev/null || { wait "$p" 2>/dev/null; return 0; }
	for _ in $(seq 1 30); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	return 0
}

# io_shutdown_guest: ask the agent to quit (init then powers off); QEMU
# gets a few seconds, then is killed
io_shutdown_guest() {
	[ -n "$IO_QEMU_PID" ] || return 0
	if kill -0 "$IO_QEMU_PID" 2>/dev/null; then
		io_agent 5 quit >/dev/null 2>&1
		for _ in $(seq 1 50); do
			kill -0 "$IO_QEMU_PID" 2>/dev/null || break
			sleep 0.1
		done
	fi
	io_kill_pid "$IO_QEMU_PID"
	IO_QEMU_PID=
}

io_cleanup() {
	local p
	for p in "${IO_PIDS[@]}"; do
		io_kill_pid "$p"
	done
	IO_PIDS=()
	if [ -n "$IO_QEMU_PID" ]; then
		io_kill_pid "$IO_QEMU_PID"
		IO_QEMU_PID=
	fi
	if [ "$IO_NS_MADE" = 1 ]; then
		# any process still in the namespace (a tcpdump, a droce)
		local pids
		pids=$(ip netns pids "$IO_NS" 2>/dev/null)
		for p in $pids; do kill -TERM "$p" 2>/dev/null; done
		[ -n "$pids" ] && sleep 0.5
		pids=$(ip netns pids "$IO_NS" 2>/dev/null)
		for p in $pids; do kill -KILL "$p" 2>/dev/null; done
		local l
		for l in dr-tap-roce dr-tap-oob "$IO_DROCE_IF" dr-oob dr-br-roce dr-br-oob; do
			nsx ip link del "$l" 2>/dev/null
		done
		ip netns del "$IO_NS" 2>/dev/null
		IO_NS_MADE=0
	fi
	# droce's EAL runtime directories (io_droce_env's file prefixes)
	rm -rf /run/dpdk/drio$$-* 2>/dev/null
}

# eal_mem_hugepages
# shellcheck source=test/common/test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../common/test_lib.sh"

# io_eal_mem: EAL memory options (hugepages when at least 1 GiB is free)
io_eal_mem() {
	eal_mem_hugepages 512
}

# io_preflight: can this host do it at all? Prints the reason and returns
# 1 when it cannot.
io_preflight() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces, taps)"; return 1; }
	[ -c /dev/net/tun ] || { echo "no /dev/net/tun"; return 1; }
	command -v ip >/dev/null 2>&1 || { echo "no ip(8)"; return 1; }
	if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
		io_say "installing qemu-system-x86"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends qemu-system-x86 >&2 ||
			{ echo "qemu-system-x86_64 missing and apt-get install failed"; return 1; }
	fi
	# the captures kept when a test fails (io_start_captures)
	if ! command -v tcpdump >/dev/null 2>&1; then
		io_say "installing tcpdump"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends tcpdump >&2 ||
			io_say "tcpdump missing and apt-get install failed: no captures"
	fi
	return 0
}

# ----------------------------------------------------------------------
# Test-script scaffolding shared by the test_*_rxe.sh scripts: set-up (one
# guest boot per script, or a running peer), bookkeeping of failures and
# time, captures, the droce modes, and the two ways round of a pair run.

IO_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IO_FAILS=0
IO_RUN=0
IO_WORK=
IO_BUDGET=${IO_BUDGET:-300}	# seconds for everything after the guest build
IO_START=$SECONDS
IO_T0=$SECONDS
IO_CAPTURE_PIDS=()
IO_REUSE=0			# 1: DROCE_INTEROP_NS, someone else's peer
IO_RXE_MTU=
IO_DROCE_MAC=
IO_GRC=
IO_DRC=
IO_HW=/sys/class/infiniband/rxe0/ports/1/hw_counters

io_fail() {
	echo "FAIL: $*"
	IO_FAILS=$((IO_FAILS + 1))
}

# io_remaining: seconds left in the budget (at least 1)
io_remaining() {
	local r=$((IO_BUDGET - (SECONDS - IO_T0)))
	[ $r -lt 1 ] && r=1
	echo $r
}

# io_limit <seconds>: that, or what is left of the budget if less
io_limit() {
	local r
	r=$(io_remaining)
	[ "$1" -lt "$r" ] && r=$1
	echo "$r"
}

# io_show <file>...: the end of each non-empty file
io_show() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "---- ${f#"$IO_WORK"/}"
		tail -n 15 "$f"
	done
}

# io_guest_diag: rxe's counters (non-zero) and the end of the guest's dmesg
io_guest_diag() {
	echo "---- guest rxe0 counters (non-zero) and dmesg"
	io_guest_run 10 "cd $IO_HW && grep . * | grep -v ':0\$'; dmesg | tail -n 8" 2>&1 |
		sed 's/^/  /'
}

# io_start_captures: tcpdump on the RoCE bridge (droce's side: ARP and
# RoCE, rxe.pcap) and on the out-of-band bridge (the programs' TCP
# exchanges, not the agent's: oob.pcap)
# (a note, no failure, when there is no tcpdump or it does not start)
io_start_captures() {
	local l
	if ! command -v tcpdump >/dev/null 2>&1; then
		echo "note: no tcpdump: no captures (apt-get install tcpdump)"
		return 0
	fi
	# -B: a 64 MiB kernel buffer; with the default, tcpdump under the
	# guest's TCG load dropped a third of a loss run's frames
	nsx tcpdump -i dr-droce-br -s 0 -B 65536 -U --immediate-mode -w "$IO_WORK/rxe.pcap" \
		'arp or udp port 4791' >"$IO_WORK/tcpdump-rxe.log" 2>&1 &
	IO_CAPTURE_PIDS+=($!)
	nsx tcpdump -i dr-oob-br -s 0 -U --immediate-mode -w "$IO_WORK/oob.pcap" \
		"tcp and not port $IO_AGENT_PORT" >"$IO_WORK/tcpdump-oob.log" 2>&1 &
	IO_CAPTURE_PIDS+=($!)
	for l in rxe oob; do
		for _ in $(seq 1 30); do
			grep -q 'listening on' "$IO_WORK/tcpdump-$l.log" 2>/dev/null && break
			sleep 0.1
		done
		grep -q 'listening on' "$IO_WORK/tcpdump-$l.log" 2>/dev/null ||
			echo "note: the $l capture did not start: $(tail -n 1 "$IO_WORK/tcpdump-$l.log" 2>/dev/null)"
	done
}

# io_split_captures: every runN/ with a "window" file (its start and end,
# seconds since the epoch: io_pair_*) gets its own slice of rxe.pcap and
# oob.pcap (pcap_split.py). Called when something failed.
io_split_captures() {
	local c d args w
	[ -x /usr/bin/python3 ] || return 0
	for c in rxe oob; do
		[ -s "$IO_WORK/$c.pcap" ] || continue
		args=()
		for d in "$IO_WORK"/run*; do
			[ -s "$d/window" ] || continue
			read -r -a w <"$d/window"
			[ ${#w[@]} -eq 2 ] || continue
			args+=("$d/$c.pcap" "${w[0]}" "${w[1]}")
		done
		[ ${#args[@]} -gt 0 ] || continue
		/usr/bin/python3 "$IO_HERE/pcap_split.py" "$IO_WORK/$c.pcap" "${args[@]}" ||
			echo "note: could not split $c.pcap per run"
	done
}

io_stop_captures() {
	local p
	[ ${#IO_CAPTURE_PIDS[@]} -gt 0 ] || return 0
	sleep 0.5
	for p in "${IO_CAPTURE_PIDS[@]}"; do
		io_kill_pid "$p"
	done
	IO_CAPTURE_PIDS=()
}

io_suite_cleanup() {
	local rc=$? p
	for p in "${IO_CAPTURE_PIDS[@]}"; do
		io_kill_pid "$p"
	done
	IO_CAPTURE_PIDS=()
	[ "$IO_REUSE" = 1 ] || io_shutdown_guest 2>/dev/null
	io_cleanup
	if [ -n "$IO_WORK" ] && [ -d "$IO_WORK" ]; then
		if [ "$IO_FAILS" -gt 0 ] || [ -n "${DROCE_INTEROP_KEEP:-}" ]; then
			[ "$IO_FAILS" -eq 0 ] || io_split_captures
			echo "work directory kept: $IO_WORK (console.log, rxe.pcap, oob.pcap;" \
			     "run*/ with each run's own rxe.pcap and oob.pcap when something failed)"
		else
			rm -rf "$IO_WORK"
		fi
	fi
	exit $rc
}

# io_suite_init: everything up to a guest whose agent answers and whose
# rxe0 is ready, or exit: 77 with "SKIPPED: <why>" when QEMU or the guest
# cannot be had, 1 when the guest comes up wrong. Installs the EXIT trap
# (io_suite_cleanup). Sets IO_WORK, IO_T0 (the budget starts there),
# IO_RXE_MTU and IO_DROCE_MAC.
#
# With DROCE_INTEROP_NS=<namespace>, it uses the peer already running there
# (test/interop/boot-peer.sh -n <namespace>) instead of booting one, and
# leaves it running.
io_suite_init() {
	local why rc ready out

	if [ -n "${DROCE_INTEROP_SKIP:-}" ]; then
		echo "SKIPPED: DROCE_INTEROP_SKIP is set"
		exit 77
	fi
	IO_WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-interop.XXXXXX") || exit 1
	trap io_suite_cleanup EXIT
	trap 'echo "FAIL: interrupted"; IO_FAILS=$((IO_FAILS + 1)); exit 1' INT TERM HUP

	if [ -n "${DROCE_INTEROP_NS:-}" ]; then
		IO_NS=$DROCE_INTEROP_NS
		IO_REUSE=1
		if ! ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$IO_NS"; then
			io_fail "DROCE_INTEROP_NS: no namespace $IO_NS"
			exit 1
		fi
		if ! io_guest_run 5 true >/dev/null; then
			io_fail "DROCE_INTEROP_NS: no agent answers in $IO_NS"
			exit 1
		fi
		echo "peer: the guest already running in $IO_NS"
		IO_T0=$SECONDS
		io_start_captures
	else
		if ! why=$(io_preflight); then
			echo "SKIPPED: $why"
			exit 77
		fi
		IO_GUEST=$("$IO_HERE/build-guest.sh" -q 2>"$IO_WORK/build-guest.log")
		rc=$?
		if [ $rc -ne 0 ] || [ ! -f "$IO_GUEST/initrd.img" ]; then
			tail -n 5 "$IO_WORK/build-guest.log"
			echo "SKIPPED: the rxe guest could not be built (build-guest.sh exit $rc:" \
			     "$(grep -v '^Get:\|^Fetched' "$IO_WORK/build-guest.log" | tail -n 1))"
			exit 77
		fi
		echo "guest: $IO_GUEST ($(cat "$IO_GUEST/kernel-release"))"
		IO_T0=$SECONDS
		io_reap_stale
		if ! io_netns_up 2>"$IO_WORK/netns.log"; then
			echo "SKIPPED: cannot set up the network namespace: $(tail -n 1 "$IO_WORK/netns.log")"
			exit 77
		fi
		io_start_captures
		echo droce-agent >"$IO_WORK/guest-cmd"
		io_boot "$IO_GUEST" "$IO_WORK/console.log" "$IO_WORK/guest-cmd"
		if ! io_wait_serial "$IO_WORK/console.log" '^@@DROCE boot' 180; then
			tail -n 5 "$IO_WORK/console.log.qemu" "$IO_WORK/console.log" 2>/dev/null
			echo "SKIPPED: QEMU (TCG) did not boot the guest kernel within 180 s" \
			     "($(tail -n 1 "$IO_WORK/console.log.qemu" 2>/dev/null))"
			exit 77
		fi
		if ! io_wait_serial "$IO_WORK/console.log" '^@@DROCE agent' 120; then
			io_fail "the guest booted but its agent never came up"
			grep -a '@@DROCE' "$IO_WORK/console.log"
			tail -n 20 "$IO_WORK/console.log"
			exit 1
		fi
		ready=$(grep -a '^@@DROCE ready' "$IO_WORK/console.log" | tr -d '\r')
		echo "booted in $((SECONDS - IO_T0)) s: ${ready#@@DROCE }"
	fi

	# rxe0's GID index 1 is the guest's IPv4-mapped address, RoCE v2
	out=$(io_guest_run 10 "p=/sys/class/infiniband/rxe0/ports/1
		echo \"gid1=\$(cat \$p/gids/1) type=\$(cat \$p/gid_attrs/types/1) state=\$(cat \$p/state)\"
		ibv_devinfo -d rxe0 | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/mtu=\1/p'")
	case $out in
	*"gid1=0000:0000:0000:0000:0000:ffff:c612:000b type=RoCE v2 state=4: ACTIVE"*) ;;
	*)	io_fail "rxe0 in the guest: GID index 1 is not ::ffff:$IO_GUEST_ROCE_IP (RoCE v2, ACTIVE): $out"
		exit 1 ;;
	esac
	IO_RXE_MTU=$(echo "$out" | sed -n 's/^mtu=//p')
	echo "rxe0 active MTU: ${IO_RXE_MTU:-?}"
	IO_DROCE_MAC=$(nsx cat "/sys/class/net/$IO_DROCE_IF/address")
}

# io_suite_end <name>: stop the guest and the captures, print the summary
# line; returns 0 when nothing failed
io_suite_end() {
	local left
	# nothing of the runs may be left running in the guest (a leftover
	# client retries for ever and slows every later run down)
	left=$(io_guest_run 10 "ps -o pid,args | awk '\$2 ~ /^(ibv_|ib_|rping)/'")
	if [ -n "$left" ]; then
		io_fail "left running in the guest: $(echo "$left" | tr '\n' '|')"
		io_guest_run 10 "kill -KILL $(echo "$left" | awk '{printf "%s ", $1}')" >/dev/null
	fi
	[ "$IO_REUSE" = 1 ] || io_shutdown_guest
	io_stop_captures
	echo "interop $1: $IO_RUN run(s), $IO_FAILS failure(s), $((SECONDS - IO_START))s"
	[ "$IO_FAILS" -eq 0 ]
}

# io_droce_env <mode> <tag>: the environment of a plain verbs program on
# droce over the namespace's DPDK veth (two lines, for env(1)):
#   engine  -l 0-1 and lcore=1: droce's engine on its own lcore
#   app*    -l 1 and lcore=app: the engine runs in the program's verbs calls
# IO_DROCE_MTU (1024 or 4096, see io_jumbo) is droce's path MTU;
# IO_DROCE_IMPAIR, when set, droce's impair= devarg (k:v/k:v).
IO_DROCE_MTU=1024
IO_DROCE_IMPAIR=
# net_af_packet's frames hold 2048 bytes (less its 32-byte header) unless
# told otherwise, and it says 1518-byte frames whatever its framesz. For
# path MTU 4096 (RoCE frames up to about 4200 bytes): 4352-byte frames
# (a multiple of 16; what the kernel writes starts 34 bytes in, so
# 4318-byte frames fit; what droce's 4352-byte mbufs take), 16 per
# 69632-byte block (17 pages: the PMD lays the frames out back to back,
# so they must fill the block exactly), and port_mtu= tells droce.
IO_AFP_JUMBO=framesz=4352,blocksz=69632
IO_PORT_MTU_JUMBO=4288
io_droce_env() {
	local mem vdev dev lc=1 cores=0-1
	mem=$(io_eal_mem)
	[ "${1%%-*}" = engine ] || { lc=app; cores=1; }
	vdev="net_af_packet0,iface=$IO_DROCE_IF"
	dev="port=net_af_packet0,ip=$IO_DROCE_IP,mtu=$IO_DROCE_MTU,lcore=$lc"
	if [ "$IO_DROCE_MTU" -gt 1024 ]; then
		vdev+=",$IO_AFP_JUMBO"
		dev+=",port_mtu=$IO_PORT_MTU_JUMBO"
	fi
	[ -z "$IO_DROCE_IMPAIR" ] || dev+=",impair=$IO_DROCE_IMPAIR"
	echo "DROCE_EAL_ARGS=-l $cores $mem --no-pci --file-prefix drio$$-$2" \
	     "--log-level=*:warning --vdev=$vdev"
	echo "DROCE_DEVICES=$dev"
}

# io_jumbo <on|off>: MTU 9000 (on) or 1500 on every link between droce
# and rxe (the guest's eth0, its tap, the bridge, the veth pair), and
# droce's path MTU (IO_DROCE_MTU) 4096 or 1024. rxe's active MTU follows
# its netdev's: 4096 from 4096 + headers up. Returns 1 when rxe0 does not
# report active_mtu 4096 (on) or 1024 (off).
io_jumbo() {
	local m=1500 want=1024 l out
	[ "$1" = on ] && { m=9000; want=4096; }
	for l in dr-br-roce dr-tap-roce "$IO_DROCE_IF" dr-droce-br; do
		nsx ip link set "$l" mtu "$m" || return 1
	done
	out=$(io_guest_run 10 "/bin/ip link set eth0 mtu $m &&
		ibv_devinfo -d rxe0 | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p'")
	IO_DROCE_MTU=$want
	IO_RXE_MTU=$out
	[ "$out" = "$want" ]
}

# pcap_settle <file>: until tcpdump has written what it has (the file's
# size stays put for half a second; 5 s at most)
pcap_settle() {
	local a b
	a=$(stat -c %s "$1")
	for _ in $(seq 1 10); do
		sleep 0.5
		b=$(stat -c %s "$1")
		[ "$a" = "$b" ] && return 0
		a=$b
	done
}

# io_jumbo_check_capture <label> [<source IP>...]: rxe.pcap (so far)
# holds RoCE frames with full 4096-byte payloads (4154 bytes and more)
# from each source (default: droce and rxe), and none longer than path
# MTU 4096 allows (4096 + the largest headers: Ethernet, IPv4, UDP, BTH,
# RETH, ImmDt, ICRC = 4174)
io_jumbo_check_capture() {
	local f=$IO_WORK/rxe.pcap src n lbl=$1
	command -v tcpdump >/dev/null 2>&1 && [ -s "$f" ] || return 0
	pcap_settle "$f"
	shift
	[ $# -gt 0 ] || set -- "$IO_DROCE_IP" "$IO_GUEST_ROCE_IP"
	for src in "$@"; do
		n=$(tcpdump -nr "$f" "udp port 4791 and src host $src and greater 4154" 2>/dev/null | wc -l)
		[ "$n" -gt 0 ] || io_fail "$lbl: no 4096-byte payloads from $src in the capture"
	done
	for src in "$IO_DROCE_IP" "$IO_GUEST_ROCE_IP"; do
		n=$(tcpdump -nr "$f" "udp port 4791 and src host $src and greater 4175" 2>/dev/null | wc -l)
		[ "$n" -eq 0 ] || io_fail "$lbl: $n frames from $src longer than path MTU 4096 allows"
	done
	echo "MTU 4096 on the wire: $(tcpdump -nr "$f" "udp port 4791 and greater 4154" 2>/dev/null | wc -l) frames with 4096-byte payloads"
}

# io_guest_unpin: the guest forgets droce's MAC, the pinned (permanent)
# entry of an earlier app mode too, which "ip neigh flush" alone keeps
io_guest_unpin() {
	io_guest_run 5 "/bin/ip neigh del $IO_DROCE_IP dev eth0 2>/dev/null
		/bin/ip neigh flush dev eth0; true" >/dev/null
}

# io_mode_prepare <mode>: the guest's neighbour entry for droce as <mode>
# needs it. engine and app-arp: nothing pinned (rxe ARPs, droce answers);
# app: pinned, because nothing answers ARP while an lcore=app program
# blocks in its TCP exchange (doc/interop.md). Returns 2 when the mode
# cannot run here, 1 on failure.
io_mode_prepare() {
	case $1 in
	engine)
		if [ "$(nproc)" -lt 2 ]; then
			echo "note: engine mode needs two cores; not run"
			return 2
		fi
		io_guest_unpin
		;;
	app-arp)
		io_guest_unpin
		;;
	app)
		io_guest_run 5 "/bin/ip neigh replace $IO_DROCE_IP lladdr $IO_DROCE_MAC dev eth0 nud permanent" \
			>/dev/null || { io_fail "app: cannot pin the guest's neighbour entry"; return 1; }
		;;
	*)
		io_fail "unknown mode $1"
		return 1
		;;
	esac
	return 0
}

# io_hw_wrap <shell command>: the command with rxe0's hw_counters printed
# before ("@@hw0 <name>:<value>") and after ("@@hw1 ..."); its exit status
# kept. io_hw_split takes them out of the output again.
io_hw_wrap() {
	printf '(cd %s && grep . * | sed "s/^/@@hw0 /")\n%s\nrc=$?\n(cd %s && grep . * | sed "s/^/@@hw1 /")\nexit $rc\n' \
		"$IO_HW" "$1" "$IO_HW"
}

# io_hw_split <output file>: the @@hw lines moved out of it; the counters
# that changed, "<name> +<delta>", in <output file>.hw
io_hw_split() {
	local f=$1
	awk '$1 == "@@hw0" || $1 == "@@hw1" {
		split($2, kv, ":"); v[$1, kv[1]] = kv[2]; n[kv[1]] = 1; next }
	     { print > "/dev/stderr" }
	     END { for (k in n) if (("@@hw1", k) in v && v["@@hw1", k] != v["@@hw0", k])
			printf "%s +%d\n", k, v["@@hw1", k] - v["@@hw0", k] }' \
		"$f" 2>"$f.tmp" | sort >"$f.hw"
	mv "$f.tmp" "$f"
}

# io_hw_traffic <counter name>: true for the counters a clean run moves
# (plain traffic: no retry, duplicate, NAK or error)
io_hw_traffic() {
	case $1 in
	sent_pkts|rcvd_pkts|rdma_sends|rdma_recvs|ack_deferred|lifespan) return 0 ;;
	esac
	return 1
}

# io_hw_quiet <output file>: true when rxe's counters over the run (from
# io_hw_split) are there and moved for plain traffic only
io_hw_quiet() {
	local name d
	[ -f "$1.hw" ] || return 1
	while read -r name d; do
		io_hw_traffic "$name" || return 1
	done <"$1.hw"
	return 0
}

# io_hw_check <output file> <label>: rxe's error counters over the run
# (from io_hw_split): failures (send_err, retry_exceeded_err,
# retry_rnr_exceeded_err, link_downed) fail; anything else that is not
# plain traffic (duplicate_request, out_of_seq_request, rcvd_seq_err,
# *rnr*, completer_retry_err ...) is printed as a note
io_hw_check() {
	local f=$1.hw name d
	[ -f "$f" ] || return 0
	while read -r name d; do
		io_hw_traffic "$name" && continue
		case $name in
		send_err|retry_exceeded_err|retry_rnr_exceeded_err|link_downed)
			io_fail "$2: rxe0 $name $d" ;;
		*)	echo "note: $2: rxe0 $name $d" ;;
		esac
	done <"$f"
}

# io_guest_wait_listen <port> <job id> <seconds>: until a TCP socket
# listens on <port> in the guest (0), the job has ended (3) or time is up (2)
io_guest_wait_listen() {
	local hex
	hex=$(printf '%04X' "$1")
	io_guest_run $(($3 + 2)) "i=0
		while [ \$i -lt $(($3 * 10)) ]; do
			grep -q ':$hex 00000000:0000 0A' /proc/net/tcp && exit 0
			[ -e /tmp/jobs/$2.rc ] && exit 3
			sleep 0.1; i=\$((i + 1))
		done
		exit 2" >/dev/null
}

# io_pair_rxe_server <mode> <dir> <port> <guest command> <program> [args...]
# rxe serves: the guest command runs as a job in the guest (through
# io_hw_wrap); once it listens on TCP <port>, <program> [args...] runs in
# the namespace on droce (io_droce_env <mode>) as the client, 60 s at most.
# Then the job gets 40 s to finish (5 s if the client failed), or is
# killed. Leaves <dir>/rxe.out (and .hw), droce.out, droce.err; the exit
# codes in IO_GRC (124: still running, killed) and IO_DRC.
io_pair_rxe_server() {
	local mode=$1 dir=$2 port=$3 gcmd=$4 id env1 env2 t t0
	shift 4
	IO_RUN=$((IO_RUN + 1))
	id=job$IO_RUN
	IO_GRC=125
	IO_DRC=125
	mkdir -p "$dir"
	printf '%s\n' "$gcmd" >"$dir/rxe.cmd"
	printf '%s\n' "$*" >"$dir/droce.cmd"
	t0=$(date +%s.%N)
	echo "$t0 $(date -d '+300 sec' +%s.%N)" >"$dir/window"
	if ! io_guest_start "$id" "$(io_hw_wrap "$gcmd")"; then
		echo "the guest job did not start" >"$dir/rxe.out"
		return 1
	fi
	io_guest_wait_listen "$port" "$id" 20
	{ read -r env1; read -r env2; } < <(io_droce_env "$mode" "$IO_RUN")
	nsx env "$env1" "$env2" timeout -k 3 "$(io_limit 60)" "$@" \
		>"$dir/droce.out" 2>"$dir/droce.err"
	IO_DRC=$?
	t=5
	[ $IO_DRC -eq 0 ] && t=40
	io_guest_wait "$id" "$(io_limit $t)" >"$dir/rxe.out" 2>&1
	IO_GRC=$?
	case $IO_GRC in 124|125) io_guest_kill "$id" ;; esac
	io_hw_split "$dir/rxe.out"
	echo "$t0 $(date +%s.%N)" >"$dir/window"
	return 0
}

# io_pair_droce_server <mode> <dir> <port> <guest command> <program> [args...]
# droce serves: <program> [args...] in the namespace on droce; once it
# listens on TCP <port> there, the guest command (the client) runs in the
# guest, 40 s at most. Output files and IO_GRC/IO_DRC as
# io_pair_rxe_server (IO_DRC 143: killed after the client failed).
io_pair_droce_server() {
	local mode=$1 dir=$2 port=$3 gcmd=$4 spid env1 env2 t0
	shift 4
	IO_RUN=$((IO_RUN + 1))
	IO_GRC=125
	IO_DRC=125
	mkdir -p "$dir"
	printf '%s\n' "$gcmd" >"$dir/rxe.cmd"
	printf '%s\n' "$*" >"$dir/droce.cmd"
	t0=$(date +%s.%N)
	echo "$t0 $(date -d '+300 sec' +%s.%N)" >"$dir/window"
	{ read -r env1; read -r env2; } < <(io_droce_env "$mode" "$IO_RUN")
	nsx env "$env1" "$env2" timeout -k 3 "$(io_limit 60)" "$@" \
		>"$dir/droce.out" 2>"$dir/droce.err" &
	spid=$!
	IO_PIDS+=("$spid")
	for _ in $(seq 1 150); do
		io_port_listening "$port" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if ! io_port_listening "$port"; then
		echo "droce's server does not listen on TCP $port" >>"$dir/droce.err"
		io_kill_pid "$spid"
		IO_PIDS=()
		IO_DRC=143
		return 1
	fi
	io_guest_job "cjob$IO_RUN" "$(io_limit 40)" "$(io_hw_wrap "$gcmd")" >"$dir/rxe.out" 2>&1
	IO_GRC=$?
	io_hw_split "$dir/rxe.out"
	if [ $IO_GRC -ne 0 ]; then
		for _ in $(seq 1 30); do
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	if [ $IO_GRC -ne 0 ] && kill -0 "$spid" 2>/dev/null; then
		io_kill_pid "$spid"
		IO_DRC=143
	else
		wait "$spid"
		IO_DRC=$?
	fi
	IO_PIDS=()
	echo "$t0 $(date +%s.%N)" >"$dir/window"
	return 0
}
