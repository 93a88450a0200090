//! Output safety shared by everything that writes (the CLI's split, inject,
//! aspect and survey reports, the campaign).
//!
//! Job: give a command a fresh directory to write into, and put it in place
//! of OUT only when the command succeeded; or refuse, before anything is
//! touched.
//!
//! Invariants:
//! - Nothing the user had is lost. OUT is replaced only when it does not
//!   exist, is an empty directory, or (with `force`) holds fgft's manifest
//!   ([`MANIFEST`]): a directory fgft wrote. OUT is never the current
//!   directory or one above it, never holds an input, and never lies inside
//!   an input directory. Inputs are every file and directory the command
//!   reads.
//! - OUT is complete or absent. A command writes into a staging directory
//!   beside OUT ([`Stage`]); [`Stage::commit`] writes the manifest and swaps
//!   the staging directory into place with one `renameat2` (exchange), so a
//!   failed run leaves OUT as it was, and of two concurrent runs the last
//!   swap wins with a complete tree. A stage dropped without a commit is
//!   removed, with the parent directories it created.
//! - A single report file ([`write_file`]) is written beside its place and
//!   renamed over it; an existing file is replaced only when it is a report
//!   of fgft's own (the caller says how to tell), and never when it is an
//!   input.

use crate::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The file that marks a directory fgft wrote: its first line names the
/// tool, the others list every file written (path and size).
pub const MANIFEST: &str = ".fgft-manifest";

const FIRST_LINE: &str = "# fgft output directory";

fn refused(msg: String) -> Error {
    Error::Refused(msg)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| absolute(p))
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// Canonical form of a path that may not exist yet: its nearest existing
/// ancestor canonicalized, with the rest appended (`..` and `.` resolved
/// lexically in the rest).
pub fn canon_lenient(p: &Path) -> PathBuf {
    let abs = absolute(p);
    let mut base = abs.clone();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&base).is_err() {
        match (base.file_name().map(|f| f.to_os_string()), base.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                base = parent.to_path_buf();
            }
            _ => return abs,
        }
    }
    let mut c = canon(&base);
    for r in rest.into_iter().rev() {
        c.push(r);
    }
    c
}

/// Refuses `out` when it is the current directory or above it, or overlaps
/// one of `inputs` (OUT holds an input, or lies inside an input directory).
fn check_place<P: AsRef<Path>>(out: &Path, o: &Path, inputs: &[P]) -> Result<(), Error> {
    if out.as_os_str().is_empty() {
        return Err(refused("the output path is empty".into()));
    }
    if let Ok(cwd) = std::env::current_dir() {
        let cwd = canon(&cwd);
        if cwd.starts_with(o) {
            return Err(refused(format!(
                "output {} is the current directory or one above it: refusing to replace it \
                 (name a new directory, e.g. -o {}-fgft)",
                out.display(),
                o.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "out".into())
            )));
        }
    }
    for i in inputs {
        let i = canon(i.as_ref());
        if i.starts_with(o) {
            return Err(refused(format!(
                "output {} holds input {}: refusing to write there",
                out.display(),
                i.display()
            )));
        }
        if o.starts_with(&i) && i.is_dir() {
            return Err(refused(format!(
                "output {} lies inside input directory {}: refusing to write there \
                 (it would be read back as input)",
                out.display(),
                i.display()
            )));
        }
    }
    Ok(())
}

/// What is at OUT now.
enum Existing {
    Nothing,
    Empty,
    Ours,
}

/// Whether `out` may be replaced: it does not exist, is an empty directory,
/// or holds fgft's manifest and `force` was given.
fn check_existing(out: &Path, force: bool) -> Result<Existing, Error> {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Nothing),
        Err(e) => return Err(io(out)(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(refused(format!(
            "output {} is a symbolic link: name the directory itself",
            out.display()
        )));
    }
    if !meta.is_dir() {
        return Err(refused(format!(
            "output {} exists and is not a directory (fgft writes a directory there)",
            out.display()
        )));
    }
    let non_empty = std::fs::read_dir(out).map_err(io(out))?.next().is_some();
    if !non_empty {
        return Ok(Existing::Empty);
    }
    if !is_ours(out) {
        return Err(refused(if force {
            format!(
                "output {} is not a directory fgft wrote (it has no {MANIFEST}): \
                 --force replaces only fgft's own output; choose another directory",
                out.display()
            )
        } else {
            format!(
                "output {} is not empty and is not a directory fgft wrote: choose another directory",
                out.display()
            )
        }));
    }
    if !force {
        return Err(refused(format!(
            "output {} is not empty (use --force to replace this earlier fgft output)",
            out.display()
        )));
    }
    Ok(Existing::Ours)
}

