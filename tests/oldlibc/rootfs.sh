#!/usr/bin/env bash
# tests/oldlibc/rootfs.sh - make once, or reuse, a Debian 11 "bullseye" rootfs (glibc 2.31); print its path
#
# The first stage of `debootstrap --foreign --variant=minbase` (download and
# unpack, no configure: the chroot'ed dpkg --configure of ~90 packages took
# 2-3.5 minutes of the whole and nothing of it is needed to run perl and sh
# there), plus libunwind8 unpacked into it: a dependency of
# libheaptap_inject.so, so that loading the real library into a bullseye
# program fails on what it would fail on a bullseye system, glibc's version.
# Cached in $HEAPTAP_OLDLIBC_ROOT (default /var/cache/heaptap-test/bullseye);
# a flock makes concurrent callers wait for one debootstrap. Exit 77 with
# the reason on stderr when it cannot be made here (not root, no
# debootstrap, mirror unreachable); exit 1 when debootstrap itself fails
# with the mirror reachable.
set -euo pipefail
root=${HEAPTAP_OLDLIBC_ROOT:-/var/cache/heaptap-test/bullseye}
mirror=${HEAPTAP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
case $root in /*/*) ;; *) echo "rootfs: HEAPTAP_OLDLIBC_ROOT=$root: want an absolute path below a directory" >&2; exit 1 ;; esac
. "$(dirname "$0")/../lib/case.sh"
case_name=oldlibc.rootfs
ready() { [ -f "$root/.heaptap-ready" ]; }

if ready; then
	echo "$root"
	exit 0
fi
[ "$(id -u)" = 0 ] || skip "no bullseye rootfs at $root, and making one needs root (debootstrap)"
command -v debootstrap >/dev/null || PATH=$PATH:/usr/sbin:/sbin
command -v debootstrap >/dev/null || skip "debootstrap is not installed (scripts/setup installs it)"
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9
if ready; then
	echo "$root"
	exit 0
fi
wget -q -T 20 -t 2 -O /dev/null "$mirror/dists/bullseye/Release" ||
	skip "cannot reach the Debian mirror $mirror (no network?)"
rm -rf "$root.tmp"
t0=$(date +%s)
if ! debootstrap --foreign --variant=minbase --include=libunwind8 bullseye "$root.tmp" "$mirror" \
	>"$root.log" 2>&1; then
	echo "rootfs: debootstrap failed, last lines of $root.log:" >&2
	tail -n 15 "$root.log" >&2
	exit 1
fi
# --include'd packages are only downloaded by the first stage; keep the
# merged-/usr symlinks (/lib -> usr/lib) that the package's ./lib/ would replace
deb=$(ls "$root.tmp"/var/cache/apt/archives/libunwind8_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$root.tmp"
t1=$(date +%s)
ver=$(chroot "$root.tmp" /usr/bin/ldd --version | sed -n 1p)
echo "rootfs: debootstrap of bullseye took $((t1 - t0)) s ($ver)" >&2
echo "$((t1 - t0)) s: $ver" >"$root.tmp/.heaptap-ready"
rm -rf "$root"	# a rootfs without the ready mark is a broken one
mv "$root.tmp" "$root"
echo "$root"
