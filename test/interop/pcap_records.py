# SPDX-License-Identifier: BSD-3-Clause
#
# A classic pcap file, record by record (standard library only): shared by
# pcap_retx.py and pcap_split.py, which import it from this directory.

import struct

# magic as read little-endian -> (record byte order, timestamp divisor)
_MAGICS = {
    0xa1b2c3d4: ('<', 1e6), 0xa1b23c4d: ('<', 1e9),
    0xd4c3b2a1: ('>', 1e6), 0x4d3cb2a1: ('>', 1e9),
}


def open_pcap(f):
    """Read the file header of the open file f: (header bytes, records
    iterator), or None for a file shorter than a header; ValueError if it
    is not a pcap file. The iterator yields (timestamp in seconds, record
    header bytes, frame bytes) and stops at a short record (a capture
    still being written)."""
    hdr = f.read(24)
    if len(hdr) < 24:
        return None
    magic = struct.unpack('<I', hdr[:4])[0]
    if magic not in _MAGICS:
        raise ValueError('not a pcap file')
    end, div = _MAGICS[magic]

    def records():
        while True:
            ph = f.read(16)
            if len(ph) < 16:
                return
            sec, frac, incl, _ = struct.unpack(end + 'IIII', ph)
            data = f.read(incl)
            if len(data) < incl:
                return
            yield sec + frac / div, ph, data

    return hdr, records()
