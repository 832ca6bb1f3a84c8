#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Seed corpora for the fuzz harnesses (test/fuzz/corpus_*), from the
Linux rdma_rxe captures in test/roce/rxe-pcap and from droce itself.

    test/fuzz/make-corpus.py [--pcap DIR] [--fuzz-rx BUILD/test/fuzz/fuzz_rx]
                             [--only parse_rx|post|verbs|args|console]

corpus_parse  RoCE frames of the captures (a few per opcode and size),
              plus VLAN-tagged and IPv6 variants (ICRC recomputed here, by
              IBTA A17.8, independently of lib/roce) and a few "build"
              inputs.
corpus_rx     the same frames as fuzz_rx inputs: one record each, and whole
              messages (FIRST..LAST) as one input; responses with the
              set-up byte that makes the attacked QP wait for them. With
              --fuzz-rx, also droce's own traffic (FZ_GEN_CORPUS).
corpus_post   hand-made send queue contents and work requests.
corpus_verbs  verbs programs: an RC pair and a UD pair on both devices,
              each operation, objects torn down in flight.
corpus_args   device arguments (every key, good and bad values, keys
              without one) and EAL argument vectors (defaults, the
              environment's extra words, the caller's own).
corpus_console droce-console scripts: test/console's, and each section of
              the demo after the demo's own objects.
