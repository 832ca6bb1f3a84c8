#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Build the interop peer: a Debian kernel and a small initramfs holding
# Linux Soft-RoCE (rdma_rxe) and rdma-core's userspace, made from Debian
# packages only (apt-get download + dpkg-deb -x, no chroot, no debootstrap).
#
# usage: build-guest.sh [-q] [-f]
#   -q  print only the guest directory on stdout (progress goes to stderr)
#   -f  rebuild even when the cache holds a guest for these inputs
#
# The last line on stdout is the directory holding
#   vmlinuz          the kernel (linux-image-amd64's current image)
#   initrd.img       the initramfs (gzip'd newc cpio)
#   kernel-release   e.g. 6.1.0-56-amd64
#   packages         package=version list the guest was made from
# Exit: 0 built or found in the cache; 1 failure; 77 cannot be built here
# (then "SKIPPED: <reason>" on stdout).
#
# Environment:
#   DROCE_INTEROP_CACHE   cache directory (default /var/cache/droce-interop)
#   DROCE_INTEROP_KERNEL  kernel image package (default: what
#                         linux-image-amd64 depends on)
#
# The guest is cached under $DROCE_INTEROP_CACHE/guest-<key>, where <key>
# hashes this script, the files under guest/, the module list and the
# SHA256 of every .deb that goes in (so a new package version in the apt
# lists, or any change here, makes a new guest; nothing else does). The
# .debs are kept in $DROCE_INTEROP_CACHE/debs. Concurrent builds are
# serialised with flock.

set -u
set -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${DROCE_INTEROP_CACHE:-/var/cache/droce-interop}
QUIET=0
FORCE=0
while getopts qf o; do
	case $o in
	q) QUIET=1 ;;
	f) FORCE=1 ;;
	*) echo "usage: $0 [-q] [-f]" >&2; exit 1 ;;
	esac
done

say() { echo "build-guest: $*" >&2; }
die() { echo "build-guest: error: $*" >&2; exit 1; }
skip() { echo "SKIPPED: $*"; exit 77; }

# What goes into the guest. Userspace: these packages plus every library
# package they depend on (recursively, lib* and zlib1g only: the rest of a
# dependency tree is daemons, debconf, adduser... which a guest without
# init system does not need). Missing shared objects are caught below by
# walking the ELF NEEDED entries.
USER_PKGS="busybox-static rdma-core libibverbs1 ibverbs-providers ibverbs-utils
	   librdmacm1 rdmacm-utils perftest iproute2"
# Kernel modules, loaded in this order (with their modules.dep closure);
# a trailing '?' marks one that may fail to load (e.g. CPU features).
MODULES="virtio_pci virtio_net qemu_fw_cfg crc32_generic crc32-pclmul?
	 ib_core ib_uverbs rdma_rxe ib_umad rdma_ucm sch_netem?"

[ "$(id -u)" -eq 0 ] || skip "build-guest.sh must run as root (mknod, apt-get)"
for t in apt-get apt-cache dpkg-deb objdump sha256sum flock gzip ldconfig; do
	command -v "$t" >/dev/null 2>&1 || skip "host tool $t is missing"
done

mkdir -p "$CACHE/debs" || die "cannot create $CACHE"
exec 9>"$CACHE/lock"
flock -w 1200 9 || die "timed out waiting for $CACHE/lock"

# ------------------------------------------------------------ resolve

candidate() { # <pkg>: candidate version or nothing
	apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}' |
		grep -v '(none)'
}

