# SPDX-License-Identifier: BSD-3-Clause
# Helpers for devtools/bench.sh (sourced). Needs: PERF, CEIL, EAL_MEM, LOG,
# WORK set by the caller.

# median of the numbers given (empty when none)
median() {
	printf '%s\n' "$@" | grep -E '^-?[0-9.]+([eE][-+]?[0-9]+)?$' | sort -g |
		awk '{ v[n++] = $1 } END { if (!n) exit;
			if (n % 2) print v[(n - 1) / 2]; else print (v[n / 2 - 1] + v[n / 2]) / 2 }'
}

# bracket <a> <b>: the ceiling beside a droce window, from the raw
# windows right before and right after it: their geometric mean where
# they agree within BRACKET (default 1.3: 30 %), else nothing. The host
# moves the two vCPUs between cache domains every few seconds, which
# changes a two-process ceiling by up to 8x; a ratio against a ceiling
# measured in the other placement says nothing.
bracket() {
	[ -n "${1:-}" ] && [ -n "${2:-}" ] || return 0
	awk -v a="$1" -v b="$2" -v k="${BRACKET:-1.3}" 'BEGIN {
		if (a <= 0 || b <= 0) exit
		r = a > b ? a / b : b / a
		if (r <= k) printf "%.3f", sqrt(a * b) }'
}

# kvget <line> <key>: value of key=... in a DROCE_PERF/CEILING line
kvget() {
	printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# fmt <number> [decimals]: a number for a table ("-" when empty)
fmt() {
	if [ -z "${1:-}" ]; then echo "-"; else LC_ALL=C printf "%.${2:-2}f" "$1"; fi
}

# si <number>: 1234567 -> 1.23M
si() {
	[ -z "${1:-}" ] && { echo "-"; return; }
	awk -v v="$1" 'BEGIN { s = ""; if (v >= 1e9) { v /= 1e9; s = "G" }
		else if (v >= 1e6) { v /= 1e6; s = "M" } else if (v >= 1e3) { v /= 1e3; s = "k" }
		printf "%.2f%s", v, s }'
}

# div <a> <b> [decimals]
div() {
	[ -z "${1:-}" ] || [ -z "${2:-}" ] && { echo ""; return; }
	awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN { if (b == 0) print ""; else printf "%.*f", d, a / b }'
}

mul() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a * b }'
}

# cpu_line: what tells one machine of this lab from another (the host
# hands out different CPUs under the same model name: family 25 model 1
# is a Zen 3, 26 a Zen 5), its clock and the two CPU features droce's
# ICRC kernels choose between
cpu_line() {
	local fam mod mhz l3 f feats=
	fam=$(lscpu | sed -n 's/^CPU family: *//p')
	mod=$(lscpu | sed -n 's/^Model: *//p')
	mhz=$(awk -F': *' '/^cpu MHz/ { printf "%.0f", $2; exit }' /proc/cpuinfo)
	l3=$(lscpu | sed -n 's/^L3 cache: *//p')
	for f in avx512f vpclmulqdq; do
		if grep -qw "$f" /proc/cpuinfo; then feats="$feats $f"; else feats="$feats no-$f"; fi
	done
	echo "family ${fam:-?} model ${mod:-?}, ${mhz:-?} MHz, L3 ${l3:-?},$feats"
}

# eal_mem: the EAL's memory arguments for the runs: huge pages in memory
# (--in-memory) when 1.5 GiB of them are free, else 1.5 GiB without
eal_mem() {
	local free kb
	free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
	kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
	if [ $(( ${free:-0} * ${kb:-0} )) -ge $((1536 * 1024)) ]; then
		echo "--in-memory"
	else
		echo "--no-huge --no-shconf -m 1536"
	fi
}

# eal <cores> <tag> [vdev]: EAL arguments for one process
eal() {
	echo "-l $1 $EAL_MEM --no-pci $LOG --file-prefix bench$$$2${3:+ --vdev=$3}"
}

# The frame that carries a message's data (no FCS), and packets per message.
# frame_of <op> <size> <mtu>
frame_of() {
	local op=$1 size=$2 mtu=$3 p pad
	p=$size
	[ "$p" -gt "$mtu" ] && p=$mtu
	pad=$(( (4 - p % 4) % 4 ))
	case $op in
	write) [ "$size" -le "$mtu" ] && echo $((74 + p + pad)) || echo $((58 + p + pad)) ;;
	send) echo $((58 + p + pad)) ;;
	read) echo $((62 + p + pad)) ;;	# READ response (AETH)
	atomic) echo 86 ;;			# CMP_SWAP/FETCH_ADD request
	esac
}

