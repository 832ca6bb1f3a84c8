#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Read the stamps of a droce build made with meson -Dstamps=true.

Run two processes (droce-perf's client and server) with
DROCE_STAMPS=<prefix>; each thread leaves <prefix>.<pid>.<tid>
(lib/rdma/droce_stamp.h). Then:

    devtools/stamps.py <prefix>

When both processes posted signalled WQEs (a ping-pong: write_lat,
send_lat), it prints each hop's way, medians and p90 in microseconds:
post -> the port is handed the frame -> the port's transmit returns ->
the other process's receive call that brings it begins -> that call
returns -> the burst is handled -> the other process posts its answer.
(The port's own parts, its transmit and receive calls, beside what the
raw ping-pong's take: droce-ceiling's ping and pong, from a stamps
build, stamp the same two calls; for them it prints, a direction a
line, the transmit call, the crossing to the other's receive call that
brings the frames, that call, and the other's turn from its return to
its next transmit call: the same parts in the same minutes.) Otherwise
(a stream:
write_bw ...) it prints, for the process that posted signalled WQEs (the
requester) and the other one (the responder):

- each signalled WQE's way, medians and p90 in microseconds: post (its
  slot started) -> the port is handed its frame -> the port's transmit
  returns -> the responder's receive call that brings it begins -> that
  call returns -> the burst is handled -> the ACK that covers it leaves
  -> the requester receives it -> a poll returns the completion;
- the requester's waits: from the first poll that found nothing to the
  next completion, as a share of its time (short ones and those over
  7 us apart);
- the responder's absences (from the start of a poll's engine turn that
  found nothing to the start of the next, when over 10 000 TSC cycles:
  a server that only polls is away that long when the host takes its
  vCPU), per second and as a share of the time: a floor, as absences
  that begin in a busy turn are not seen.

