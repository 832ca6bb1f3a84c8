#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The rxe peer by hand, for debugging: the same namespace, bridges, taps and
# guest as the interop tests, left running until you stop it.
#
# usage:
#   boot-peer.sh [-i] [-n <netns>]   set up and boot; stays in the
#                                    foreground; Ctrl-C (or the guest
#                                    powering off) tears everything down
#       -i  interactive: the guest's console on this terminal, a root shell
#           in the guest (its agent runs as well); leave the shell to power
#           off, or Ctrl-A X to kill QEMU
#   boot-peer.sh [-n <netns>] -c '<shell command>'
#       run a command in a running peer through its agent (60 s at most)
#
# The namespace defaults to droce-io-peer. See doc/interop.md.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INTERACTIVE=0
CMD=
NS=droce-io-peer
while getopts in:c: o; do
	case $o in
	i) INTERACTIVE=1 ;;
	n) NS=$OPTARG ;;
	c) CMD=$OPTARG ;;
	*) sed -n '4,17p' "$0"; exit 1 ;;
	esac
done
IO_NS=$NS
IO_LOG_PREFIX=boot-peer
# shellcheck source=lib.sh
. "$HERE/lib.sh"

if [ -n "$CMD" ]; then
	io_guest_run 60 "$CMD"
	exit $?
fi

if ip netns list | grep -qw "^$IO_NS"; then
	echo "namespace $IO_NS exists already (another boot-peer.sh?); use -n" >&2
	exit 1
fi
if ! why=$(io_preflight); then
	echo "cannot run: $why" >&2
	exit 1
fi
GUEST=$("$HERE/build-guest.sh" -q) || exit 1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/droce-peer.XXXXXX") || exit 1
trap 'io_cleanup; [ -s "$WORK/console.log" ] && echo "console log: $WORK/console.log" >&2' EXIT
trap 'exit 130' INT TERM HUP
io_netns_up || { echo "network namespace set-up failed" >&2; exit 1; }

DROCE_MAC=$(nsx cat "/sys/class/net/$IO_DROCE_IF/address")
cat >&2 <<EOF
namespace  $IO_NS
guest      eth0 $IO_GUEST_ROCE_IP (rxe0, GID 1 ::ffff:$IO_GUEST_ROCE_IP) on dr-br-roce
           eth1 $IO_GUEST_OOB_IP (agent on TCP $IO_AGENT_PORT) on dr-br-oob
droce      DPDK net_af_packet on $IO_DROCE_IF (MAC $DROCE_MAC): use ip=$IO_DROCE_IP
host side  dr-oob $IO_HOST_OOB_IP
e.g.       $0 -n $IO_NS -c 'ibv_rc_pingpong -d rxe0 -g 1 -c' &
           ip netns exec $IO_NS env \\
             DROCE_EAL_ARGS="-l 0-1 $(io_eal_mem) --no-pci --vdev=net_af_packet0,iface=$IO_DROCE_IF" \\
             DROCE_DEVICES="port=net_af_packet0,ip=$IO_DROCE_IP,lcore=1" \\
             build-io/examples/rc_pingpong/rc_pingpong -g 1 -c $IO_GUEST_OOB_IP
capture    ip netns exec $IO_NS tcpdump -i dr-droce-br -w rxe.pcap 'arp or udp port 4791'
EOF

if [ $INTERACTIVE -eq 1 ]; then
	printf '%s\n' 'droce-agent &' 'sleep 1' 'exec setsid cttyhack sh -l' \
		>"$WORK/cmd"
	io_qemu_cmd "$GUEST" "$WORK/cmd"
	"${IO_QEMU_CMD[@]}" -serial mon:stdio
else
	echo droce-agent >"$WORK/cmd"
	io_boot "$GUEST" "$WORK/console.log" "$WORK/cmd"
	echo "booting (console: $WORK/console.log) ..." >&2
	if io_wait_serial "$WORK/console.log" '^@@DROCE agent' 240; then
		grep -a '^@@DROCE ready' "$WORK/console.log" >&2
		echo "peer up; Ctrl-C to stop" >&2
	else
		echo "the guest did not come up:" >&2
		tail -n 20 "$WORK/console.log" >&2
		exit 1
	fi
	wait "$IO_QEMU_PID"
	IO_QEMU_PID=
fi
