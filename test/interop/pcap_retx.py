#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
#
# RoCEv2 retransmissions in a capture, per sender: request packets (RC
# SEND/WRITE/READ request/atomic opcodes) whose (source IP, destination QP,
# PSN) was seen before. Used by test_loss_rxe.sh to show that each side
# retransmitted during a run with the link impairer on.
#
# usage: pcap_retx.py <pcap> [<t0> <t1>]
#   only frames with t0 <= timestamp < t1 (seconds since the epoch) count
# prints one line per source IP: "<ip> requests=<n> retransmitted=<n>
# responses=<n> naks=<n>"; exit 0, or 2 when the file cannot be read.
# Ethernet (optionally one 802.1Q tag), IPv4, UDP 4791 only; anything
# else is skipped. Standard library only.

import struct
import sys

from pcap_records import open_pcap

ROCE_PORT = 4791
# RC request opcodes (IBTA table 38): SEND first..only with imm (0x00-0x05),
# RDMA WRITE first..only with imm (0x06-0x0b), RDMA READ request (0x0c),
# CMP_SWAP (0x13), FETCH_ADD (0x14), SEND last/only with invalidate
# (0x16, 0x17)
REQ_OPS = set(range(0x00, 0x0d)) | {0x13, 0x14, 0x16, 0x17}
ACK_OP = 0x11


def frames(path):
    with open(path, 'rb') as f:
        pcap = open_pcap(f)
        if pcap is None:
            return
        for ts, _, data in pcap[1]:
            yield ts, data


def main():
    if len(sys.argv) not in (2, 4):
        print(__doc__ or 'usage: pcap_retx.py <pcap> [<t0> <t1>]',
              file=sys.stderr)
        return 2
    t0 = float(sys.argv[2]) if len(sys.argv) == 4 else 0.0
    t1 = float(sys.argv[3]) if len(sys.argv) == 4 else float('inf')
    seen = set()
    st = {}
    try:
        for ts, d in frames(sys.argv[1]):
            if ts < t0 or ts >= t1:
                continue
            off = 12
            etype = struct.unpack('>H', d[off:off + 2])[0]
            if etype == 0x8100:
                off += 4
                etype = struct.unpack('>H', d[off:off + 2])[0]
            off += 2
            if etype != 0x0800 or len(d) < off + 20:
                continue
            ihl = (d[off] & 0x0f) * 4
            if d[off + 9] != 17:
                continue
            src = '.'.join(str(b) for b in d[off + 12:off + 16])
            u = off + ihl
            if len(d) < u + 8 + 12:
                continue
            if struct.unpack('>H', d[u + 2:u + 4])[0] != ROCE_PORT:
                continue
            b = u + 8
            op = d[b]
            dqp = int.from_bytes(d[b + 5:b + 8], 'big')
            psn = int.from_bytes(d[b + 9:b + 12], 'big')
            s = st.setdefault(src, [0, 0, 0, 0])
            if op in REQ_OPS:
                s[0] += 1
                key = (src, dqp, psn)
                if key in seen:
                    s[1] += 1
                seen.add(key)
            else:
                s[2] += 1
                # AETH syndrome 011x xxxx: NAK
                if op == ACK_OP and len(d) >= b + 13 and \
                        (d[b + 12] & 0xe0) == 0x60:
                    s[3] += 1
    except (OSError, ValueError) as e:
        print('pcap_retx: %s: %s' % (sys.argv[1], e), file=sys.stderr)
        return 2
    for src in sorted(st):
        r = st[src]
        print('%s requests=%d retransmitted=%d responses=%d naks=%d' %
              (src, r[0], r[1], r[2], r[3]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