pkts_of() {
	local size=$1 mtu=$2
	[ "$size" -le 0 ] && { echo 1; return; }
	echo $(( (size + mtu - 1) / mtu ))
}

# lb <args...>: one droce-perf --loopback run (EAL from $LB_CORES); the
# DROCE_PERF line (or nothing on failure; the log stays in $WORK)
# (called in $(...): counters would not survive, so names are unique by
# the subshell's pid; the log's path is the first line)
lb() {
	local out n=${BASHPID}x${RANDOM}
	out=$WORK/lb.$n
	echo "LOGFILE=$out"
	DROCE_EAL_ARGS="$(eal "${LB_CORES:-0-1}" lb$n)" \
		timeout -k 5 "${LB_TIMEOUT:-120}" "$PERF" "$@" --loopback --kv \
		--no_info >"$out" 2>&1
	grep -m1 '^DROCE_PERF ' "$out"
	grep -m1 '^DROCE_CYCLES ' "$out"
	return 0
}

# ceil <cores> <mode> <args...>: one droce-ceiling run, its CEILING line
ceil() {
	local cores=$1 out n=${BASHPID}x${RANDOM}
	shift
	out=$WORK/ceil.$n
	# shellcheck disable=SC2046
	timeout -k 5 120 "$CEIL" $(eal "$cores" c$n) -- "$@" >"$out" 2>&1
	grep '^CEILING mode=[a-z]* [a-z]' "$out" | grep -v ' ready$' | head -n 1
	return 0
}

# icrc_bound <size> <memcpy CEILING line>: appends to KB the carry-less
# multiplier's folding bandwidth over that memcpy's, measured now, for a
# size from 1 KiB (below it, per-frame work and not the fold bounds a
# stack; nothing appended)
icrc_bound() {
	local k
	[ "$1" -ge 1024 ] || return 0
	k=$(ceil 0 clmul -D 0.2)
	echo "$k" >>"$WORK/ceil.lines"
	[ -n "$(kvget "$2" Bps)" ] && [ -n "$(kvget "$k" fold_Bps)" ] &&
		KB+=("$(div "$(kvget "$k" fold_Bps)" "$(kvget "$2" Bps)" 4)")
	return 0
}

# stalls_line: what the host took from each vCPU in one second, both
# spinning at once (droce-ceiling stalls): a line for the report
stalls_line() {
	local a b
	ceil 0 stalls -D 1 >"$WORK/stalls.0" &
	b=$(ceil 1 stalls -D 1)
	wait
	a=$(cat "$WORK/stalls.0")
	for l in "$a" "$b"; do
		[ -n "$l" ] || continue
		printf 'core %s: %s %% lost, %s stalls/s (median %s us, max %s us)\n' \
			"$(kvget "$l" lcore)" "$(fmt "$(mul "$(kvget "$l" lost)" 100)" 1)" \
			"$(kvget "$l" per_s)" "$(kvget "$l" median_us)" "$(kvget "$l" max_us)"
	done | paste -sd ';' - | sed 's/;/; /g'
}

# port_listening, free_port
# shellcheck source=test/common/test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/test_lib.sh"

