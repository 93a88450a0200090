#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dkms POST_BUILD of fgft-rt: keeps the runtime's Module.symvers beside the
# built module ($dkms_tree/fgft-rt/VERSION/KERNEL/ARCH/module/), where the
# Makefile of a split finds it (the build directory is removed after the
# build).  Runs in the build directory; $1 is the kernel, $2 the arch.
set -e
dest="../$1/$2/module"
mkdir -p "$dest"
cp Module.symvers "$dest/Module.symvers"