/// Whether `dir` holds fgft's manifest.
pub fn is_ours(dir: &Path) -> bool {
    let p = dir.join(MANIFEST);
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_file() => std::fs::read_to_string(&p)
            .map(|t| t.starts_with(FIRST_LINE))
            .unwrap_or(false),
        _ => false,
    }
}

/// A staging directory beside OUT; [`Stage::commit`] puts it in place.
#[derive(Debug)]
pub struct Stage {
    out: PathBuf,
    dir: PathBuf,
    created: Vec<PathBuf>,
    force: bool,
    tool: String,
    done: bool,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Checks OUT against the inputs and what is there now, then makes a fresh
/// staging directory beside it.  Nothing at OUT is touched.
pub fn stage<P: AsRef<Path>>(
    out: &Path,
    inputs: &[P],
    force: bool,
    tool: &str,
) -> Result<Stage, Error> {
    // OUT itself as named: a symbolic link is refused before it is resolved
    // (replacing it would replace the link, or write where it points).
    if std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refused(format!(
            "output {} is a symbolic link: name the directory itself",
            out.display()
        )));
    }
    let o = canon_lenient(out);
    check_place(out, &o, inputs)?;
    check_existing(&o, force)?;
    let parent = o
        .parent()
        .ok_or_else(|| refused(format!("output {} has no parent directory", out.display())))?
        .to_path_buf();
    let name = o
        .file_name()
        .ok_or_else(|| refused(format!("output {} names no directory", out.display())))?
        .to_string_lossy()
        .into_owned();
    // Parents that do not exist yet, made now and removed again on failure.
    let mut created = Vec::new();
    let mut p = parent.clone();
    while std::fs::symlink_metadata(&p).is_err() {
        created.push(p.clone());
        if !p.pop() {
            break;
        }
    }
    for c in created.iter().rev() {
        std::fs::create_dir(c).map_err(io(c))?;
    }
    let mut st = Stage {
        out: o,
        dir: PathBuf::new(),
        created,
        force,
        tool: tool.to_string(),
        done: false,
    };
    loop {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let d = parent.join(format!(".{name}.fgft-{}-{n}", std::process::id()));
        match std::fs::create_dir(&d) {
            Ok(()) => {
                st.dir = d;
                return Ok(st);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&d)(e)),
        }
    }
}

impl Stage {
    /// Where the command writes.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes the manifest, then puts the staging directory in place of OUT
    /// (checking OUT once more: a concurrent run may have changed it).
    pub fn commit(mut self) -> Result<(), Error> {
        write_manifest(&self.dir, &self.tool)?;
        for _ in 0..16 {
            match check_existing(&self.out, self.force)? {
                Existing::Nothing => match rename_noreplace(&self.dir, &self.out) {
                    Ok(()) => {
                        self.done = true;
                        return Ok(());
                    }
                    // A concurrent run made OUT first: check it again.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(io(&self.out)(e)),
                },
                Existing::Empty | Existing::Ours => {
                    match exchange(&self.dir, &self.out) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(io(&self.out)(e)),
                    }
                    // The staging path now holds what OUT had.
                    self.done = true;
                    std::fs::remove_dir_all(&self.dir).map_err(io(&self.dir))?;
                    return Ok(());
                }
            }
        }
        Err(refused(format!(
            "output {} keeps changing under a concurrent run: try again",
            self.out.display()
        )))
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        for c in &self.created {
            let _ = std::fs::remove_dir(c);
        }
    }
}

/// Lists every file under `dir` (sorted, with sizes) into its manifest.
fn write_manifest(dir: &Path, tool: &str) -> Result<(), Error> {
    let mut files = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let d = dir.join(&rel);
        for e in std::fs::read_dir(&d).map_err(io(&d))? {
            let e = e.map_err(io(&d))?;
            let r = rel.join(e.file_name());
            let ft = e.file_type().map_err(io(&d))?;
            if ft.is_dir() {
                stack.push(r);
            } else {
                let len = e.metadata().map_err(io(&d))?.len();
                files.push((r, len));
            }
        }
    }
    files.sort();
    let mut text = format!("{FIRST_LINE}, written by {tool}; --force replaces it whole\n");
    for (r, len) in &files {
        text.push_str(&format!("{}\t{len}\n", r.display()));
    }
    let p = dir.join(MANIFEST);
    std::fs::write(&p, text).map_err(io(&p))
}

fn c_path(p: &Path) -> std::io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))
}

fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    let (f, t) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are NUL-terminated paths that live across the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `from` becomes `to`, which must not exist.
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    renameat2(from, to, libc::RENAME_NOREPLACE)
}

/// `from` and `to` trade places atomically; where the file system cannot,
/// `to` is moved aside first (OUT is absent for a moment, never partial).
fn exchange(from: &Path, to: &Path) -> std::io::Result<()> {
    match renameat2(from, to, libc::RENAME_EXCHANGE) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let aside = PathBuf::from(format!("{}.old", from.display()));
            std::fs::rename(to, &aside)?;
            std::fs::rename(from, to)?;
            std::fs::rename(&aside, from)
        }
        r => r,
    }
}