# pair <args...>: droce-perf server (core 0) and client (core 1), two
# processes joined by a memif pair, app-driven engines (one busy thread per
# core), perftest's TCP exchange on 127.0.0.1. Prints the client's
# DROCE_PERF line; with --cycles, then the client's and the server's
# DROCE_ENGINE lines (keys c_eng_*, s_eng_*: kvget reads across them).
# MEMIF_ARGS: more memif vdev arguments (",bsize=4352"), here and in
# ceil_pair; PAIR_DEVARGS: more droce device arguments. LINK_VDEV_S,
# LINK_VDEV_C and LINK_PORT, when set, replace the memif pair (both here
# and in ceil_pair): the server's and the client's --vdev, and its port
# name (bench's kernel section: net_af_packet or net_af_xdp on a veth
# pair);
# LINK_DEVARGS_S and LINK_DEVARGS_C: more droce device arguments for one
# end only (its own mac=).
pair() {
	local sock port spid dir t0 cyc PAIR_N=${BASHPID}x${RANDOM}
	local cg_end='' cg_run=() s_run=() c_run=() s_mem=$EAL_MEM c_mem=$EAL_MEM
	local s_to=60 c_to=60 listen_to=20
	dir=$WORK/pair.$PAIR_N
	# more devargs for both devices from PAIR_DEVARGS; --cycles: time the
	# engines' stages too (devarg cycles=1)
	cyc=${PAIR_DEVARGS:+,$PAIR_DEVARGS}
	case " $* " in *" --cycles "*) cyc="$cyc,cycles=1" ;; esac
	# PAIR_CG=<server|client>:<function>: that end under callgrind (no
	# huge pages: valgrind does not follow hugetlbfs mappings), counting
	# inside <function> only; prints a DROCE_CG line after the others
	if [ -n "${PAIR_CG:-}" ]; then
		cg_end=${PAIR_CG%%:*}
		cg_run=(valgrind --tool=callgrind --toggle-collect="${PAIR_CG#*:}"
			--callgrind-out-file="$dir/cg")
		if [ "$cg_end" = server ]; then
			s_run=("${cg_run[@]}"); s_mem="--no-huge --no-shconf -m 512"
			s_to=300; listen_to=120
		else
			c_run=("${cg_run[@]}"); c_mem="--no-huge --no-shconf -m 512"
			c_to=300
		fi
	fi
	mkdir -p "$dir"
	sock=/tmp/bench-memif-$$-$PAIR_N.sock
	port=$(free_port) || return 0
	DROCE_EAL_ARGS="$(EAL_MEM=$s_mem eal 0 pA$PAIR_N "${LINK_VDEV_S:-net_memif0,role=server,socket=$sock${MEMIF_ARGS:-}}")" \
	DROCE_DEVICES="port=${LINK_PORT:-net_memif0},ip=198.18.0.1,lcore=app$cyc${LINK_DEVARGS_S:+,$LINK_DEVARGS_S}" \
		timeout -k 5 $s_to "${s_run[@]}" "$PERF" "$@" -p "$port" --kv --no_info \
		>"$dir/server" 2>&1 &
	spid=$!
	t0=$SECONDS
	until port_listening "$port"; do
		if ! kill -0 $spid 2>/dev/null || [ $((SECONDS - t0)) -gt $listen_to ]; then
			kill $spid 2>/dev/null
			wait $spid 2>/dev/null
			return 0
		fi
		sleep 0.05
	done
	DROCE_EAL_ARGS="$(EAL_MEM=$c_mem eal 1 pB$PAIR_N "${LINK_VDEV_C:-net_memif0,role=client,socket=$sock${MEMIF_ARGS:-}}")" \
	DROCE_DEVICES="port=${LINK_PORT:-net_memif0},ip=198.18.0.2,lcore=app$cyc${LINK_DEVARGS_C:+,$LINK_DEVARGS_C}" \
		timeout -k 5 $c_to "${c_run[@]}" "$PERF" "$@" -p "$port" --kv --no_info 127.0.0.1 \
		>"$dir/client" 2>&1
	wait $spid 2>/dev/null
	rm -f "$sock"
	grep -m1 '^DROCE_PERF ' "$dir/client"
	case " $* " in
	*" --cycles "*)
		grep -m1 '^DROCE_ENGINE ' "$dir/client"
		# (a server that posts, send_bw's, reports as a main side)
		grep -m1 '^DROCE_ENGINE ' "$dir/server" |
			sed 's/ c_eng_/ s_eng_/g' ;;
	esac
	if [ -n "$cg_end" ] && [ -s "$dir/cg" ]; then
		callgrind_annotate --auto=no --threshold=100 "$dir/cg" \
			>"$dir/cg.txt" 2>/dev/null
		echo "DROCE_CG end=$cg_end total=$(sed -n \
			's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' "$dir/cg.txt" |
			head -1 | tr -d ,) annotate=$dir/cg.txt"
	fi
	return 0
}

