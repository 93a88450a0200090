//! Machine-wide VM slots: at most N QEMU processes at once, across all
//! processes, through `flock` on `<cache>/vm-slots/<i>.lock`.

use crate::VmError;
use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::thread;
use std::time::Duration;

const LOCK_EX: i32 = 2;
const LOCK_NB: i32 = 4;

extern "C" {
    fn flock(fd: i32, operation: i32) -> i32;
}

/// A held slot; the lock is released when it is dropped (the file closes).
#[derive(Debug)]
pub(crate) struct Slot {
    _file: File,
    pub index: usize,
}

/// Default number of slots: the machine's 2 cores, or `$FGFT_VM_SLOTS`.
pub(crate) fn slot_count() -> usize {
    std::env::var("FGFT_VM_SLOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(2)
}

fn try_lock(file: &File) -> bool {
    // SAFETY: flock() only reads the descriptor number, which is open for
    // as long as `file` is borrowed.
    unsafe { flock(file.as_raw_fd(), LOCK_EX | LOCK_NB) == 0 }
}

/// Waits until one of `count` slots under `dir` is free and takes it.
pub(crate) fn acquire(dir: &Path, count: usize) -> Result<Slot, VmError> {
    fs::create_dir_all(dir).map_err(|e| VmError::io(dir, e))?;
    let mut files = Vec::with_capacity(count);
    for i in 0..count {
        let path = dir.join(format!("{i}.lock"));
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| VmError::io(&path, e))?;
        files.push(f);
    }
    loop {
        for (i, f) in files.iter().enumerate() {
            if try_lock(f) {
                let file = files.swap_remove(i);
                return Ok(Slot {
                    _file: file,
                    index: i,
                });
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn slots_exclude_each_other() {
        let dir = std::env::temp_dir().join(format!("fgft-vm-slots-{}", std::process::id()));
        let a = acquire(&dir, 2).unwrap();
        let b = acquire(&dir, 2).unwrap();
        assert_ne!(a.index, b.index);
        let dir2 = dir.clone();
        let t0 = Instant::now();
        let waiter = thread::spawn(move || acquire(&dir2, 2).unwrap().index);
        thread::sleep(Duration::from_millis(300));
        assert!(!waiter.is_finished(), "a third slot was handed out");
        let freed = a.index;
        drop(a);
        assert_eq!(waiter.join().unwrap(), freed);
        assert!(t0.elapsed() >= Duration::from_millis(300));
        drop(b);
        let _ = fs::remove_dir_all(&dir);
    }
}
