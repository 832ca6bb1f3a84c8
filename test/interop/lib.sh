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
}

# io_eal_mem: EAL memory options (hugepages when at least 1 GiB is free)
io_eal_mem() {
	local hp_free hp_kb
	if [ -n "${DROCE_TEST_EAL_MEM:-}" ]; then
		echo "$DROCE_TEST_EAL_MEM"
		return
	fi
	hp_free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo 2>/dev/null)
	hp_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo 2>/dev/null)
	if [ "${hp_free:-0}" -gt 0 ] &&
	   [ $(( ${hp_free:-0} * ${hp_kb:-0} )) -ge $((1024 * 1024)) ]; then
		echo "--in-memory"
	else
		echo "--no-huge --no-shconf -m 512"
	fi
}

# io_droce_env <core> <file prefix>: the environment for a plain verbs
# program on droce over the namespace's DPDK veth (for env(1))
io_droce_env() {
	echo "DROCE_EAL_ARGS=-l $1 $(io_eal_mem) --no-pci --file-prefix $2" \
	     "--log-level=*:warning --vdev=net_af_packet0,iface=$IO_DROCE_IF"
	echo "DROCE_DEVICES=port=net_af_packet0,ip=$IO_DROCE_IP,mtu=1024,lcore=app"
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
	return 0
}
