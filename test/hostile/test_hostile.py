#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hostile packets on the wire against a running droce node.

Run by run-hostile.sh inside a fresh network namespace:
    test_hostile.py --node <hostile_node> --node-if <veth> --peer-if <veth>

hostile_node (droce on DPDK net_af_packet, on --node-if) prints its QPs and
MRs; this script is the peer 198.18.0.2 on the other end of the veth and
builds every frame with scapy (Debian's python3-scapy; its RoCE layer
computes the ICRC), independently of droce's own packet builder. Each case
sends something a peer must not send, then checks that droce dropped it or
NAKed it as the IBTA spec says (the reply captured and its AETH syndrome
checked), counted it in the right counter, left memory outside the target
untouched (canaries, and MRs that must never change) and kept its other QPs
working. The last cases are ordinary SEND/WRITE/READ on another QP, which
must succeed.

Exit status: 0 all passed, 1 a check failed, 77 skipped (no af_packet).
Cases listed in KNOWN_BUGS (reported, not fixed yet) print XFAIL instead
of failing; if such a case passes, it prints XPASS and fails, so the entry
gets removed with the fix."""
import argparse
import json
import os
import select
import struct
import subprocess
import sys
import time

from scapy.all import Ether, IP, UDP, Raw, ARP, Packet, conf, raw
from scapy.fields import IntField, XIntField, XLongField
from scapy.contrib.roce import BTH, AETH

PEER_IP = '198.18.0.2'

# RC opcodes (IBTA table 38)
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY = 0x00, 0x01, 0x02, 0x03, 0x04
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0a
READ_REQ, READ_RESP_ONLY, ACK, ATOMIC_ACK = 0x0c, 0x10, 0x11, 0x12
CMP_SWAP, FETCH_ADD = 0x13, 0x14
# AETH syndromes (IBTA 9.7.5.1.4 table 44)
NAK_SEQ, NAK_INV_REQ, NAK_REM_ACCESS, NAK_REM_OP = 0x60, 0x61, 0x62, 0x63

# Reported engine bugs: case name -> what is wrong (see doc/security.md).
KNOWN_BUGS = {
}


class RETH(Packet):
    name = 'RETH'
    fields_desc = [XLongField('va', 0), XIntField('rkey', 0), IntField('dlen', 0)]


class AtomicETH(Packet):
    name = 'AtomicETH'
    fields_desc = [XLongField('va', 0), XIntField('rkey', 0),
                   XLongField('swap_add', 0), XLongField('compare', 0)]


class ImmDt(Packet):
    name = 'ImmDt'
    fields_desc = [XIntField('imm', 0)]


class Failed(Exception):
    pass


class Reply:
    """A RoCE frame droce sent, decoded by hand."""

    def __init__(self, b):
        self.raw = b
        self.dst_mac = ':'.join('%02x' % x for x in b[0:6])
        self.ip_dst = '.'.join(str(x) for x in b[30:34])
        self.opcode = b[42]
        self.dqpn = struct.unpack('>I', b[46:50])[0] & 0xffffff
        self.psn = struct.unpack('>I', b[50:54])[0] & 0xffffff
        self.syndrome = b[54] if self.opcode in (READ_RESP_ONLY, ACK, ATOMIC_ACK, 0x0d, 0x0f) else None
        self.payload = b[54 + 4:-4] if self.opcode in (READ_RESP_ONLY, 0x0d, 0x0f) else b''

    def __repr__(self):
        return 'Reply(op=0x%02x psn=0x%06x qp=0x%x syn=%s dst=%s)' % (
            self.opcode, self.psn, self.dqpn,
            None if self.syndrome is None else '0x%02x' % self.syndrome,
            self.dst_mac)


class Node:
    """hostile_node as a subprocess with a line-oriented JSON protocol."""

    def __init__(self, path, iface, log):
        self.p = subprocess.Popen([path, iface], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=log)
        self.buf = b''
        self.setup = self.line(60)

    def line(self, timeout=10):
        end = time.time() + timeout
        while b'\n' not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise Failed('hostile_node did not answer within %d s' % timeout)
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    rc = self.p.wait(5)
                    if rc == 77:
                        raise SystemExit(77)
                    raise Failed('hostile_node exited (%s)' % rc)
                self.buf += chunk
        ln, self.buf = self.buf.split(b'\n', 1)
        return json.loads(ln)

    def cmd(self, c):
        self.p.stdin.write((c + '\n').encode())
        self.p.stdin.flush()
        return self.line()

    def finish(self):
        self.p.stdin.close()
        final = self.line(30)
        rc = self.p.wait(30)
        return final, rc


class Wire:
    """The peer's end of the veth: sends frames, collects droce's."""

    def __init__(self, iface, node_mac):
        self.iface = iface
        with open('/sys/class/net/%s/address' % iface) as f:
            self.mac = f.read().strip()
        self.node_mac = node_mac
        self.s = conf.L2socket(iface=iface)
        self.sport = 0xc123

    def frame(self, dqpn, opcode, psn, *ext, payload=b'', ackreq=True,
              pad=None, dst_ip=None, dport=4791, icrc=None, pkey=0xffff):
        if pad is None:
            pad = (4 - len(payload) % 4) % 4
        bth = BTH(opcode=opcode, dqpn=dqpn, psn=psn & 0xffffff,
                  ackreq=int(ackreq), padcount=pad, pkey=pkey)
        if icrc is not None:
            bth.icrc = icrc
        p = (Ether(src=self.mac, dst=self.node_mac) /
             IP(src=PEER_IP, dst=dst_ip or NODE_IP, flags='DF', ttl=64) /
             UDP(sport=self.sport, dport=dport, chksum=0) / bth)
        for e in ext:
            p = p / e
        return p / Raw(payload + b'\0' * pad)

    def send(self, *frames):
        for f in frames:
            self.s.send(f if isinstance(f, Packet) else Raw(f))

    def collect(self, t=0.3, until=None):
        """droce's RoCE frames for `t` s (or until `until` of them came);
        ARP requests for the peer address are answered on the way."""
        out = []
        end = time.time() + t
        while time.time() < end and (until is None or len(out) < until):
            r, _, _ = select.select([self.s], [], [], max(0, end - time.time()))
            if not r:
                continue
            p = self.s.recv()
            if p is None:
                continue
            b = raw(p)
            if len(b) < 14 or b[6:12] != bytes.fromhex(self.node_mac.replace(':', '')):
                continue
            if b[12:14] == b'\x08\x06' and ARP in p and p[ARP].op == 1 and \
                    p[ARP].pdst == PEER_IP:
                self.send(Ether(src=self.mac, dst=p[ARP].hwsrc) /
                          ARP(op=2, hwsrc=self.mac, psrc=PEER_IP,
                              hwdst=p[ARP].hwsrc, pdst=p[ARP].psrc))
                continue
            if len(b) >= 58 and b[12:14] == b'\x08\x00' and b[23] == 17 and \
                    struct.unpack('>H', b[36:38])[0] == 4791:
                out.append(Reply(b))
        return out


# ------------------------------------------------------------------ cases

class T:
    def __init__(self, node, wire):
        self.node, self.w = node, wire
        s = node.setup
        self.qp = s['qps']
        self.mr = s['mrs']
        self.epsn = {k: v['rq_psn'] for k, v in self.qp.items()}
        self.failures = []
        self.bad_mac = []
        self.current = None
        self.passed = 0
        self.xfail = 0
        self.stats = node.cmd('stats')

    # -- helpers
    def delta(self):
        new = self.node.cmd('stats')
        d = {k: v - self.stats['stats'][k] for k, v in new['stats'].items()}
        self.stats = new
        return d, new

    def check(self, cond, what):
        if not cond:
            raise Failed(what)

    def expect_counts(self, d, **want):
        for k, v in want.items():
            self.check(d.get(k, 0) == v, 'counter %s: +%d, expected +%d' %
                       (k, d.get(k, 0), v))

    def reply_ok(self, r, q):
        """Every reply: to the peer (its MAC and IP), for the QP's peer.
        A wrong MAC is collected for the case replies_to_peer_mac (so that
        one bug there does not hide what each case checks)."""
        if r.dst_mac != self.w.mac:
            self.bad_mac.append('%s: %r' % (self.current, r))
        self.check(r.ip_dst == PEER_IP, '%r sent to %s' % (r, r.ip_dst))
        self.check(r.dqpn == self.qp[q]['dest_qpn'],
                   '%r for QP 0x%x, not the peer QP 0x%x' %
                   (r, r.dqpn, self.qp[q]['dest_qpn']))

    def expect_nak(self, replies, q, syndrome, psn):
        # positive ACKs of packets before the NAKed one may come first
        naks = [r for r in replies if r.opcode == ACK and
                not (r.syndrome & 0x60 == 0 and
                     ((psn - r.psn) & 0xffffff) in range(1, 0x800000))]
        self.check(len(naks) == 1, 'expected one NAK 0x%02x, got %r' % (syndrome, replies))
        r = naks[0]
        self.check(r.syndrome == syndrome, 'NAK syndrome 0x%02x, expected 0x%02x (%r)' %
                   (r.syndrome, syndrome, r))
        self.check(r.psn == psn & 0xffffff, 'NAK PSN 0x%06x, expected 0x%06x' % (r.psn, psn))
        self.reply_ok(r, q)

    def expect_silence(self, replies):
        self.check(not replies, 'expected no reply, got %r' % replies)

    def state(self, st, q):
        return st['qps'][q]['state']

    def reset(self, q):
        self.node.cmd('reset %s' % q)
        self.epsn[q] = self.qp[q]['rq_psn']
        self.stats = self.node.cmd('stats')

    def after(self, st):
        self.check(st['canaries'] == 'ok', 'memory damaged: ' + st['canaries'])

    def fatal_nak_case(self, q, frames, syndrome, counter, psn=None):
        """Frames that must draw exactly one NAK `syndrome` and move the QP
        to the error state (IBTA 9.7.5.2: class 'fatal' responder errors)."""
        self.w.send(*frames)
        rep = self.w.collect(0.4)
        d, st = self.delta()
        self.expect_nak(rep, q, syndrome, self.epsn[q] if psn is None else psn)
        self.expect_counts(d, **{counter: 1, 'tx_naks': 1})
        self.check(self.state(st, q) == 'ERR', 'QP %s is %s, expected ERR' %
                   (q, self.state(st, q)))
        self.after(st)
        self.reset(q)

    def f(self, q, opcode, *ext, psn=None, **kw):
        return self.w.frame(self.qp[q]['qpn'], opcode,
                            self.epsn[q] if psn is None else psn, *ext, **kw)

    # -- malformed frames: dropped and counted, never answered
    def case_truncated_headers(self):
        good = raw(self.f('A', SEND_ONLY, payload=b'x' * 64))
        for cut in (20, 40, 50, 60):   # in IP, UDP, BTH, payload
            self.w.send(good[:cut])
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.expect_counts(d, rx_malformed=4, rx_pkts=0)
        self.after(st)

    def case_bad_icrc(self):
        self.w.send(self.f('A', SEND_ONLY, payload=b'y' * 32, icrc=0x12345678))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.expect_counts(d, rx_icrc_err=1, rx_pkts=0)
        self.check(not st['wcs'], 'a completion for a frame with a bad ICRC')
        self.after(st)

    # -- a damaged MIDDLE of a WRITE in progress, at the expected PSN: droce
    #    checks such a frame's ICRC as it copies the payload into place
    #    (eth_resp_place_late); it must still be dropped, counted, never
    #    answered, and the message must complete from the resent frame
    def case_bad_icrc_middle(self):
        m = self.mr['rw']
        e = self.epsn['A']
        data = bytes((i * 13 + 5) & 0xff for i in range(3000))
        self.w.send(self.f('A', WRITE_FIRST, RETH(va=m['addr'] + 64, rkey=m['rkey'],
                                                  dlen=3000),
                           payload=data[:1024], ackreq=False),
                    self.f('A', WRITE_MIDDLE, psn=e + 1, payload=b'Z' * 1024,
                           icrc=0x12345678))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.check(all(r.opcode == ACK and r.syndrome & 0x60 == 0 and
                       r.psn == e & 0xffffff for r in rep),
                   'a damaged MIDDLE was answered: %r' % rep)
        self.expect_counts(d, rx_icrc_err=1, rx_icrc_late=1, rx_pkts=1)
        self.check(self.state(st, 'A') == 'RTS', 'QP A is %s' % self.state(st, 'A'))
        self.w.send(self.f('A', WRITE_MIDDLE, psn=e + 1, payload=data[1024:2048],
                           ackreq=False),
                    self.f('A', WRITE_LAST, psn=e + 2, payload=data[2048:]))
        rep = self.w.collect(0.4)
        d, st = self.delta()
        self.check(rep and all(r.opcode == ACK and r.syndrome & 0x60 == 0 for r in rep)
                   and rep[-1].psn == (e + 2) & 0xffffff,
                   'WRITE after a damaged MIDDLE: replies %r' % rep)
        for r in rep:
            self.reply_ok(r, 'A')
        self.expect_counts(d, rx_icrc_err=0, rx_icrc_late=2, rx_pkts=2)
        self.epsn['A'] += 3
        got = self.node.cmd('read rw 64 3000')
        self.check(bytes.fromhex(got['hex']) == data,
                   'WRITE after a damaged MIDDLE: data differ')
        self.after(st)

    # -- P_Key (IBA 10.9.3): the port's table holds 0xFFFF alone; a key
    #    matches when its low 15 bits do (one of the two, 0xFFFF, is a full
    #    member), so 0x7FFF is accepted and every other key is dropped,
    #    counted, never answered and never executed, requests and responses
    def case_bad_pkey(self):
        m = self.mr['rw']
        va, n = m['addr'] + 200, 16
        before = self.node.cmd('read rw 200 %d' % n)['hex']
        bad = [self.f('A', WRITE_ONLY, RETH(va=va, rkey=m['rkey'], dlen=n),
                      payload=b'K' * n, pkey=k)
               for k in (0x0000, 0x8001, 0xfffe, 0x7ffe)]
        bad.append(self.f('A', ACK, AETH(syndrome=NAK_INV_REQ, msn=0),
                          ackreq=False, pkey=0x1234))
        self.w.send(*bad)
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.expect_counts(d, rx_bad_pkey=5, rx_pkts=0, rx_malformed=0)
        self.check(self.node.cmd('read rw 200 %d' % n)['hex'] == before,
                   'a WRITE with a bad P_Key landed')
        self.check(self.state(st, 'A') == 'RTS', 'QP A is %s after frames '
                   'with bad P_Keys' % self.state(st, 'A'))
        self.after(st)
        # a limited member of the default partition
        self.w.send(self.f('A', WRITE_ONLY, RETH(va=va, rkey=m['rkey'], dlen=n),
                           payload=b'L' * n, pkey=0x7fff))
        rep = self.w.collect(0.4)
        d, st = self.delta()
        self.check(len(rep) == 1 and rep[0].opcode == ACK and
                   rep[0].syndrome & 0x60 == 0 and rep[0].psn == self.epsn['A'],
                   'WRITE with P_Key 0x7fff: replies %r' % rep)
        self.reply_ok(rep[0], 'A')
        self.epsn['A'] += 1
        self.expect_counts(d, rx_bad_pkey=0, rx_pkts=1)
        self.check(bytes.fromhex(self.node.cmd('read rw 200 %d' % n)['hex']) ==
                   b'L' * n, 'WRITE with P_Key 0x7fff: data differ')
        self.after(st)

    def case_undersized(self):
        # a bare Ethernet header, one a byte short of an IPv4 header, and a
        # UDP length that says less than the IP length
        self.w.send(bytes.fromhex(self.w.node_mac.replace(':', '')) +
                    bytes.fromhex(self.w.mac.replace(':', '')) + b'\x08\x00')
        good = raw(self.f('A', SEND_ONLY, payload=b'z' * 8))
        self.w.send(good[:14 + 19])
        bad = bytearray(good)
        struct.pack_into('>H', bad, 38, 8 + 12)     # UDP length: BTH only
        self.w.send(bytes(bad))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.expect_counts(d, rx_malformed=3, rx_pkts=0)
        self.after(st)

    def case_oversized(self):
        # 1. payload over the path MTU (1024) in a frame the link carries:
        #    IBTA 9.7.5.1.3, a length violation = NAK invalid request.
        # 2. a 8000-byte frame: more than the port's receive buffers; it must
        #    not be taken (dropped, counted as malformed if it arrives cut).
        self.fatal_nak_case('A', [self.f('A', SEND_ONLY, payload=b'o' * 1500)],
                            NAK_INV_REQ, 'tx_nak_inv_req')
        self.w.send(self.f('A', SEND_ONLY, payload=b'O' * 8000))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.check(d['rx_pkts'] == 0 and not st['wcs'],
                   'an 8000-byte frame was accepted')
        self.check(st['qps']['A']['state'] == 'RTS', 'QP A left RTS')
        self.after(st)

    def case_not_roce(self):
        self.w.send(self.f('A', SEND_ONLY, payload=b'a' * 4, dport=4792),
                    self.f('A', SEND_ONLY, payload=b'a' * 4, dst_ip='198.18.0.9'))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.expect_counts(d, rx_not_roce=2, rx_pkts=0)
        self.after(st)

    def case_ip_fragment(self):
        # RoCE is never fragmented; roce_parse rejects fragments (counted
        # rx_malformed). DPDK's af_packet PMD asks the kernel to reassemble
        # (PACKET_FANOUT_FLAG_DEFRAG), so a lone fragment may never reach
        # droce at all: either way it must not be taken.
        p = self.f('A', SEND_ONLY, payload=b'f' * 16)
        p[IP].flags = 'MF'
        q = self.f('A', SEND_ONLY, payload=b'g' * 16)
        q[IP].frag = 185
        self.w.send(p, q)
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.check(d['rx_pkts'] == 0 and d['rx_malformed'] <= 2 and not st['wcs'],
                   'a fragment was taken: %r' % d)
        self.after(st)

    # -- opcode sequence (IBTA 9.7.5.1.1, C9-94: NAK invalid request)
    def case_middle_without_first(self):
        self.fatal_nak_case('A', [self.f('A', SEND_MIDDLE, payload=b'm' * 1024)],
                            NAK_INV_REQ, 'tx_nak_inv_req')

    def case_last_without_first(self):
        self.fatal_nak_case('A', [self.f('A', SEND_LAST, payload=b'l' * 100)],
                            NAK_INV_REQ, 'tx_nak_inv_req')

    def case_write_last_without_first(self):
        self.fatal_nak_case('A', [self.f('A', WRITE_LAST, payload=b'w' * 100)],
                            NAK_INV_REQ, 'tx_nak_inv_req')

    def case_first_then_only(self):
        # a new message before the previous one ended
        m = self.mr['rw']
        p1 = self.f('A', SEND_FIRST, payload=b'1' * 1024)
        p2 = self.f('A', WRITE_ONLY, RETH(va=m['addr'], rkey=m['rkey'], dlen=4),
                    psn=self.epsn['A'] + 1, payload=b'2222')
        self.fatal_nak_case('A', [p1, p2], NAK_INV_REQ, 'tx_nak_inv_req',
                            psn=self.epsn['A'] + 1)

    # -- R_Key and bounds (IBTA 9.7.5.2.3 / C9-88..: NAK remote access)
    def write_only(self, q, va, rkey, dlen, payload):
        return self.f(q, WRITE_ONLY, RETH(va=va, rkey=rkey, dlen=dlen), payload=payload)

    def case_reth_past_mr(self):
        m = self.mr['rw']
        self.fatal_nak_case('A', [self.write_only('A', m['addr'] + m['len'] - 16,
                                                  m['rkey'], 64, b'P' * 64)],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_reth_before_mr(self):
        m = self.mr['rw']
        self.fatal_nak_case('A', [self.write_only('A', m['addr'] - 8, m['rkey'],
                                                  16, b'B' * 16)],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_reth_len_huge(self):
        m = self.mr['rw']
        self.fatal_nak_case('A', [self.write_only('A', m['addr'], m['rkey'],
                                                  0xffffffff, b'H' * 64)],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_reth_wraps_64bit(self):
        m = self.mr['rw']
        self.fatal_nak_case('A', [self.f('A', READ_REQ,
                                         RETH(va=0xfffffffffffffff0, rkey=m['rkey'],
                                              dlen=0x100))],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')
        # an address inside the MR, and a length that wraps past 2^64
        self.fatal_nak_case('A', [self.f('A', READ_REQ,
                                         RETH(va=m['addr'] + 16, rkey=m['rkey'],
                                              dlen=0xfffffff0))],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_rkey_other_pd(self):
        m = self.mr['otherpd']
        self.fatal_nak_case('A', [self.write_only('A', m['addr'], m['rkey'], 32,
                                                  b'D' * 32)],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_rkey_deregistered(self):
        m = self.mr['dead']
        self.fatal_nak_case('A', [self.write_only('A', m['addr'], m['rkey'], 32,
                                                  b'E' * 32)],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_rkey_forged(self):
        m = self.mr['rw']
        # the MR's index with another generation byte
        self.fatal_nak_case('A', [self.write_only('A', m['addr'], m['rkey'] ^ 0x5a,
                                                  32, b'F' * 32)],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_write_to_read_only_mr(self):
        m = self.mr['ro']
        self.fatal_nak_case('A', [self.write_only('A', m['addr'], m['rkey'], 32,
                                                  b'R' * 32)],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    # -- atomics
    def atomic(self, q, op, va, rkey):
        return self.f(q, op, AtomicETH(va=va, rkey=rkey, swap_add=1, compare=0))

    def case_atomic_unaligned(self):
        # IBTA 9.4.5 / C9-?: an atomic's VA must be 8-byte aligned; rxe and
        # droce answer NAK invalid request
        m = self.mr['rw']
        self.fatal_nak_case('A', [self.atomic('A', FETCH_ADD, m['addr'] + 4, m['rkey'])],
                            NAK_INV_REQ, 'tx_nak_inv_req')

    def case_atomic_without_qp_right(self):
        m = self.mr['rw']
        self.fatal_nak_case('C', [self.atomic('C', CMP_SWAP, m['addr'], m['rkey'])],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    def case_atomic_without_mr_right(self):
        m = self.mr['ro']
        self.fatal_nak_case('A', [self.atomic('A', FETCH_ADD, m['addr'], m['rkey'])],
                            NAK_REM_ACCESS, 'tx_nak_rem_access')

    # -- PSNs
    def case_psn_far_ahead(self):
        # IBTA 9.7.5.1.2: ahead of the expected PSN = sequence error, one NAK
        # (for the expected PSN) until the expected one comes
        far = self.epsn['A'] + 0x400000
        self.w.send(self.f('A', SEND_ONLY, psn=far, payload=b'a' * 8))
        self.w.send(self.f('A', SEND_ONLY, psn=far + 1, payload=b'a' * 8))
        rep = self.w.collect(0.4)
        d, st = self.delta()
        self.expect_nak(rep, 'A', NAK_SEQ, self.epsn['A'])
        self.expect_counts(d, rx_seq_err=2, tx_nak_seq=1)
        self.check(self.state(st, 'A') == 'RTS', 'QP A left RTS on a PSN sequence error')
        self.check(not st['wcs'], 'a completion for an out-of-sequence SEND')
        self.after(st)

    def case_psn_far_behind(self):
        # behind = duplicate: acknowledged again, never executed again
        behind = self.epsn['A'] - 0x400000
        self.w.send(self.f('A', SEND_ONLY, psn=behind, payload=b'b' * 8))
        rep = self.w.collect(0.4)
        d, st = self.delta()
        acks = [r for r in rep if r.opcode == ACK]
        self.check(len(acks) == 1 and acks[0].syndrome & 0x60 == 0,
                   'expected one ACK for a duplicate, got %r' % rep)
        self.check(acks[0].psn == (self.epsn['A'] - 1) & 0xffffff,
                   'duplicate ACKed with PSN 0x%06x, expected 0x%06x' %
                   (acks[0].psn, (self.epsn['A'] - 1) & 0xffffff))
        self.reply_ok(acks[0], 'A')
        self.expect_counts(d, rx_dup=1)
        self.check(not st['wcs'], 'a duplicate SEND completed a receive')
        self.after(st)

    def case_duplicate_flood(self):
        p = self.f('A', SEND_ONLY, payload=b'd' * 40)
        self.w.send(p)
        first = self.w.collect(0.3, until=1)
        self.epsn['A'] += 1
        for _ in range(200):
            self.w.send(p)
        rep = first + self.w.collect(0.8)
        d, st = self.delta()
        self.check(any(r.opcode == ACK and r.syndrome & 0x60 == 0 for r in rep),
                   'no ACK for the SEND')
        self.check(all(r.opcode == ACK and r.syndrome & 0x60 == 0 for r in rep),
                   'something else than ACKs: %r' % rep)
        for r in rep:
            self.reply_ok(r, 'A')
        self.check(len(rep) <= 201, '%d replies to 201 frames' % len(rep))
        self.expect_counts(d, rx_dup=200)
        wcs = [w for w in st['wcs'] if w['qp_num'] == self.qp['A']['qpn']]
        self.check(len(wcs) == 1 and wcs[0]['status'] == 0 and wcs[0]['byte_len'] == 40,
                   'the SEND and its 200 copies gave completions %r' % wcs)
        self.check(self.state(st, 'A') == 'RTS', 'QP A left RTS')
        self.after(st)

    # -- no receive posted (IBTA 9.7.5.2.8: RNR NAK, the QP stays usable)
    def case_send_without_receive(self):
        self.w.send(self.f('E', SEND_ONLY, payload=b'n' * 16))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_nak(rep, 'E', 0x20 | 1, self.epsn['E'])   # min_rnr_timer 1
        self.expect_counts(d, tx_rnr_naks=1)
        self.check(self.state(st, 'E') == 'RTS', 'QP E left RTS on an RNR NAK')
        self.check(not st['wcs'], 'completions for an RNR: %r' % st['wcs'])
        self.after(st)

    # -- a WRITE that runs across ibv_dereg_mr(): after deregistration the
    #    R_Key is void, the rest of the message must not land in memory the
    #    application has taken back: NAK remote access at the next packet
    def case_write_across_dereg(self):
        m = self.mr['rw']
        first = self.f('A', WRITE_FIRST, RETH(va=m['addr'], rkey=m['rkey'], dlen=3000),
                       payload=b'1' * 1024, ackreq=False)
        self.w.send(first)
        self.w.collect(0.2)
        self.node.cmd('dereg rw')
        self.w.send(self.f('A', WRITE_MIDDLE, psn=self.epsn['A'] + 1,
                           payload=b'2' * 1024, ackreq=False),
                    self.f('A', WRITE_LAST, psn=self.epsn['A'] + 2, payload=b'3' * 952))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        r = self.node.cmd('rereg rw')
        self.mr['rw']['rkey'] = r['rkey']
        self.check(st['canaries'] == 'ok', 'after ibv_dereg_mr: ' + st['canaries'])
        self.expect_nak(rep, 'A', NAK_REM_ACCESS, self.epsn['A'] + 1)
        self.expect_counts(d, tx_nak_rem_access=1)
        self.check(self.state(st, 'A') == 'ERR', 'QP A is %s, expected ERR' %
                   self.state(st, 'A'))
        self.reset('A')

    # -- unknown and destroyed QPs
    def case_destroyed_qp(self):
        d_qpn = self.qp['D']['qpn']
        self.w.send(self.w.frame(d_qpn, SEND_ONLY, self.qp['D']['rq_psn'], payload=b'x' * 8),
                    self.w.frame(0xabcdef, SEND_ONLY, 0, payload=b'x' * 8),
                    self.w.frame(d_qpn, ACK, 0, AETH(syndrome=NAK_INV_REQ, msn=0),
                                 ackreq=False))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.expect_counts(d, rx_no_qp=3)
        self.after(st)

    # -- responses nobody asked for
    def case_unsolicited_responses(self):
        self.w.send(self.f('B', ACK, AETH(syndrome=0x1f, msn=5), ackreq=False),
                    self.f('B', ACK, AETH(syndrome=NAK_REM_ACCESS, msn=5), ackreq=False),
                    self.f('B', READ_RESP_ONLY, AETH(syndrome=0x1f, msn=1),
                           payload=b'r' * 64, ackreq=False),
                    self.f('B', ATOMIC_ACK, AETH(syndrome=0x1f, msn=1),
                           Raw(struct.pack('>Q', 42)), ackreq=False))
        rep = self.w.collect(0.3)
        d, st = self.delta()
        self.expect_silence(rep)
        self.check(self.state(st, 'B') == 'RTS', 'QP B left RTS on stray responses')
        self.check(not st['wcs'], 'stray responses completed something: %r' % st['wcs'])
        self.after(st)

    # -- the other QPs still work
    def case_good_send_on_b(self):
        data = bytes(range(200))
        self.w.send(self.f('B', SEND_ONLY, payload=data))
        rep = self.w.collect(0.4)
        d, st = self.delta()
        self.check(len(rep) == 1 and rep[0].opcode == ACK and rep[0].syndrome & 0x60 == 0
                   and rep[0].psn == self.epsn['B'], 'SEND on B: replies %r' % rep)
        self.reply_ok(rep[0], 'B')
        self.epsn['B'] += 1
        wcs = [w for w in st['wcs'] if w['qp_num'] == self.qp['B']['qpn']]
        self.check(len(wcs) == 1 and wcs[0]['status'] == 0 and wcs[0]['byte_len'] == 200,
                   'SEND on B completed %r' % wcs)
        slot = (wcs[0]['wr_id'] >> 8) * self.node.setup['nrecv'] + (wcs[0]['wr_id'] & 0xff)
        got = self.node.cmd('read recv %d 200' % (slot * self.node.setup['recv_slot']))
        self.check(bytes.fromhex(got['hex']) == data, 'SEND on B: data differ')
        self.after(st)

    def case_good_write_read_on_b(self):
        m = self.mr['rw']
        data = bytes((i * 7) & 0xff for i in range(3000))
        first = self.f('B', WRITE_FIRST, RETH(va=m['addr'] + 100, rkey=m['rkey'], dlen=3000),
                       payload=data[:1024], ackreq=False)
        mid = self.f('B', WRITE_MIDDLE, psn=self.epsn['B'] + 1, payload=data[1024:2048],
                     ackreq=False)
        last = self.f('B', WRITE_LAST, psn=self.epsn['B'] + 2, payload=data[2048:])
        self.w.send(first, mid, last)
        # ACKs may come for every packet (coalesced per receive burst);
        # the last must cover the LAST
        rep = self.w.collect(0.4)
        self.check(rep and all(r.opcode == ACK and r.syndrome & 0x60 == 0 for r in rep)
                   and rep[-1].psn == (self.epsn['B'] + 2) & 0xffffff,
                   'WRITE on B: replies %r' % rep)
        for r in rep:
            self.reply_ok(r, 'B')
        self.epsn['B'] += 3
        got = self.node.cmd('read rw 100 3000')
        self.check(bytes.fromhex(got['hex']) == data, 'WRITE on B: data differ')
        # and READ it back, from the read-only MR as well
        ro = self.mr['ro']
        self.w.send(self.f('B', READ_REQ, RETH(va=ro['addr'] + 8, rkey=ro['rkey'], dlen=64)))
        rep = self.w.collect(0.4)
        d, st = self.delta()
        self.check(len(rep) == 1 and rep[0].opcode == READ_RESP_ONLY and
                   rep[0].psn == self.epsn['B'] and
                   rep[0].payload == bytes([ro['fill']]) * 64,
                   'READ on B: replies %r' % rep)
        self.reply_ok(rep[0], 'B')
        self.epsn['B'] += 1
        self.check(self.state(st, 'B') == 'RTS', 'QP B not in RTS')
        self.after(st)

    def case_after_all_qp_a_works(self):
        # QP A was reset after each fatal case: it must work as new
        self.w.send(self.f('A', SEND_ONLY, payload=b'k' * 12))
        rep = self.w.collect(0.4)
        d, st = self.delta()
        self.check(len(rep) == 1 and rep[0].opcode == ACK and rep[0].syndrome & 0x60 == 0,
                   'SEND on A: replies %r' % rep)
        self.reply_ok(rep[0], 'A')
        self.epsn['A'] += 1
        self.after(st)

    def case_replies_to_peer_mac(self):
        # Every ACK/NAK/response of every case above went to the peer's MAC
        # (the peer's ARP answer and its own frames both told droce).
        self.check(not self.bad_mac, '%d replies not sent to the peer\'s MAC %s, '
                   'e.g. %s' % (len(self.bad_mac), self.w.mac,
                               '; '.join(self.bad_mac[:3])))

    def run(self, only=None):
        names = [n for n in dir(self) if n.startswith('case_')]
        names.sort(key=lambda n: getattr(T, n).__code__.co_firstlineno)
        for n in names:
            name = n[5:]
            if only and name not in only:
                continue
            self.current = name
            try:
                getattr(self, n)()
            except Failed as e:
                if name in KNOWN_BUGS:
                    print('XFAIL %s: %s (known: %s)' % (name, e, KNOWN_BUGS[name]))
                    self.xfail += 1
                else:
                    print('FAIL  %s: %s' % (name, e))
                    self.failures.append(name)
                # whatever state it left, go on from a clean one
                for q in ('A', 'B', 'C'):
                    self.reset(q)
                continue
            if name in KNOWN_BUGS:
                print('XPASS %s: listed in KNOWN_BUGS but passed: remove the entry'
                      % name)
                self.failures.append(name)
            else:
                print('ok    %s' % name)
                self.passed += 1
            sys.stdout.flush()


NODE_IP = '198.18.0.1'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--node', required=True)
    ap.add_argument('--node-if', required=True)
    ap.add_argument('--peer-if', required=True)
    ap.add_argument('--log', default='/dev/null')
    ap.add_argument('cases', nargs='*')
    a = ap.parse_args()
    conf.verb = 0
    log = open(a.log, 'ab')
    node = Node(a.node, a.node_if, log)
    try:
        s = node.setup
        print('droce node: %s %s, QPs %s' % (s['ip'], s['mac'], ', '.join(
            '%s=0x%x' % (k, v['qpn']) for k, v in s['qps'].items())))
        wire = Wire(a.peer_if, s['mac'])
        t = T(node, wire)
        t.run(set(a.cases))
        final, rc = node.finish()
    except Failed as e:
        print('FAIL: %s' % e)
        node.p.kill()
        return 1
    print('final: canaries %s, counters %s' % (final['canaries'], ', '.join(
        '%s=%d' % (k, v) for k, v in final['stats'].items() if v)))
    bad = t.failures[:]
    if final['canaries'] != 'ok':
        bad.append('canaries: ' + final['canaries'])
    if rc != 0:
        bad.append('hostile_node exit status %d' % rc)
    print('%d passed, %d known bugs (XFAIL), %d failed%s' % (
        t.passed, t.xfail, len(bad), (': ' + ', '.join(bad)) if bad else ''))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
