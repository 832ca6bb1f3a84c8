#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
#
# Cut one capture into per-run captures by time: for each <out> <t0> <t1>,
# the frames with t0 <= timestamp < t1 (seconds since the epoch) go to
# <out>, a pcap with the input's own header. One pass over the input. The
# interop tests use it when something failed, so that each run directory
# holds the frames of its own run (lib.sh: io_split_captures).
#
# usage: pcap_split.py <pcap> <out> <t0> <t1> [<out> <t0> <t1>]...
# exit: 0, 2 when the input cannot be read. Standard library only.

import sys

from pcap_records import open_pcap


def main():
    a = sys.argv[1:]
    if len(a) < 4 or (len(a) - 1) % 3:
        print('usage: pcap_split.py <pcap> <out> <t0> <t1> [...]',
              file=sys.stderr)
        return 2
    cuts = [(a[i], float(a[i + 1]), float(a[i + 2]))
            for i in range(1, len(a), 3)]
    try:
        f = open(a[0], 'rb')
    except OSError as e:
        print('pcap_split: %s' % e, file=sys.stderr)
        return 2
    with f:
        try:
            pcap = open_pcap(f)
        except ValueError:
            pcap = None
        if pcap is None:
            print('pcap_split: %s: not a pcap file' % a[0], file=sys.stderr)
            return 2
        hdr, records = pcap
        outs = []
        for path, t0, t1 in cuts:
            o = open(path, 'wb')
            o.write(hdr)
            outs.append((o, t0, t1))
        for ts, ph, data in records:
            for o, t0, t1 in outs:
                if t0 <= ts < t1:
                    o.write(ph)
                    o.write(data)
        for o, _, _ in outs:
            o.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
