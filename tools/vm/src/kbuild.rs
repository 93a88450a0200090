//! Out-of-tree Kbuild builds in the target directory.

use crate::{Env, VmError};
use fgft_base::kbuild::Make;
use std::fs;
use std::path::{Path, PathBuf};

/// Copies `src_dir` into `<target>/kbuild/<name>/` (removed first, so every
/// build starts fresh), each of `extra_dirs` into a subdirectory named after
/// its last component (e.g. a shared `include/`: use
/// `ccflags-y += -I$(src)/include` in the Kbuild file), then runs
/// `make -C kdir M=<that dir> modules`.
///
/// Returns the build directory, which holds the `.ko` files. Fails with
/// [`VmError::Build`] carrying the whole make output if make fails or if the
/// output has any `warning:` line (compiler, linker, objtool) or a modpost
/// `WARNING:` line. `name` must be unique among concurrent builds.
pub fn kbuild(
    env: &Env,
    name: &str,
    src_dir: &Path,
    kdir: &Path,
    extra_dirs: &[&Path],
) -> Result<PathBuf, VmError> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(VmError::Spec {
            name: name.to_string(),
            reason: "a kbuild name must be a plain file name".into(),
        });
    }
    let dir = env.target_dir.join("kbuild").join(name);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| VmError::io(&dir, e))?;
    }
    copy_dir(src_dir, &dir)?;
    for extra in extra_dirs {
        let base = extra.file_name().ok_or_else(|| VmError::Spec {
            name: name.to_string(),
            reason: format!("extra dir {} has no name", extra.display()),
        })?;
        copy_dir(extra, &dir.join(base))?;
    }
    let make = Make::new(kdir, &dir)
        .target("modules")
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS");
    let cmd = make.command_line();
    let out = make.run().map_err(|e| match e {
        fgft_base::Error::Spawn { cmd, source } => VmError::Spawn { cmd, source },
        other => VmError::Spawn {
            cmd: cmd.clone(),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    let output = out.combined();
    if !out.status.success() {
        return Err(VmError::Build {
            name: name.to_string(),
            reason: format!("`{cmd}` exited with {}", out.status),
            output,
        });
    }
    if let Some(w) = first_warning(&output) {
        return Err(VmError::Build {
            name: name.to_string(),
            reason: format!("`{cmd}` printed a warning: {w}"),
            output,
        });
    }
    Ok(dir)
}

/// The first line of build output that is a warning, if any.
pub(crate) fn first_warning(output: &str) -> Option<&str> {
    output
        .lines()
        .find(|l| l.contains("warning:") || l.contains("WARNING:"))
}

/// Recursive copy of regular files and directories (symlinks followed).
pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<(), VmError> {
    fs::create_dir_all(to).map_err(|e| VmError::io(to, e))?;
    let mut entries: Vec<_> = fs::read_dir(from)
        .map_err(|e| VmError::io(from, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| VmError::io(from, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let meta = fs::metadata(&src).map_err(|e| VmError::io(&src, e))?;
        if meta.is_dir() {
            copy_dir(&src, &dst)?;
        } else if meta.is_file() {
            fs::copy(&src, &dst).map_err(|e| VmError::io(&src, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_found() {
        assert_eq!(first_warning("  CC [M]  a.o\n  LD [M]  a.ko\n"), None);
        assert_eq!(
            first_warning("a.c:3:5: warning: unused variable 'x' [-Wunused-variable]\n"),
            Some("a.c:3:5: warning: unused variable 'x' [-Wunused-variable]")
        );
        assert!(
            first_warning("a.o: warning: objtool: f+0x3: return with modified stack\n").is_some()
        );
        assert!(first_warning("WARNING: modpost: missing MODULE_LICENSE() in a.o\n").is_some());
    }
}