# what to fetch: $TMPD/uris, as apt-get download --print-uris says
resolve() {
	local p dep queue next n_uris
	if [ -z "$(candidate linux-image-amd64)" ]; then
		say "apt lists lack linux-image-amd64: apt-get update"
		apt-get update -q >&2 || skip "apt-get update failed"
		[ -n "$(candidate linux-image-amd64)" ] ||
			skip "no linux-image-amd64 in the apt sources"
	fi

	KPKG=${DROCE_INTEROP_KERNEL:-}
	if [ -z "$KPKG" ]; then
		KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null |
		       awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
		[ -n "$KPKG" ] || die "cannot tell which kernel linux-image-amd64 means"
	fi

	# recursive library dependencies of $USER_PKGS
	declare -A SEEN=()
	queue=()
	for p in $USER_PKGS; do SEEN[$p]=1; queue+=("$p"); done
	while [ ${#queue[@]} -gt 0 ]; do
		next=()
		while read -r dep; do
			[ -n "${SEEN[$dep]:-}" ] && continue
			SEEN[$dep]=1
			next+=("$dep")
		done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts \
				--no-breaks --no-replaces --no-enhances "${queue[@]}" 2>/dev/null |
			 sed -nE 's/^ +\|?(Pre)?Depends: ([^<][^ ]*)$/\2/p' | sed 's/:any$//' |
			 grep -E '^(lib|zlib1g$)' | sort -u)
		queue=("${next[@]}")
	done
	PKGS=$(printf '%s\n' "${!SEEN[@]}" | sort)

	# exact files and hashes of what apt would fetch now
	# shellcheck disable=SC2086
	(cd "$TMPD" && apt-get download --print-uris $PKGS "$KPKG") >"$TMPD/uris" 2>"$TMPD/err" ||
		{ cat "$TMPD/err" >&2; die "apt-get download --print-uris failed"; }
	n_uris=$(wc -l <"$TMPD/uris")
	[ "$n_uris" -eq $(($(echo "$PKGS" | wc -l) + 1)) ] ||
		die "apt resolved $n_uris files for $(echo "$PKGS" | wc -l) packages + the kernel"
	echo "# kernel $KPKG" >>"$TMPD/uris"
}

# Resolving through apt-cache takes several seconds here, so the result is
# remembered for as long as the apt lists and these inputs stay the same.
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/droce-guest-uris.XXXXXX") || die mktemp
trap 'rm -rf "$TMPD"' EXIT
RSTAMP=$( {
	cat "$0"
	find "$HERE/guest" -type f | sort | xargs cat
	echo "${DROCE_INTEROP_KERNEL:-}"
	ls -l --time-style=full-iso /var/lib/apt/lists/ 2>/dev/null
} | sha256sum | cut -c1-16)
RFILE=$CACHE/resolved-$RSTAMP
if [ $FORCE -eq 0 ] && [ -s "$RFILE" ]; then
	cp "$RFILE" "$TMPD/uris"
	KPKG=$(sed -n 's/^# kernel //p' "$TMPD/uris")
else
	resolve
	rm -f "$CACHE"/resolved-*
	cp "$TMPD/uris" "$RFILE"
fi
sed -i '/^#/d' "$TMPD/uris"
KREL=${KPKG#linux-image-}
PKGS=$(awk '{print $2}' "$TMPD/uris" | cut -d_ -f1 | grep -vx "$KPKG" | sort)
n_pkgs=$(echo "$PKGS" | wc -l)

KEY=$( {
	cat "$0"
	find "$HERE/guest" -type f | sort | xargs cat
	echo "$MODULES"
	awk '{print $2, $4}' "$TMPD/uris" | sort
} | sha256sum | cut -c1-16)
OUT=$CACHE/guest-$KEY

emit() {
	if [ $QUIET -eq 0 ]; then
		say "guest: $OUT (kernel $(cat "$OUT/kernel-release"))"
	fi
	echo "$OUT"
	exit 0
}
if [ $FORCE -eq 0 ] && [ -f "$OUT/ok" ]; then
	emit
fi

# ------------------------------------------------------------ download

say "building guest $KEY ($KPKG + $n_pkgs packages)"
while read -r uri file size hash; do
	f=$CACHE/debs/$file
	want=${hash#SHA256:}
	if [ -f "$f" ] && [ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$want" ]; then
		continue
	fi
	uri=${uri#\'}; uri=${uri%\'}
	say "download $file ($size bytes)"
	# apt-get download by name=version fetches exactly this file
	pkg=${file%%_*}
	ver=$(echo "$file" | cut -d_ -f2 | sed 's/%3a/:/g')
	(cd "$CACHE/debs" && apt-get -q -o APT::Sandbox::User=root download \
		"$pkg=$ver") >&2 || die "apt-get download $pkg=$ver failed"
	[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$want" ] ||
		die "$file: SHA256 mismatch"
done <"$TMPD/uris"

# ------------------------------------------------------------ unpack

W=$(mktemp -d "$CACHE/build.XXXXXX") || die mktemp
trap 'rm -rf "$TMPD" "$W"' EXIT
ROOT=$W/root
mkdir -p "$ROOT"
while read -r _ file _ _; do
	case $file in
	"$KPKG"_*) continue ;;
	esac
	dpkg-deb -x "$CACHE/debs/$file" "$ROOT" || die "dpkg-deb -x $file"
done <"$TMPD/uris"
BB=$ROOT/bin/busybox
[ -x "$BB" ] || die "busybox-static did not unpack to /bin/busybox"

# kernel: the image and the modules we need, with their dependencies
kfile=$(awk -v p="$KPKG" 'index($2, p "_") == 1 {print $2}' "$TMPD/uris")
say "unpack $kfile"
mkdir -p "$W/k"
dpkg-deb -x "$CACHE/debs/$kfile" "$W/k" || die "dpkg-deb -x $kfile"
[ -f "$W/k/boot/vmlinuz-$KREL" ] || die "no /boot/vmlinuz-$KREL in $kfile"
KM=$W/k/lib/modules/$KREL
"$BB" depmod -b "$W/k" "$KREL" || die "depmod of the kernel's modules"

declare -A MPATH=()	# module name (with _) -> path under $KM
while IFS=: read -r path _; do
	m=${path##*/}; m=${m%.ko*}; m=${m//-/_}
	MPATH[$m]=$path
done <"$KM/modules.dep"
declare -A LOADED=()
ORDER=()
add_module() { # <name>: its deps first (modules.dep lists the closure)
	local m=${1//-/_} path deps d
	[ -n "${LOADED[$m]:-}" ] && return 0
	path=${MPATH[$m]:-}
	[ -n "$path" ] || return 1
	LOADED[$m]=1
	deps=$(grep -E "^$path:" "$KM/modules.dep" | cut -d: -f2)
	for d in $deps; do
		d=${d##*/}; d=${d%.ko*}
		add_module "$d" || return 1
	done
	ORDER+=("$m")
}
LOADLIST=()
for m in $MODULES; do
	opt=
	case $m in *\?) opt='?'; m=${m%\?} ;; esac
	if grep -qE "/${m//[-_]/[-_]}\\.ko" "$KM/modules.builtin"; then
		continue
	fi
	if ! add_module "$m"; then
		[ -n "$opt" ] && continue
		die "kernel module $m (or a dependency) not in $kfile"
	fi
	LOADLIST+=("$m$opt")
done
GM=$ROOT/lib/modules/$KREL
mkdir -p "$GM"
cp "$KM/modules.builtin" "$KM/modules.order" "$GM/"
[ -f "$KM/modules.builtin.modinfo" ] && cp "$KM/modules.builtin.modinfo" "$GM/"
for m in "${ORDER[@]}"; do
	path=${MPATH[$m]}
	mkdir -p "$GM/$(dirname "$path")"
	cp "$KM/$path" "$GM/$path"
done
"$BB" depmod -b "$ROOT" "$KREL" || die "depmod of the guest's modules"
cp "$W/k/boot/vmlinuz-$KREL" "$W/vmlinuz"

# ------------------------------------------------------------ the tree

# what a guest without init system, docs or locales does not need
rm -rf "$ROOT"/usr/share/{doc,man,info,locale,lintian,bash-completion,zsh,bug} \
       "$ROOT"/usr/lib/x86_64-linux-gnu/gconv "$ROOT"/etc/init.d \
       "$ROOT"/lib/systemd "$ROOT"/usr/lib/systemd "$ROOT"/lib/udev
mkdir -p "$ROOT"/{proc,sys,dev,tmp,run,root,mnt,var/tmp,etc,usr/local/bin,sbin,usr/sbin}
# busybox applets for every command no package provides
for a in $("$BB" --list); do
	[ "$a" = busybox ] && continue
	found=0
	for d in bin sbin usr/bin usr/sbin; do
		[ -e "$ROOT/$d/$a" ] && { found=1; break; }
	done
	[ $found -eq 0 ] && ln -s busybox "$ROOT/bin/$a"
done
mknod -m 600 "$ROOT/dev/console" c 5 1 || die "mknod"
mknod -m 666 "$ROOT/dev/null" c 1 3 || die "mknod"
install -m 755 "$HERE/guest/init" "$ROOT/init"
install -m 755 "$HERE/guest/droce-agent" "$HERE/guest/droce-agent-conn" \
	"$ROOT/usr/local/bin/"
printf '%s\n' "${LOADLIST[@]}" >"$ROOT/etc/droce-modules"
echo "$KREL" >"$ROOT/etc/droce-kernel-release"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\n' >"$ROOT/etc/group"
printf '127.0.0.1 localhost\n' >"$ROOT/etc/hosts"
printf 'hosts: files\n' >"$ROOT/etc/nsswitch.conf"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' >"$ROOT/etc/ld.so.conf"
ldconfig -r "$ROOT" 2>/dev/null || die "ldconfig -r"

# every ELF file we may run, and what they need, must resolve
declare -A HAVE=()
while read -r f; do HAVE[${f##*/}]=1; done < <(
	find "$ROOT/lib" "$ROOT/lib64" "$ROOT/usr/lib" -maxdepth 2 \
	     \( -type f -o -type l \) -name '*.so*' 2>/dev/null)
missing=$(
	find "$ROOT"/bin "$ROOT"/sbin "$ROOT"/usr/bin "$ROOT"/usr/sbin \
	     "$ROOT"/usr/lib/x86_64-linux-gnu/libibverbs \
	     "$ROOT"/lib/x86_64-linux-gnu "$ROOT"/usr/lib/x86_64-linux-gnu \
	     -maxdepth 1 -type f 2>/dev/null |
	while read -r f; do
		objdump -p "$f" 2>/dev/null | awk '$1 == "NEEDED" {print $2}'
	done | sort -u | while read -r so; do
		[ -n "${HAVE[$so]:-}" ] || echo "$so"
	done)
[ -z "$missing" ] || die "shared objects missing from the guest: $(echo "$missing" | tr '\n' ' ')"

say "initramfs"
(cd "$ROOT" && find . | LC_ALL=C sort | "$BB" cpio -o -H newc 2>/dev/null) |
	gzip -6 >"$W/initrd.img" || die "cpio"

# ------------------------------------------------------------ publish

rm -rf "$OUT"
mkdir -p "$OUT"
mv "$W/vmlinuz" "$W/initrd.img" "$OUT/"
echo "$KREL" >"$OUT/kernel-release"
awk '{print $2}' "$TMPD/uris" | sed -E 's/_([^_]*)_[^_]*\.deb$/=\1/; s/%3a/:/g' |
	sort >"$OUT/packages"
printf '%s\n' "${LOADLIST[@]}" >"$OUT/modules"
touch "$OUT/ok"
# older guests (other keys) go; the .debs stay for the next rebuild
for d in "$CACHE"/guest-*; do
	[ "$d" = "$OUT" ] || rm -rf "$d"
done
say "done: $(du -sh "$OUT/initrd.img" | cut -f1) initramfs"
emit