Only the standard library; the corpora stay small (a few hundred KB)."""
import argparse
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# fuzz_rx record control bits (see fuzz_rx.c)
F_HDR, F_QP, F_PSN, F_KEY, F_ICRC, F_SEG, F_B, F_POLL = (1 << i for i in range(8))
H_SILENT, H_READ, H_FADD, H_WRITE, H_SEND, H_B_SEND, H_BIG, H_POLL = (1 << i for i in range(8))
RESPONSES = {0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12}


def read_pcap(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + 'IIII', data[off:off + 16])
        off += 16
        yield data[off:off + incl]
        off += incl


def is_roce_v4(fr):
    return (len(fr) >= 14 + 20 + 8 + 12 + 4 and fr[12:14] == b'\x08\x00' and
            fr[14 + 9] == 17 and struct.unpack('>H', fr[36:38])[0] == 4791)


def icrc(l3, ipv6):
    """ICRC of a RoCEv2 datagram (l3 = IP header .. last payload byte +
    the 4 ICRC bytes), IBTA Annex A17.8: 8 x 0xff, then IP/UDP/BTH with
    the variant fields set to 1s, then the rest; CRC32 stored LE."""
    b = bytearray(l3[:-4])
    if ipv6:
        b[0] |= 0x0f
        b[1] = b[2] = b[3] = 0xff
        b[7] = 0xff
        iphl = 40
    else:
        b[1] = 0xff
        b[8] = 0xff
        b[10] = b[11] = 0xff
        iphl = (b[0] & 0x0f) * 4
    b[iphl + 6] = b[iphl + 7] = 0xff
    b[iphl + 8 + 4] = 0xff
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(b)) & 0xffffffff)


def vlan_variant(fr):
    return fr[:12] + b'\x81\x00\x20\x07' + fr[12:]


def ipv6_variant(fr):
    ip = fr[14:34]
    tos = ip[1]
    rest = fr[34:]                         # UDP .. ICRC
    src = b'\x00' * 10 + b'\xff\xff' + ip[12:16]
    dst = b'\x00' * 10 + b'\xff\xff' + ip[16:20]
    h6 = struct.pack('>IHBB', 6 << 28 | tos << 20 | 0x12345, len(rest), 17,
                     64) + src + dst
    l3 = h6 + rest
    l3 = l3[:-4] + icrc(l3, True)
    return fr[:12] + b'\x86\xdd' + l3


def rec(ctl, sel, fr):
    return struct.pack('>BBH', ctl, sel, len(fr)) + fr


def write(dirpath, name, data):
    with open(os.path.join(dirpath, name), 'wb') as f:
        f.write(data)


def response_setup(op):
    low = op & 0x1f
    if low in (0x0d, 0x0e, 0x0f, 0x10):
        return H_SILENT | H_READ
    if low == 0x12:
        return H_SILENT | H_FADD
    return H_SILENT | H_SEND


def clean(d):
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(d, '*')):
        os.remove(f)


def make_parse_rx(pcap_dir, out_parse, out_rx):
    frames = []
    for p in sorted(glob.glob(os.path.join(pcap_dir, '*.pcap'))):
        name = os.path.splitext(os.path.basename(p))[0]
        for fr in read_pcap(p):
            if is_roce_v4(fr):
                frames.append((name, fr))
    # parse: a few frames per (opcode, length class)
    seen = {}
    n = 0
    for name, fr in frames:
        op = fr[42]
        key = (op, min(len(fr) // 512, 3))
        if seen.get(key, 0) >= 2:
            continue
        seen[key] = seen.get(key, 0) + 1
        write(out_parse, '%s_%03d' % (name, n), b'\x00' + fr)
        if seen[key] == 1:
            write(out_parse, '%s_%03d_vlan' % (name, n), b'\x00' + vlan_variant(fr))
            write(out_parse, '%s_%03d_ipv6' % (name, n), b'\x00' + ipv6_variant(fr))
            # only the headers contiguous
            write(out_parse, '%s_%03d_split' % (name, n), b'\x94' + fr)
        n += 1
    # rx: one record per distinct opcode/capture, and each capture's first
    # whole message from one flow
    seen = set()
    for name, fr in frames:
        op = fr[42]
        sel = 0x80                          # QP 0 (path MTU 1024 as rxe), PSN + 0
        ctl = F_HDR | F_QP | F_PSN | F_ICRC | F_POLL
        h = response_setup(op) if (op & 0x1f) in RESPONSES else 0
        if (name, op) in seen:
            continue
        seen.add((name, op))
        write(out_rx, '%s_op%02x' % (name, op), bytes([h]) + rec(ctl, sel, fr))
    by_capture = {}
    for name, fr in frames:
        by_capture.setdefault(name, []).append(fr)
    for name, frs in by_capture.items():
        # the first message from the first flow: FIRST .. LAST (or ONLY)
        flow = frs[0][26:30] + frs[0][46:50]     # source IP, dest QP
        msg = []
        for fr in frs:
            if fr[26:30] + fr[46:50] != flow:
                continue
            msg.append(fr)
            if len(msg) >= 6 or (fr[42] & 0x1f) in (0x02, 0x03, 0x04, 0x05,
                                                    0x08, 0x09, 0x0a, 0x0b,
                                                    0x0f, 0x10, 0x11, 0x12,
                                                    0x0c, 0x13, 0x14):
                break
        op = msg[0][42]
        h = response_setup(op) if (op & 0x1f) in RESPONSES else 0
        data = bytes([h]) + b''.join(
            rec(F_HDR | F_QP | F_PSN | F_ICRC | F_POLL, 0x80, fr) for fr in msg)
        write(out_rx, '%s_msg' % name, data)
        # the same, as multi-segment mbufs
        data = bytes([h]) + b''.join(
            rec(F_HDR | F_QP | F_PSN | F_ICRC | F_SEG | F_POLL, 0x80, fr)
            for fr in msg)
        write(out_rx, '%s_msg_seg' % name, data)
        # the same with the engine prefetching ahead (an empty record with
        # ctl 0x10), as it does for thousands of QPs
        data = bytes([h]) + rec(0x10, 0, b'') + b''.join(
            rec(F_HDR | F_QP | F_PSN | F_ICRC, 0x80, fr) for fr in msg) + \
            rec(0x03, 0, b'')
        write(out_rx, '%s_msg_prefetch' % name, data)
    # WRITEs behind a VLAN tag and in IPv6, to QPN 0x11 (A's first QP when
    # fresh), while the engine prefetches: the receive hints find the BTH
    # past the tag or the IPv6 header (the addresses are the capture's, so
    # the full parse may refuse the frame after the hints have read it)
    wr = next((fr for _, fr in frames if fr[42] in (0x06, 0x0a)), None)
    if wr is not None:
        fr = bytearray(wr)
        fr[47:50] = b'\x00\x00\x11'
        l3 = bytes(fr[14:])
        fr = bytes(fr[:14]) + l3[:-4] + icrc(l3, False)
        for tag, v in (('vlan', vlan_variant(fr)), ('ipv6', ipv6_variant(fr))):
            write(out_rx, 'write_%s_prefetch' % tag, b'\x00' +
                  rec(0x10, 0, b'') + rec(F_POLL, 0x80, v) + rec(0x03, 0, b''))
    # a duplicate flood and a PSN far ahead, from the first SEND ONLY
    send_only = next(fr for _, fr in frames if fr[42] == 0x04)
    write(out_rx, 'dup_flood', b'\x00' + b''.join(
        rec(F_HDR | F_QP | F_PSN | F_ICRC | F_POLL, 0x00, send_only)
        for _ in range(8)))
    write(out_rx, 'psn_ahead', b'\x00' + rec(F_HDR | F_QP | F_ICRC | F_POLL,
                                             0x80, send_only))
    # READ requests to a paced QP (an empty record with ctl 0x04: pace A's
    # QP sel & 3 as fz_pace(sel >> 2)): its responses wait on the pacing
    # wheel; 1 kbit/s, 40 Mbit/s, 1 Mbit/s in bursts of one byte
    read_req = [fr for _, fr in frames if fr[42] == 0x0c]
    if read_req:
        for rate in (0, 3, 8 | 2):
            data = b'\x00' + rec(0x04, rate << 2, b'')
            for mr in range(3):
                data += rec(F_HDR | F_QP | F_PSN | F_KEY | F_ICRC | F_POLL,
                            0x80 | mr << 2, read_req[0])
            write(out_rx, 'read_paced%d' % rate, data)


def make_parse_build(out_parse):
    # "build" mode: raw struct roce_pkt bytes. Its layout is not known here,
    # so these are just starting points of the right size for libFuzzer.
    for i, op in enumerate((0x04, 0x0a, 0x0c, 0x11, 0x13, 0x64)):
        write(out_parse, 'build_%02x' % op,
              b'\x40' + bytes([op]) * 8 + bytes(range(i, i + 240)))


# ---------------------------------------------------------------- post

def ctrl(op, ds, idx=0, qpn=0, sig=0, fm_ce_se=0x08, imm=0):
    return struct.pack('>IIBBBBI', idx << 8 | op, qpn << 8 | ds, sig, 0, 0,
                       fm_ce_se, imm)


def raddr(addr, rkey):
    return struct.pack('>QII', addr, rkey, 0)


def dseg(length, lkey, addr):
    return struct.pack('>IIQ', length, lkey, addr)


def make_post(out):
    # raw ring, plausible (M & 8): op index in byte 3 (see fuzz_post.c)
    for qp in range(4):
        for opi, name in enumerate(('send', 'send_imm', 'write', 'write_imm',
                                    'read', 'cas', 'faa')):
            first = 3 if opi in (5, 6) else 2 if opi in (2, 3, 4) else 1
            w = ctrl(opi, first + 2)
            if first >= 2:
                w += raddr(0x40, 0)
            if first == 3:
                w += struct.pack('>QQ', 1, 2)
            w += dseg(300 + 700 * opi, 0, 0x100) + dseg(64, 0, 0x2000)
            w = w.ljust(320, b'\x00')
            write(out, 'raw_q%d_%s' % (qp, name),
                  bytes([0x08 | qp << 4, 0]) + w)
        # several WQEs, the same slots scribbled over mid-message (mode 3)
        w = (ctrl(2, 4) + raddr(0, 0) + dseg(9000, 0, 0) + dseg(100, 1, 64)).ljust(320, b'\0')
        write(out, 'raw_q%d_rescribble' % qp,
              bytes([0x0b | qp << 4, 3]) + w * 4 + (ctrl(0, 1, sig=1) +
                     struct.pack('>I', 0x80000010) + b'A' * 16).ljust(320, b'\0') * 4)
    # raw, real mlx5 opcodes and garbage segment counts
    for op in (0x0a, 0x0b, 0x08, 0x09, 0x10, 0x11, 0x12, 0x00, 0x01, 0xff):
        for ds in (0, 1, 2, 3, 63):
            w = ctrl(op, ds) + raddr(0, 0x100) + dseg(0xffffffff, 0x100, 0)
            write(out, 'raw_op%02x_ds%d' % (op, ds), bytes([0x00, 0]) + w)
    # inline, with a length past the slot
    w = ctrl(0x0a, 2, sig=1) + struct.pack('>I', 0x80000000 | 0xffff) + b'x' * 12
    write(out, 'raw_inline_long', bytes([0x00, 0]) + w)
    # wild doorbell record
    write(out, 'raw_wild_db', bytes([0x88, 1]) + struct.pack('>I', 0x80000001) +
          ctrl(0, 2) + dseg(100, 0, 0))
    # ibv_post_send: WRs as fuzz_post.c decodes them
    def sge(sel, off, length):
        return struct.pack('>BHH', sel, off, length)
    ops = [(0, 'write'), (1, 'write_imm'), (2, 'send'), (3, 'send_imm'),
           (4, 'read'), (5, 'cas'), (6, 'faa')]
    for op, name in ops:
        wr = bytes([op, 0x02, 2]) + sge(0, 0, 1000) + sge(1, 64, 2000)
        wr += struct.pack('>I', 0x11223344) + struct.pack('>H', 8)
        if op in (5, 6):
            wr += struct.pack('>QQ', 5, 6)
        write(out, 'verbs_%s' % name, bytes([0x01, 0, 0]) + wr)
        # inline variant
        wr = bytes([op, 0x0a, 2]) + sge(0xf0, 0, 100) + b'\0\0\0\0' + sge(0, 0, 50)
        wr += struct.pack('>I', 1) + struct.pack('>H', 0)
        write(out, 'verbs_%s_inline' % name, bytes([0x01, 0, 0]) + wr)
        # the QP paced first (P & 8; P >> 4 as fz_pace): 1 kbit/s,
        # 40 Mbit/s, 1 Mbit/s in bursts of one byte
        for rate in (0, 3, 8 | 2):
            write(out, 'verbs_%s_paced%d' % (name, rate),
                  bytes([0x01, 0x08 | rate << 4, 0]) + wr)
        # the engine prefetching ahead (P & 0x80)
        write(out, 'verbs_%s_prefetch' % name, bytes([0x01, 0x80, 0]) + wr)
    # ibv_wr_*: nops, then per op: op, data, raddr16, flags, [imm], sges
    for op in range(8):
        body = bytes([op, 0x08, 0, 8, 2])
        if op in (1, 3):
            body += b'\0\0\0\1'
        if op == 5:
            body += struct.pack('>QQ', 1, 2)
        if op == 6:
            body += struct.pack('>Q', 3)
        body += sge(0, 0, 512) + sge(1, 8, 64)
        write(out, 'wr_op%d' % op, bytes([0x02, 0, 0]) + body + b'\0')


# fuzz_verbs programs: records as fuzz_verbs.c decodes them (op byte, then
# its arguments). Device A is ctx selector 0, device B 3.
def v_pd(slot, dev):
    return bytes([0, slot, dev])


def v_cq(slot, dev, cqe=64):
    return bytes([2, slot, dev, cqe])


def v_qp(slot, pd, cq, typ=0, nwr=32):
    # f: the type in bits 0-1 (RC, UC, UD); c: 0x80 | cq = one CQ for both
    return bytes([7, slot, typ, pd, 0x80 | cq, nwr, nwr, 2, 2, 1])


def v_qp_ex(slot, pd, cq, ops, typ=0, nwr=32):
    # ibv_create_qp_ex with send_ops_flags ops (ibv_wr_* builders)
    return bytes([7, slot, 0x40 | typ, pd, 0x80 | cq, nwr, nwr, 2, 2, 1, 1]) + \
        struct.pack('>H', ops) + bytes([0, 0])


def v_mr(slot, pd, off, length, access=0x1f):
    return bytes([14, slot, pd << 4]) + struct.pack('>HH', off, length) + \
        bytes([access])


def v_modify(slot, step, peer, gid_sel, g=2):
    # step 0 INIT, 1 RTR, 2 RTS (mask_of / next_of); g=2: MTU 1024,
    # timeout 2, rnr_retry 2; the AV to the other device (gid_sel 0: B,
    # 1: A); rate limit unused
    return bytes([9, slot, step, g, 0, peer, 0x0f, 0x01, gid_sel, 0, 0, 0]) + \
        b'\0' * 4


def v_ud_modify(slot, step):
    # step 3: RESET->INIT with a Q_Key; then RTR and RTS by state only
    f = {0: 3, 1: 4, 2: 5}[step]
    g = {0: 2, 1: 0x80, 2: 0x80}[step]
    body = bytes([9, slot, f, g])
    if g & 0x80:
        body += bytes([2 if step == 1 else 3])     # IBV_QPS_RTR, _RTS
    return body + bytes([0, 0xe0]) + b'\0\0\0\0' + bytes([0x0f, 0x01, 0, 0, 0, 0]) + b'\0' * 4


def v_sge(off, length, mr):
    return struct.pack('>HH', off, length) + bytes([0, mr])


def v_send(slot, op, flags, sges, raddr_mr=1, rkey_sel=1, extra=b''):
    body = bytes([17, slot, 0, op, flags, len(sges)]) + b''.join(sges)
    body += struct.pack('>I', 0x01020304)
    if op in (5, 6):
        body += bytes([raddr_mr]) + b'\0\0' + bytes([rkey_sel]) + \
            struct.pack('>QQ', 7, 9)
    elif op in (7, 9):
        body += bytes([rkey_sel])
    elif op != 8:
        body += bytes([raddr_mr]) + b'\0\0' + bytes([rkey_sel])
    return body + extra


def v_recv(slot, sges):
    return bytes([18, slot, 0, len(sges)]) + b''.join(sges)


def v_poll(n=63):
    return bytes([19, n])


def make_verbs(out):
    pair = (v_pd(0, 0) + v_pd(1, 3) + v_cq(0, 0) + v_cq(1, 3) +
            v_qp(0, 0, 0) + v_qp(1, 1, 1) +
            v_mr(0, 0, 0, 16384) + v_mr(1, 1, 0x4000, 16384))
    conn = b''
    for step in range(3):
        conn += v_modify(0, step, 1, 0) + v_modify(1, step, 0, 1)
    recv = v_recv(1, [v_sge(0x4000, 0x0641, 1)])
    write(out, 'rc_pair', pair + conn)
    ops = [(0, 'write'), (1, 'write_imm'), (2, 'send'), (3, 'send_imm'),
           (4, 'read'), (5, 'cas'), (6, 'faa')]
    for op, name in ops:
        n = 8 if op in (5, 6) else 0x0541
        body = pair + conn + recv + v_send(0, op, 0x02, [v_sge(0, n, 0)]) + v_poll()
        write(out, 'rc_%s' % name, body)
        # the same, then torn down while in flight
        write(out, 'rc_%s_destroyed' % name,
              pair + conn + recv + v_send(0, op, 0x02, [v_sge(0, n, 0)]) +
              bytes([8, 0]) + bytes([14, 1, 0x10, 0, 0, 0, 0, 0]) + v_poll())
    # QPs and MRs in parent domains with thread domains (lock-free posts)
    pdom = (v_pd(0, 0) + v_pd(1, 3) + bytes([0, 2, 0x60, 0]) +
            bytes([0, 3, 0x74, 0]) + v_cq(0, 0) + v_cq(1, 3) +
            v_qp(0, 2, 0) + v_qp(1, 3, 1) +
            v_mr(0, 2, 0, 16384) + v_mr(1, 3, 0x4000, 16384))
    for op, name in ops:
        n = 8 if op in (5, 6) else 0x0541
        write(out, 'pdom_%s' % name, pdom + conn + recv +
              v_send(0, op, 0x02, [v_sge(0, n, 0)]) + v_poll())
    # inline SEND
    write(out, 'rc_send_inline', pair + conn + recv +
          v_send(0, 2, 0x0a, [v_sge(0, 64, 0)]) + v_poll())
    # type-1 window on B's MR (B's PD), bound on B's QP, then A WRITEs
    # through it (the window's rkey: pick_rkey 0x81, slot 0)
    write(out, 'rc_mw', pair + conn + bytes([15, 0, 0x10]) +
          bytes([15, 0, 0x12, 1, 1, 2]) + struct.pack('>HH', 0x4000, 512) +
          bytes([0x06]) + v_poll() +
          v_send(0, 0, 0x02, [v_sge(0, 100, 0)], rkey_sel=0x81) + v_poll())
    # UD pair with an AH to B
    ud = (v_pd(0, 0) + v_pd(1, 3) + v_cq(0, 0) + v_cq(1, 3) +
          v_qp(0, 0, 0, typ=2) + v_qp(1, 1, 1, typ=2) +
          v_mr(0, 0, 0, 16384) + v_mr(1, 1, 0x4000, 16384) +
          bytes([16, 0, 0x00, 0x01, 0x00]))
    for step in range(3):
        ud += v_ud_modify(0, step) + v_ud_modify(1, step)
    write(out, 'ud_send', ud + v_recv(1, [v_sge(0x4000, 0x0241, 1)]) +
          v_send(0, 2, 0x02, [v_sge(0, 100, 0)], extra=bytes([0, 1, 0])) +
          v_poll())
    # the same pair with A's side on a third context (ctx selector 2, op
    # 239 opens it on A), closed with the QP, MR, CQ and PD on it and a
    # WRITE in flight; then B sends to what is gone
    pair_c = (v_pd(0, 2) + v_pd(1, 3) + v_cq(0, 2) + v_cq(1, 3) +
              v_qp(0, 0, 0) + v_qp(1, 1, 1) +
              v_mr(0, 0, 0, 16384) + v_mr(1, 1, 0x4000, 16384))
    write(out, 'ctxc_rc_write_closed', bytes([239, 0]) + pair_c + conn +
          recv + v_send(0, 0, 0x02, [v_sge(0, 0x0541, 0)]) +
          bytes([239, 0]) + v_poll() +
          v_send(1, 0, 0x02, [v_sge(0x4000, 64, 1)], raddr_mr=0) + v_poll())
    # the RC pair made with every RC builder (IBV_QP_EX_WITH_*: 0x3ff),
    # each op posted through ibv_wr_* (0x80 in the QP byte; 0x84 % 6 is
    # slot 0), completed; and a WRITE then aborted (0x40: 0xc0)
    pair_x = (v_pd(0, 0) + v_pd(1, 3) + v_cq(0, 0) + v_cq(1, 3) +
              v_qp_ex(0, 0, 0, 0x3ff) + v_qp_ex(1, 1, 1, 0x3ff) +
              v_mr(0, 0, 0, 16384) + v_mr(1, 1, 0x4000, 16384))
    for op, name in ops:
        n = 8 if op in (5, 6) else 0x0541
        body = v_send(0, op, 0x02, [v_sge(0, n, 0)])
        write(out, 'wr_api_%s' % name, pair_x + conn + recv +
              bytes([body[0], 0x84]) + body[2:] + v_poll())
    body = v_send(0, 0, 0x02, [v_sge(0, 64, 0)])
    write(out, 'wr_api_aborted', pair_x + conn + bytes([body[0], 0xc0]) +
          body[2:] + v_poll())
    # SRQ, channel, resize, notify on their own
    write(out, 'objects', v_pd(0, 0) + bytes([1, 0, 0]) +
          bytes([2, 0, 0x10, 16]) + bytes([4, 0, 200]) + bytes([5, 0, 1]) +
          bytes([6, 0, 0x00, 16, 2, 4]) + bytes([6, 0, 0x01, 8, 2, 4, 3]) +
          bytes([0x8b, 0x00]) + bytes([0x8b, 0x04, 0]) + bytes([0x8b, 0x08, 0]) +
          bytes([0x8b, 0x0c]))   # 0x8b: op 19 with 0x80, a query


DEVARGS = [
    'ip=198.18.0.1',
    'ip=198.18.2.1,mtu=4096,name=dargs_a,lcore=app,idle_us=10,nb_mbuf=2048,'
    'arp_timeout_ms=50,post_drive=8,rx_spin=4,icrc_batch=0,linger_ms=0,'
    'cycles=1,port_mtu=4200',
    'ip=198.18.2.2,mac=02:00:c6:12:02:02,name=dargs_b,vlan=7,prio=3,'
    'zc_min=65536,impair=seed:7/rx_drop:0.01/tx_delay_us:5',
    'port=net_memif0,ip=198.18.0.2,lcore=1,mtu=2048',
    'ip=198.18.0.1,mtu', 'mtu,ip=198.18.0.1', 'ip', 'ip=', '=198.18.0.1',
    'ip=198.18.0.1,ip=198.18.0.2', 'ip=198.18.0.1,,mtu=512',
    'ip=[198.18.0.1,198.18.0.2]', 'ip=198.18.0.1,name=[a,b]',
    'ip=198.18.0.1,vlan=4094,prio=7', 'ip=198.18.0.1,prio=1',
    'ip=198.18.0.1,mac=ff:ff:ff:ff:ff:ff', 'ip=198.18.0.1,mac=0:1:2:3:4:5',
    'ip=198.18.0.1,mtu=0x400', 'ip=198.18.0.1,nb_mbuf=4294967296',
    'ip=198.18.0.1,lcore=127', 'ip=198.18.0.1,port_mtu=576',
    'ip=198.18.0.1,rx_spin=1024,linger_ms=1000',
]

# (max argv, buffer / 8, defaults, extra, the caller's words)
EAL_VECTORS = [
    (64, 255, '', None, []),
    (64, 255, '-l 0-1 --in-memory --no-pci', '--no-huge -m 512', []),
    (64, 255, '  -l\t0\n--no-pci  ', '', ['--in-memory']),
    (8, 4, '-l 0 --in-memory --no-pci --log-level=*:warning', None, []),
    (3, 255, '-l 0', '--no-huge', ['-a', '--in-memory']),
    (2, 0, '-l 0', None, []),
]


def make_args(out):
    for i, d in enumerate(DEVARGS):
        write(out, 'devargs-%02d' % i, b'\x00' + d.encode())
    for i, (mx, blen, dflt, extra, words) in enumerate(EAL_VECTORS):
        ctl = 0x01 | (0x04 if extra is not None else 0) | (0x02 if i % 2 else 0)
        pieces = [dflt, extra or ''] + words
        body = b'\x00'.join(p.encode() for p in pieces)
        write(out, 'eal-%02d' % i, bytes([ctl, mx - 1, blen]) + body)


def console_lines(path):
    with open(path) as f:
        return [l.rstrip('\n') for l in f
                if l.strip() and not l.lstrip().startswith('#')]


def make_console(out):
    root = os.path.join(HERE, '..', '..')
    for path in sorted(glob.glob(os.path.join(root, 'test', 'console', '*.cmd'))):
        name = os.path.splitext(os.path.basename(path))[0]
        write(out, name, '\n'.join(console_lines(path)).encode() + b'\n')
    sections, cur = [], []
    for l in console_lines(os.path.join(root, 'app', 'droce-console', 'demo.cmd')):
        if l.startswith('echo =====') and cur:
            sections.append(cur)
            cur = []
        cur.append(l)
    sections.append(cur)
    # the objects every later section uses come second
    setup = sections[1]
    for i, sec in enumerate(sections):
        body = sec if i < 2 else setup + sec
        write(out, 'demo-%02d' % i, '\n'.join(body).encode() + b'\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--pcap', default=os.path.join(HERE, '..', 'roce',
                                                   'rxe-pcap'))
    ap.add_argument('--fuzz-rx', help='fuzz_rx binary: add droce\'s own traffic')
    ap.add_argument('--only', choices=('parse_rx', 'post', 'verbs', 'args',
                                       'console'),
                    help='remake only these corpora')
    a = ap.parse_args()
    names = {'parse_rx': ('parse', 'rx'), 'post': ('post',),
             'verbs': ('verbs',), 'args': ('args',),
             'console': ('console',)}.get(
                 a.only, ('parse', 'rx', 'post', 'verbs', 'args', 'console'))
    out = {n: os.path.join(HERE, 'corpus_' + n) for n in names}
    for d in out.values():
        clean(d)
    if 'parse' in out:
        make_parse_rx(a.pcap, out['parse'], out['rx'])
        make_parse_build(out['parse'])
    if 'post' in out:
        make_post(out['post'])
    if 'verbs' in out:
        make_verbs(out['verbs'])
    if 'args' in out:
        make_args(out['args'])
    if 'console' in out:
        make_console(out['console'])
    if a.fuzz_rx and 'rx' in out:
        tmp = tempfile.mkdtemp()
        try:
            env = dict(os.environ, FZ_GEN_CORPUS=tmp)
            subprocess.run([a.fuzz_rx], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            for f in sorted(os.listdir(tmp)):
                shutil.copy(os.path.join(tmp, f), out['rx'])
        finally:
            shutil.rmtree(tmp)
    for n, d in out.items():
        files = os.listdir(d)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in files)
        print('corpus_%s: %d files, %d bytes' % (n, len(files), size))
    return 0


if __name__ == '__main__':
    sys.exit(main())