# cg_parts <callgrind_annotate output>: its instructions by part of the
# stack, a "<Ir>\t<part>" line each. A line is counted where its function
# lives: code inlined from a header (droce_int.h, rte_mbuf.h, the
# compiler's intrinsics, verbs.h's ibv_wr_*) goes with the function it was
# inlined into when that function has a line of its own in a .c or .S
# file, and by the header's own place otherwise (a DPDK inline compiled
# out of line is DPDK's).
cg_parts() {
	awk '
		function part(where) {
			if (where ~ /libisal/) return "ISA-L crc32 (ICRC)"
			if (where ~ /\/lib\/roce\//) return "lib/roce: header build/parse, ICRC glue"
			if (where ~ /\/drivers\/rdma\/ethroce\//) return "engine: drivers/rdma/ethroce"
			if (where ~ /\/lib\/rdma\//) return "verbs: lib/rdma (post, poll)"
			if (where ~ /dpdk|librte_/) return "DPDK: mbuf, mempool, ring, ethdev, log"
			if (where ~ /libc\.so/) return "libc: memcpy, memset"
			if (where ~ /ld-linux/) return "ld.so: __tls_get_addr"
			if (where ~ /droce-perf\//) return "droce-perf harness"
			return "other"
		}
		/PROGRAM TOTALS/ { next }
		/^ *[0-9,]+ +\([ 0-9.]+%\) +/ {
			n = $1; gsub(",", "", n)
			fl = $0; sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, "", fl)
			obj = ""
			if (match(fl, / \[[^]]*\]$/)) {
				obj = substr(fl, RSTART); fl = substr(fl, 1, RSTART - 1)
			}
			file = fl; sub(/:[^:]*$/, "", file)
			fn = fl; sub(/^.*:/, "", fn)
			k++; cnt[k] = n; where[k] = file " " obj; func_[k] = fn
			own[k] = (file ~ /\.(c|S)$/ || file == "???")
			if (own[k] && !(fn in home)) home[fn] = part(file " " obj)
		}
		END {
			for (i = 1; i <= k; i++) {
				c = own[i] || !(func_[i] in home) ? part(where[i]) : home[func_[i]]
				sum[c] += cnt[i]
			}
			for (c in sum) printf "%d\t%s\n", sum[c], c
		}' "$1"
}

# ceil_pair <rx-mode> <tx-mode> <args...>: droce-ceiling over a memif pair,
# the receiver (rx/pong) on core 0, the sender (tx/ping) on core 1. Prints
# the line of the side that measures (rx for pps, ping for RTT); an rx line
# gets the sender's cycles a frame as tx_cyc_per_pkt (its spins on a full
# ring included: an upper bound).
ceil_pair() {
	local rxm=$1 txm=$2 sock dir rpid t0 line PAIR_N=${BASHPID}x${RANDOM}
	shift 2
	dir=$WORK/cpair.$PAIR_N
	mkdir -p "$dir"
	sock=/tmp/bench-memif-$$-c$PAIR_N.sock
	# shellcheck disable=SC2046
	timeout -k 5 90 "$CEIL" $(eal 0 cA$PAIR_N "${LINK_VDEV_S:-net_memif0,role=server,socket=$sock${MEMIF_ARGS:-}}") \
		-- "$rxm" "$@" >"$dir/rx" 2>&1 &
	rpid=$!
	t0=$SECONDS
	until grep -q ' ready$' "$dir/rx" 2>/dev/null; do
		if ! kill -0 $rpid 2>/dev/null || [ $((SECONDS - t0)) -gt 30 ]; then
			break
		fi
		sleep 0.05
	done
	# shellcheck disable=SC2046
	timeout -k 5 90 "$CEIL" $(eal 1 cB$PAIR_N "${LINK_VDEV_C:-net_memif0,role=client,socket=$sock${MEMIF_ARGS:-}}") \
		-- "$txm" "$@" >"$dir/tx" 2>&1
	wait $rpid 2>/dev/null
	rm -f "$sock"
	if [ "$rxm" = rx ]; then
		line=$(grep -m1 '^CEILING mode=rx frame' "$dir/rx")
		[ -n "$line" ] && echo "$line tx_cyc_per_pkt=$(kvget \
			"$(grep -m1 '^CEILING mode=tx' "$dir/tx")" cyc_per_pkt)"
	else
		grep -m1 '^CEILING mode=ping' "$dir/tx"
	fi
	return 0
}

# cg_top <callgrind_annotate output> <messages> <total> <n>: its first n
# functions (self cost), a table row each with Ir a message and share
cg_top() {
	awk -v m="$2" -v tot="$3" -v lim="$4" '
		/PROGRAM TOTALS/ { next }
		/^ *[0-9,]+ +\([ 0-9.]+%\) +/ {
			n = $1; gsub(",", "", n)
			fn = $0; sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, "", fn)
			lib = (fn ~ /libisal/)
			sub(/ \[.*\]$/, "", fn); sub(/^.*\//, "", fn)
			if (lib) fn = "isa-l crc32 (ICRC)"
			printf "| %s | %.0f | %.1f%% |\n", fn, n / m, 100 * n / tot
			if (++k >= lim) exit
		}' "$1"
}

# cg_calls <callgrind out file> <function>: how many times it was called
# (summed over its callers; empty when never)
cg_calls() {
	callgrind_annotate --auto=no --tree=calling --inclusive=yes \
		--threshold=100 "$1" 2>/dev/null |
		awk -v f="$2" '$0 ~ ("^ *[0-9,]+ +\\([ 0-9.]+%\\) +> +[^ ]*:" f " \\(") {
			if (match($0, /\(([0-9,]+)x\)/)) {
				c = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", c); n += c
			}
		} END { if (n) print n }'
}
