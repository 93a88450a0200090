//! fgft-vm: the VM harness every VM test uses.
