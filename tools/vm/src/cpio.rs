//! A writer for the `newc` cpio format the kernel unpacks as an initramfs.
//!
//! Entries are written as given: parents must come before children. Owner is
//! root, mtime 0, so the archive is deterministic.

use std::io::{self, Write};

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

/// Streams a newc archive into `W`.
pub struct CpioWriter<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> Self {
        CpioWriter {
            out,
            ino: 1,
            written: 0,
        }
    }

    /// A directory with permission bits `perm` (e.g. 0o755).
    pub fn dir(&mut self, path: &str, perm: u32) -> io::Result<()> {
        self.entry(path, S_IFDIR | (perm & 0o7777), 2, (0, 0), &[])
    }

    /// A regular file.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) -> io::Result<()> {
        self.entry(path, S_IFREG | (perm & 0o7777), 1, (0, 0), data)
    }

    /// A symbolic link to `target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        self.entry(path, S_IFLNK | 0o777, 1, (0, 0), target.as_bytes())
    }

    /// A character device node.
    pub fn char_dev(&mut self, path: &str, perm: u32, major: u32, minor: u32) -> io::Result<()> {
        self.entry(path, S_IFCHR | (perm & 0o7777), 1, (major, minor), &[])
    }

    /// Writes the trailer and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, 1, (0, 0), &[])?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn entry(
        &mut self,
        path: &str,
        mode: u32,
        nlink: u32,
        rdev: (u32, u32),
        data: &[u8],
    ) -> io::Result<()> {
        let name = path.trim_start_matches('/');
        if name.is_empty() || name.as_bytes().contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad cpio path {path:?}"),
            ));
        }
        let size = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "cpio entry too large"))?;
        let ino = if name == "TRAILER!!!" { 0 } else { self.ino };
        self.ino += 1;
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            ino,
            mode,
            0,
            0,
            nlink,
            0,
            size,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0u8; 3][..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn sample() -> Vec<u8> {
        let mut w = CpioWriter::new(Vec::new());
        w.dir("/bin", 0o755).unwrap();
        w.file("/bin/hello", 0o755, b"#!/bin/sh\necho hi\n")
            .unwrap();
        w.symlink("/bin/sh", "hello").unwrap();
        w.dir("/dev", 0o755).unwrap();
        w.char_dev("/dev/console", 0o600, 5, 1).unwrap();
        w.file("/odd", 0o644, b"12345").unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn layout_is_newc() {
        let a = sample();
        assert_eq!(&a[..6], b"070701");
        assert_eq!(a.len() % 4, 0);
        let text = String::from_utf8_lossy(&a);
        assert!(text.contains("bin/hello\0"));
        assert!(text.ends_with("TRAILER!!!\0\0\0\0") || text.contains("TRAILER!!!\0"));
        // Header of /dev/console: char device 5:1.
        let at = text.find("dev/console").unwrap();
        let h = &text[at - 110..at];
        assert_eq!(&h[14..22], "00002180"); // S_IFCHR | 0o600
        assert_eq!(&h[78..86], "00000005");
        assert_eq!(&h[86..94], "00000001");
        // Deterministic.
        assert_eq!(a, sample());
    }

    #[test]
    fn cpio_tool_reads_it() {
        if Command::new("cpio").arg("--version").output().is_err() {
            eprintln!("cpio tool not installed; skipping the cross-check");
            return;
        }
        let mut child = Command::new("cpio")
            .args(["-i", "-t", "-v", "--quiet"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&sample()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let list = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = list.lines().collect();
        assert_eq!(lines.len(), 6, "{list}");
        assert!(lines[1].starts_with("-rwxr-xr-x") && lines[1].ends_with("bin/hello"));
        assert!(lines[2].starts_with("lrwxrwxrwx") && lines[2].ends_with("bin/sh -> hello"));
        assert!(lines[4].starts_with("crw-------") && lines[4].contains("5,"));
        assert!(lines[5].contains(" 5 ") && lines[5].ends_with("odd"));
    }
}
