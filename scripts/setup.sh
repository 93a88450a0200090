#!/usr/bin/env bash
# One set-up step shared by both README commands.
#
# Installs (apt, only when missing) the Debian kernels, headers and sources fgft
# works against, QEMU and busybox, and unpacks the kernel source tarballs into a
# cache outside git ($FGFT_CACHE, default ~/.cache/fgft).  Nothing upstream is
# ever copied into the repository.
#
# Prints shell assignments (KDIR, KDIR61, SRC612, SRC61, KERNEL_IMAGE, KDIR_RT,
# KVER_RT, KERNEL_IMAGE_RT) on the
# last lines so callers can `eval "$(scripts/setup.sh --print-env)"`.
set -euo pipefail

cache=${FGFT_CACHE:-$HOME/.cache/fgft}
quiet=0
[ "${1:-}" = "--print-env" ] && quiet=1

log() { [ $quiet -eq 1 ] && echo "$*" >&2 || echo "$*"; }

pkgs=(linux-image-6.12-amd64 linux-headers-6.12-amd64 linux-source-6.12
      linux-headers-amd64 linux-source-6.1 qemu-system-x86 busybox-static cpio
      xz-utils bc flex bison libelf-dev make gcc perl coccinelle dkms
      linux-image-6.12-rt-amd64 linux-headers-6.12-rt-amd64 rt-tests
      dosfstools util-linux)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

kdir=$(ls -d /usr/src/linux-headers-6.12.*-amd64 | grep -v -- -rt-amd64 | sort -V | tail -1)
kdir61=$(ls -d /usr/src/linux-headers-6.1.*-amd64 | sort -V | tail -1)
kver=$(basename "$kdir" | sed 's/^linux-headers-//')
image=/boot/vmlinuz-$kver
# The PREEMPT_RT flavour of the same 6.12 (issue 18: timing isolation).
kdir_rt=$(ls -d /usr/src/linux-headers-6.12.*-rt-amd64 | sort -V | tail -1)
kver_rt=$(basename "$kdir_rt" | sed 's/^linux-headers-//')
image_rt=/boot/vmlinuz-$kver_rt

mkdir -p "$cache"
unpack() { # tarball dest
	local tb=$1 dest=$2
	if [ ! -f "$dest/.fgft-unpacked" ]; then
		log "setup: unpacking $(basename "$tb") into $dest"
		rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
		tar -xJf "$tb" -C "$dest.tmp" --strip-components=1
		rm -rf "$dest" && mv "$dest.tmp" "$dest"
		touch "$dest/.fgft-unpacked"
	fi
}
unpack /usr/src/linux-source-6.12.tar.xz "$cache/linux-6.12"
unpack /usr/src/linux-source-6.1.tar.xz "$cache/linux-6.1"

cat <<ENV
export FGFT_CACHE=$cache
export KDIR=$kdir
export KDIR61=$kdir61
export SRC612=$cache/linux-6.12
export SRC61=$cache/linux-6.1
export KERNEL_IMAGE=$image
export KVER=$kver
export KDIR_RT=$kdir_rt
export KVER_RT=$kver_rt
export KERNEL_IMAGE_RT=$image_rt
ENV
