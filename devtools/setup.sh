#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Idempotent, non-interactive set-up of a Debian 12 machine for droce, then a
# build: packages, hugetlbfs + 2 MiB hugepages, meson setup, ninja.
# Run as root, from anywhere. Safe to run again; does only what is missing.
#
#   bash devtools/setup.sh [--no-build]
#
# Environment (all optional):
#   DROCE_BUILD_DIR     build directory (default: build)
#   DROCE_MESON_ARGS    extra arguments for the first `meson setup`
#   DROCE_RECONFIGURE=1 run `meson setup --reconfigure` on a configured dir
#   DROCE_HUGEPAGES     2 MiB pages to reserve (default 1024 = 2 GiB)
#   DROCE_HUGEPAGES_MIN fewer free pages than this: use --no-huge (default 128)
#   DROCE_NO_HUGE=1     do not touch hugepages; the EAL runs with --no-huge
#   DROCE_NO_HUGE_MEM   MiB of ordinary memory for --no-huge (default 1024)
#
# Result for the callers (run-demo.sh, run-tests.sh): $DROCE_BUILD_DIR/eal-extra-args,
# one line of EAL arguments to add: empty, or "--no-huge -m N" when hugepages
# cannot be had. Exit status: 0 ok, 3 the build failed, other: set-up failed.

set -euo pipefail

# Debian 12 packages needed to build, test and demo droce.
PACKAGES="build-essential meson ninja-build pkg-config clang libdpdk-dev dpdk libibverbs-dev ibverbs-providers libnuma-dev libisal-dev libpcap-dev python3 python3-scapy iproute2 tmux tshark"

DROCE_TAG=setup
# shellcheck source=devtools/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$DROCE_ROOT"

do_build=1
for arg in "$@"; do
	case $arg in
	--no-build) do_build=0 ;;
	-h|--help) sed -n '3,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) droce_die "unknown argument: $arg" ;;
	esac
done

HUGE_TARGET=${DROCE_HUGEPAGES:-1024}
HUGE_MIN=${DROCE_HUGEPAGES_MIN:-128}
HUGE_MNT=/dev/hugepages
HUGE_SYS=/sys/kernel/mm/hugepages/hugepages-2048kB
NO_HUGE_ARGS="--no-huge -m ${DROCE_NO_HUGE_MEM:-1024}"
export DEBIAN_FRONTEND=noninteractive

is_root() { [[ $(id -u) == 0 ]]; }