/// Writes one report file: beside its place first, then renamed over it.
/// Refused when `path` is an input or lies inside an input directory, is
/// not a regular file, or exists and `ours` does not recognise its bytes
/// as a report fgft wrote.
pub fn write_file<P: AsRef<Path>>(
    path: &Path,
    bytes: &[u8],
    inputs: &[P],
    ours: &dyn Fn(&[u8]) -> bool,
) -> Result<(), Error> {
    let o = canon_lenient(path);
    for i in inputs {
        let i = canon(i.as_ref());
        if i == o || (o.starts_with(&i) && i.is_dir()) {
            return Err(refused(format!(
                "report {} would overwrite or lie inside input {}: choose another file",
                path.display(),
                i.display()
            )));
        }
    }
    match std::fs::symlink_metadata(&o) {
        Ok(m) if !m.is_file() => {
            return Err(refused(format!(
                "report {} exists and is not a regular file",
                path.display()
            )))
        }
        Ok(_) => {
            let old = std::fs::read(&o).map_err(io(&o))?;
            if !ours(&old) {
                return Err(refused(format!(
                    "report {} exists and is not a report fgft wrote: refusing to overwrite it \
                     (remove it or choose another file)",
                    path.display()
                )));
            }
        }
        Err(_) => {}
    }
    let parent = o.parent().unwrap_or(Path::new("/"));
    let name = o.file_name().unwrap_or_default().to_string_lossy();
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = parent.join(format!(".{name}.fgft-{}-{n}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &o).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(&o)(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let t = std::env::temp_dir().join(format!("fgft-outdir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(&t).unwrap();
        t
    }

    fn write_out(out: &Path, inputs: &[&Path], force: bool, body: &str) -> Result<(), Error> {
        let st = stage(out, inputs, force, "test")?;
        std::fs::write(st.path().join("a.c"), body).unwrap();
        st.commit()
    }

    #[test]
    fn refuses_overlaps_and_foreign_dirs() {
        let t = tmp("overlap");
        let input = t.join("drv");
        std::fs::create_dir_all(&input).unwrap();
        std::fs::write(input.join("a.c"), "int x;\n").unwrap();
        // Inside an input, or holding one.
        assert!(matches!(
            stage(&input.join("out"), &[&input], true, "t"),
            Err(Error::Refused(_))
        ));
        assert!(matches!(
            stage(&t, &[&input], true, "t"),
            Err(Error::Refused(_))
        ));
        // A directory fgft did not write is never replaced.
        let user = t.join("user");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(user.join("notes"), "mine").unwrap();
        assert!(matches!(
            write_out(&user, &[&input], true, "x"),
            Err(Error::Refused(_))
        ));
        assert_eq!(std::fs::read_to_string(user.join("notes")).unwrap(), "mine");
        // Nothing of a refused or failed stage is left.
        let names: Vec<_> = std::fs::read_dir(&t)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn replaces_only_its_own_output_with_force() {
        let t = tmp("force");
        let input = t.join("a.c");
        std::fs::write(&input, "int x;\n").unwrap();
        let out = t.join("deep/er/out");
        write_out(&out, &[&input], false, "one").unwrap();
        assert!(is_ours(&out));
        assert!(std::fs::read_to_string(out.join(MANIFEST))
            .unwrap()
            .contains("a.c\t3"));
        assert!(matches!(
            write_out(&out, &[&input], false, "two"),
            Err(Error::Refused(_))
        ));
        write_out(&out, &[&input], true, "two").unwrap();
        assert_eq!(std::fs::read_to_string(out.join("a.c")).unwrap(), "two");
        // A stage dropped without commit leaves nothing, parents included.
        let gone = t.join("new/dir/out");
        drop(stage(&gone, &[&input], false, "t").unwrap());
        assert!(!t.join("new").exists());
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn report_files_replace_only_fgft_reports() {
        let t = tmp("file");
        let input = t.join("a.c");
        std::fs::write(&input, "int x;\n").unwrap();
        let ours = |b: &[u8]| b.starts_with(b"{\"fgft\"");
        assert!(write_file(&input, b"{\"fgft\"}", &[&input], &ours).is_err());
        let r = t.join("r.json");
        std::fs::write(&r, "user data").unwrap();
        assert!(write_file(&r, b"{\"fgft\"}", &[&input], &ours).is_err());
        std::fs::remove_file(&r).unwrap();
        write_file(&r, b"{\"fgft\": 1}", &[&input], &ours).unwrap();
        write_file(&r, b"{\"fgft\": 2}", &[&input], &ours).unwrap();
        assert_eq!(std::fs::read_to_string(&r).unwrap(), "{\"fgft\": 2}");
        let _ = std::fs::remove_dir_all(&t);
    }
}
