#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Read the stamps of a droce build made with meson -Dstamps=true.

Run two processes (a requester and its responder: droce-perf's client and
server) with DROCE_STAMPS=<prefix>; each thread leaves <prefix>.<pid>.<tid>
(lib/rdma/droce_stamp.h). Then:

    devtools/stamps.py <prefix>

prints, for the process that posted signalled WQEs (the requester) and the
other one (the responder):

- each signalled WQE's way, medians and p90 in microseconds: post (its
  slot started) -> its frame leaves -> the responder receives it -> that
  burst is handled -> the ACK that covers it leaves -> the requester
  receives it -> a poll returns the completion;
- the requester's waits: from the first poll that found nothing to the
  next completion, as a share of its time (short ones and those over
  7 us apart);
- the responder's absences (from the start of a poll's engine turn that
  found nothing to the start of the next, when over 10 000 TSC cycles:
  a server that only polls is away that long when the host takes its
  vCPU), per second and as a share of the time: a floor, as absences
  that begin in a busy turn are not seen.

The middle 80 % of the run is read (start and end aside). Exit 0 with a
report, 1 when the files do not hold a requester and a responder.
Plain Python 3, no packages.
"""
import bisect
import glob
import os
import sys

TX, RX, RX_DONE, POLL, SIGNALED, GAP = 1, 2, 3, 4, 5, 6
ACK_OPCODE = 0x11        # RC ACKNOWLEDGE
PSN_MASK = 0xffffff
NOT_ROCE = 0xffffffff


def load(prefix):
    """{pid: (tsc_hz, [(tsc, ev, a, b, c), ...] sorted)}"""
    procs = {}
    for path in glob.glob(glob.escape(prefix) + ".*.*"):
        parts = path[len(prefix) + 1:].split(".")
        if len(parts) != 2 or not all(x.isdigit() for x in parts):
            continue
        hz, evs = 0, []
        with open(path) as f:
            for line in f:
                if line.startswith("# tsc_hz "):
                    hz = int(line.split()[2])
                    continue
                x = line.split()
                if len(x) == 5:
                    evs.append(tuple(int(v) for v in x))
        h, e = procs.get(int(parts[0]), (0, []))
        procs[int(parts[0])] = (hz or h, e + evs)
    return {pid: (hz, sorted(e)) for pid, (hz, e) in procs.items()}


def psn_in(psn, first, last):
    """psn within [first, last] in 24-bit PSN order"""
    return (psn - first) & PSN_MASK <= (last - first) & PSN_MASK


def psn_ge(a, b):
    """a at or after b in 24-bit PSN order"""
    return (a - b) & PSN_MASK < 0x800000


def first_at(evs, times, t, pred, limit=4000):
    """the first event at or after t (among limit) that pred accepts"""
    i = bisect.bisect_left(times, t)
    for e in evs[i:i + limit]:
        if pred(e):
            return e
    return None


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    procs = load(sys.argv[1])
    req = [p for p, (_, e) in procs.items() if any(x[1] == SIGNALED for x in e)]
    rsp = [p for p in procs if p not in req]
    if len(req) != 1 or len(rsp) != 1:
        print(f"stamps: want one requester and one responder, found "
              f"{len(req)} and {len(rsp)} processes", file=sys.stderr)
        return 1
    hz, cli = procs[req[0]]
    _, srv = procs[rsp[0]]
    if not hz or not cli or not srv:
        print("stamps: no TSC rate or no events", file=sys.stderr)
        return 1
    us = hz / 1e6
    t0 = cli[0][0] + (cli[-1][0] - cli[0][0]) // 10
    t1 = cli[-1][0] - (cli[-1][0] - cli[0][0]) // 10
    span = t1 - t0

    def kind(evs, k, data=None):
        out = [e for e in evs if e[1] == k]
        if data is not None:    # frames of data (True) or ACKs (False)
            out = [e for e in out if e[2] != NOT_ROCE and
                   ((e[2] >> 24) != ACK_OPCODE) == data]
        return out, [e[0] for e in out]

    ctx, ctx_t = kind(cli, TX, True)
    crx, crx_t = kind(cli, RX, False)
    cpoll, cpoll_t = kind(cli, POLL)
    srx, srx_t = kind(srv, RX, True)
    sdone, sdone_t = kind(srv, RX_DONE)
    stx, stx_t = kind(srv, TX, False)
    sig = [e for e in cli if e[1] == SIGNALED and t0 <= e[0] <= t1]
    names = ["post -> tx", "tx -> responder rx", "rx -> burst handled",
             "handled -> ACK tx", "ACK tx -> requester rx",
             "rx -> completion polled", "total"]
    rows = []
    for s in sig:
        psn = s[2] & PSN_MASK
        tx = first_at(ctx, ctx_t, s[0],
                      lambda e: psn_in(psn, e[2] & PSN_MASK, e[3] & PSN_MASK))
        if not tx:
            continue
        # the responder's clock is the same TSC, a few cycles apart at most
        rx = first_at(srx, srx_t, tx[0] - int(2 * us),
                      lambda e: psn_in(psn, e[2] & PSN_MASK, e[3] & PSN_MASK))
        if not rx:
            continue
        done = first_at(sdone, sdone_t, rx[0], lambda e: True)
        ack = first_at(stx, stx_t, rx[0],
                       lambda e: psn_ge(e[3] & PSN_MASK, psn))
        if not done or not ack:
            continue
        arx = first_at(crx, crx_t, ack[0] - int(2 * us),
                       lambda e: psn_ge(e[3] & PSN_MASK, psn))
        if not arx:
            continue
        cqe = first_at(cpoll, cpoll_t, arx[0], lambda e: e[4] > 0)
        if not cqe:
            continue
        rows.append((tx[0] - s[0], rx[0] - tx[0], done[0] - rx[0],
                     ack[0] - done[0], arx[0] - ack[0], cqe[0] - arx[0],
                     cqe[0] - s[0]))
    print(f"requester pid {req[0]}, responder pid {rsp[0]}; TSC "
          f"{hz / 1e9:.3f} GHz; {span / hz:.3f} s read (the middle 80 %)")
    print(f"signalled WQEs: {len(sig)}, followed to their completion: "
          f"{len(rows)}")
    if rows:
        print(f"{'':26s} {'median us':>10s} {'p90 us':>8s}")
        for k, name in enumerate(names):
            v = sorted(r[k] for r in rows)
            print(f"  {name:24s} {pct(v, 0.5) / us:10.2f} "
                  f"{pct(v, 0.9) / us:8.2f}")
    waits, start = [], None
    for e in cpoll:
        if not t0 <= e[0] <= t1:
            continue
        if e[4] == 0:
            start = e[0]
        elif start is not None:
            waits.append(e[0] - start)
            start = None
    short = sum(w for w in waits if w < 7 * us)
    long_ = sum(w for w in waits if w >= 7 * us)
    print(f"requester waits: {len(waits)}, {100 * (short + long_) / span:.1f} "
          f"% of its time ({100 * short / span:.1f} % in waits under 7 us, "
          f"{100 * long_ / span:.1f} % in {sum(1 for w in waits if w >= 7 * us)}"
          f" longer)")
    g = [e for e in srv if e[1] == GAP and t0 <= e[0] <= t1]
    lost = sum(e[2] for e in g)
    med = sorted(e[2] for e in g)[len(g) // 2] / us if g else 0
    print(f"responder away after an idle turn (over 10 000 cycles): "
          f"{len(g) / (span / hz):.0f}/s, {100 * lost / span:.1f} % of the "
          f"time (median {med:.1f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