# --- 1. packages -------------------------------------------------------------
step_packages() {
	local p missing=() avail=() unavail=()
	for p in $PACKAGES; do
		if [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) != installed ]]; then
			missing+=("$p")
		fi
	done
	if ((${#missing[@]} == 0)); then
		droce_log "packages: all $(wc -w <<<"$PACKAGES") present"
		return
	fi
	is_root || droce_die "packages missing (${missing[*]}); run as root"
	droce_log "packages: missing ${missing[*]}; apt-get update"
	apt-get -q update </dev/null
	for p in "${missing[@]}"; do
		if [[ $(apt-cache policy "$p" 2>/dev/null) == *"Candidate: "[!\(]* ]]; then
			avail+=("$p")
		else
			unavail+=("$p")
		fi
	done
	if ((${#unavail[@]})); then
		droce_log "packages: WARNING: not available from apt here, skipped: ${unavail[*]}"
	fi
	if ((${#avail[@]})); then
		# tshark asks whether non-root users may capture: answer no.
		echo "wireshark-common wireshark-common/install-setuid boolean false" |
			debconf-set-selections 2>/dev/null || true
		droce_log "packages: apt-get install ${avail[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends \
			-o DPkg::Lock::Timeout=300 install "${avail[@]}" </dev/null
	fi
}

# --- 2. hugepages ------------------------------------------------------------
huge_warning() {
	cat <<EOF

[setup] ************************************************************
[setup] WARNING: no usable 2 MiB hugepages: $1
[setup] The DPDK EAL will run WITHOUT hugepages ($NO_HUGE_ARGS):
[setup] slower, and only good for functional tests. run-demo.sh and
[setup] run-tests.sh export DROCE_NO_HUGE=1 and
[setup] DROCE_EAL_EXTRA_ARGS="$NO_HUGE_ARGS" (from $DROCE_EAL_EXTRA_FILE).
[setup] ************************************************************

EOF
}

# Sets EAL_EXTRA: the EAL arguments to add (empty: hugepages are fine).
EAL_EXTRA=""
step_hugepages() {
	local did=() total free

	if [[ ${DROCE_NO_HUGE:-0} == 1 ]]; then
		droce_log "hugepages: DROCE_NO_HUGE=1 set, not using hugepages"
		EAL_EXTRA=$NO_HUGE_ARGS
		return
	fi
	if [[ ! -d $HUGE_SYS ]]; then
		huge_warning "kernel has no 2 MiB hugepage support ($HUGE_SYS)"
		EAL_EXTRA=$NO_HUGE_ARGS
		return
	fi

	if awk -v m="$HUGE_MNT" '$2 == m && $3 == "hugetlbfs" { f = 1 } END { exit !f }' /proc/mounts; then
		did+=("hugetlbfs already mounted on $HUGE_MNT")
	elif is_root && mkdir -p "$HUGE_MNT" &&
		mount -t hugetlbfs -o pagesize=2M nodev "$HUGE_MNT" 2>/dev/null; then
		did+=("mounted hugetlbfs on $HUGE_MNT")
	else
		huge_warning "cannot mount hugetlbfs on $HUGE_MNT"
		EAL_EXTRA=$NO_HUGE_ARGS
		return
	fi

	total=$(<"$HUGE_SYS/nr_hugepages")
	if ((total >= HUGE_TARGET)); then
		did+=("$total x 2 MiB hugepages already reserved")
	else
		if is_root; then
			{ echo "$HUGE_TARGET" >"$HUGE_SYS/nr_hugepages"; } 2>/dev/null || true
		fi
		total=$(<"$HUGE_SYS/nr_hugepages")
		did+=("reserved $total x 2 MiB hugepages")
		((total >= HUGE_TARGET)) || did[-1]+=" (asked for $HUGE_TARGET)"
	fi
	free=$(<"$HUGE_SYS/free_hugepages")
	local msg
	msg=$(printf '%s, ' "${did[@]}")
	droce_log "hugepages: ${msg%, } ($free free)"
	if ((free < HUGE_MIN)); then
		huge_warning "$free free x 2 MiB pages, need at least $HUGE_MIN"
		EAL_EXTRA=$NO_HUGE_ARGS
		return
	fi
}

# --- 3. configure and build -------------------------------------------------
step_build() {
	local b=$DROCE_BUILD_DIR
	if [[ -f $b/meson-private/coredata.dat ]]; then
		if [[ ${DROCE_RECONFIGURE:-0} == 1 ]]; then
			droce_log "configure: meson setup --reconfigure $b"
			meson setup --reconfigure "$b" </dev/null || return 3
		else
			droce_log "configure: $b already configured (ninja re-runs meson if needed)"
		fi
	else
		droce_log "configure: meson setup $b${DROCE_MESON_ARGS:+ $DROCE_MESON_ARGS}"
		# shellcheck disable=SC2086 # DROCE_MESON_ARGS is a list of words
		meson setup "$b" ${DROCE_MESON_ARGS:-} </dev/null || return 3
	fi
	droce_log "build: ninja -C $b"
	ninja -C "$b" </dev/null || return 3
	droce_log "build: done"
}

step_packages
step_hugepages
mkdir -p "$DROCE_BUILD_DIR"
printf '%s\n' "$EAL_EXTRA" >"$DROCE_EAL_EXTRA_FILE"
if [[ -n $EAL_EXTRA ]]; then
	droce_log "EAL: extra arguments \"$EAL_EXTRA\" written to $DROCE_EAL_EXTRA_FILE (DROCE_NO_HUGE=1)"
fi
if ((do_build)); then
	step_build || { rc=$?; droce_log "build: FAILED"; exit "$rc"; }
fi
