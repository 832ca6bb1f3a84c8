#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# run.sh [frame bytes] [frames] [memif args]: build memif_chain.c and run
# it as two processes over a memif pair (rx on core 0, tx on core 1),
# e.g. `run.sh 4154 2000000` (chained over the default 2048-byte buffers)
# against `run.sh 4154 2000000 ,bsize=4352` (one buffer a frame). Prints
# the two MEMIF_CHAIN lines. No hugepages needed.
set -u
frame=${1:-4154} n=${2:-2000000} extra=${3:-} rpid=
dir=$(mktemp -d /tmp/memif-chain.XXXX)
trap '[ -n "$rpid" ] && kill $rpid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
# shellcheck disable=SC2046
gcc -O2 -o "$dir/memif_chain" "$(dirname "$0")/memif_chain.c" \
	$(pkg-config --cflags --libs libdpdk) || exit 1
eal="--no-huge -m 256 --no-pci --log-level=*:warning"
sock=$dir/memif.sock
# shellcheck disable=SC2086
timeout -k 2 60 "$dir/memif_chain" -l 0 $eal --file-prefix mcr$$ \
	--vdev="net_memif0,role=server,socket=$sock$extra" -- rx "$frame" "$n" \
	>"$dir/rx" 2>&1 &
rpid=$!
sleep 1
# shellcheck disable=SC2086
timeout -k 2 60 "$dir/memif_chain" -l 1 $eal --file-prefix mct$$ \
	--vdev="net_memif0,role=client,socket=$sock$extra" -- tx "$frame" "$n" \
	>"$dir/tx" 2>&1
wait $rpid
grep -h '^MEMIF_CHAIN' "$dir/tx" "$dir/rx" || tail -n 3 "$dir/tx" "$dir/rx"