The middle 80 % of the run is read (start and end aside). Exit 0 with a
report, 1 when the files do not hold two processes, one of them posting
(or both transmitting: droce-ceiling's), or no hop could be followed.
Plain Python 3, no packages.
"""
import bisect
import glob
import signal
import sys

TX, RX, RX_DONE, POLL, SIGNALED, GAP, TX_CALL, RX_CALL = 1, 2, 3, 4, 5, 6, 7, 8
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


def port_calls(post, tx_t, rx_t, calls_t, rcalls, rcalls_t):
    """(when the port was handed the burst that left at tx_t, when the
    receive call that brought it, returning at rx_t, began), from the
    TX_CALL and RX_CALL stamped just before each; None if not there (or
    the handing is older than the post at post)"""
    i = bisect.bisect_right(calls_t, tx_t) - 1
    j = bisect.bisect_right(rcalls_t, rx_t) - 1
    if i < 0 or j < 0 or calls_t[i] < post:
        return None
    return calls_t[i], rx_t - rcalls[j][2]


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))]


def table(names, rows, us, head=True):
    """each column of rows (TSC cycles), a line: median and p90 in us"""
    if head:
        print(f"{'':28s} {'median us':>10s} {'p90 us':>8s}")
    for k, name in enumerate(names):
        v = sorted(r[k] for r in rows)
        print(f"  {name:26s} {pct(v, 0.5) / us:10.2f} "
              f"{pct(v, 0.9) / us:8.2f}")


def is_data(word):
    return word != NOT_ROCE and (word >> 24) != ACK_OPCODE


def data_bursts(evs, kind):
    """a process's TX or RX bursts that carry data frames, as (tsc, first
    data PSN, last data PSN) (a ping-pong's burst is often the ACK of the
    other's request, then its own); and their times"""
    out = []
    for e in evs:
        if e[1] != kind or not (is_data(e[2]) or is_data(e[3])):
            continue
        a = e[2] if is_data(e[2]) else e[3]
        b = e[3] if is_data(e[3]) else e[2]
        out.append((e[0], a & PSN_MASK, b & PSN_MASK))
    return out, [e[0] for e in out]


def ping_pong(procs, pids):
    """each hop of a ping-pong: A posts, its frame leaves, B receives and
    handles it, B posts its answer"""
    hz = procs[pids[0]][0] or procs[pids[1]][0]
    if not hz:
        print("stamps: no TSC rate", file=sys.stderr)
        return 1
    us = hz / 1e6
    names = ["post -> tx call", "tx call (the port's)", "tx -> other's rx call",
             "rx call (the port's)", "rx -> burst handled",
             "handled -> other posts", "hop"]
    rows = []
    for a, b in ((pids[0], pids[1]), (pids[1], pids[0])):
        ea, eb = procs[a][1], procs[b][1]
        calls = [e[0] for e in ea if e[1] == TX_CALL]
        rcalls = [e for e in eb if e[1] == RX_CALL]
        rcalls_t = [e[0] for e in rcalls]
        t0 = ea[0][0] + (ea[-1][0] - ea[0][0]) // 10
        t1 = ea[-1][0] - (ea[-1][0] - ea[0][0]) // 10
        tx, tx_t = data_bursts(ea, TX)
        rx, rx_t = data_bursts(eb, RX)
        done = [e for e in eb if e[1] == RX_DONE]
        done_t = [e[0] for e in done]
        posts = [e for e in eb if e[1] == SIGNALED]
        posts_t = [e[0] for e in posts]
        for s in (e for e in ea if e[1] == SIGNALED and t0 <= e[0] <= t1):
            psn = s[2] & PSN_MASK
            t = first_at(tx, tx_t, s[0], lambda e: psn_in(psn, e[1], e[2]), 8)
            if not t:
                continue
            r = first_at(rx, rx_t, t[0] - int(2 * us),
                         lambda e: psn_in(psn, e[1], e[2]), 8)
            if not r:
                continue
            pc = port_calls(s[0], t[0], r[0], calls, rcalls, rcalls_t)
            if not pc:
                continue
            call, rcall = pc
            d = first_at(done, done_t, r[0], lambda e: True, 1)
            n = first_at(posts, posts_t, r[0], lambda e: True, 1)
            if not d or not n or n[0] < d[0]:
                continue
            rows.append((call - s[0], t[0] - call, rcall - t[0], r[0] - rcall,
                         d[0] - r[0], n[0] - d[0], n[0] - s[0]))
    print(f"ping-pong between pids {pids[0]} and {pids[1]}; TSC "
          f"{hz / 1e9:.3f} GHz; hops followed: {len(rows)}")
    if not rows:
        return 1
    table(names, rows, us)
    return 0


def raw_ping_pong(procs, pids):
    """droce-ceiling's ping and pong: each direction's hops, matched by
    time (a ping-pong alternates): A's transmit call, the crossing to B's
    receive call that brings the frames, that call, B's turn to its next
    transmit call; the middle 80 % of A's bursts"""
    hz = procs[pids[0]][0] or procs[pids[1]][0]
    if not hz:
        print("stamps: no TSC rate", file=sys.stderr)
        return 1
    us = hz / 1e6
    names = ["tx call (the port's)", "tx -> other's rx call",
             "rx call (the port's)", "rx -> its next tx call", "hop"]
    print(f"raw ping-pong (droce-ceiling) between pids {pids[0]} and "
          f"{pids[1]}; TSC {hz / 1e9:.3f} GHz")
    print(f"{'':28s} {'median us':>10s} {'p90 us':>8s}")
    for a, b in ((pids[0], pids[1]), (pids[1], pids[0])):
        ea, eb = procs[a][1], procs[b][1]
        calls_t = [e[0] for e in ea if e[1] == TX_CALL]
        rcalls = [e for e in eb if e[1] == RX_CALL]
        rcalls_t = [e[0] for e in rcalls]
        btx_t = [e[0] for e in eb if e[1] == TX_CALL]
        # (the middle 80 % of the bursts, not of the time: a few hops
        # tens of microseconds long would leave the count to chance)
        txs = [e[0] for e in ea if e[1] == TX and e[4] > 0]
        rows = []
        for t in txs[len(txs) // 10:len(txs) - len(txs) // 10]:
            i = bisect.bisect_right(calls_t, t) - 1
            j = bisect.bisect_right(rcalls_t, t)
            if i < 0 or j >= len(rcalls):
                continue
            r = rcalls[j]
            k = bisect.bisect_right(btx_t, r[0])
            if k >= len(btx_t):
                continue
            rows.append((t - calls_t[i], r[0] - r[2] - t, r[2],
                         btx_t[k] - r[0], btx_t[k] - calls_t[i]))
        print(f"pid {a} -> pid {b}: hops followed: {len(rows)}")
        if not rows:
            return 1
        table(names, rows, us, head=False)
    return 0


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    procs = load(sys.argv[1])
    req = [p for p, (_, e) in procs.items() if any(x[1] == SIGNALED for x in e)]
    rsp = [p for p in procs if p not in req]
    if len(req) == 2 and not rsp:
        return ping_pong(procs, req)
    if not req and len(rsp) == 2 and all(
            any(x[1] == TX for x in procs[p][1]) for p in rsp):
        return raw_ping_pong(procs, sorted(rsp))
    if len(req) != 1 or len(rsp) != 1:
        print(f"stamps: want two processes, one or both posting; found "
              f"{len(req)} posting and {len(rsp)} not", file=sys.stderr)
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
    names = ["post -> tx call", "tx call (the port's)",
             "tx -> responder's rx call", "rx call (the port's)",
             "rx -> burst handled", "handled -> ACK tx",
             "ACK tx -> requester rx", "rx -> completion polled", "total"]
    ccall_t = [e[0] for e in cli if e[1] == TX_CALL]
    srcall = [e for e in srv if e[1] == RX_CALL]
    srcall_t = [e[0] for e in srcall]
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
        pc = port_calls(s[0], tx[0], rx[0], ccall_t, srcall, srcall_t)
        if not pc:
            continue
        call, rcall = pc
        rows.append((call - s[0], tx[0] - call, rcall - tx[0], rx[0] - rcall,
                     done[0] - rx[0], ack[0] - done[0], arx[0] - ack[0],
                     cqe[0] - arx[0], cqe[0] - s[0]))
    print(f"requester pid {req[0]}, responder pid {rsp[0]}; TSC "
          f"{hz / 1e9:.3f} GHz; {span / hz:.3f} s read (the middle 80 %)")
    print(f"signalled WQEs: {len(sig)}, followed to their completion: "
          f"{len(rows)}")
    if rows:
        table(names, rows, us)
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
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # (| head)
    sys.exit(main())
