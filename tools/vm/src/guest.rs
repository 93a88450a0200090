//! Static guest programs, compiled on demand and cached by content hash.

use crate::{Env, VmError};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Flags every guest program is compiled with.
pub(crate) const CFLAGS: &[&str] = &["-static", "-O2", "-Wall", "-Wextra", "-std=gnu11"];

/// 64-bit FNV-1a: a stable content hash for the cache key.
pub(crate) fn fnv1a(data: &[u8], mut h: u64) -> u64 {
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// One of our guest programs, `tools/vm/guest/<name>.c` (`fgft-ethtool`,
/// `fgft-pkt`, `fgft-tcp`), built static. Returns the host path of the binary; put it in
/// a guest with [`crate::VmSpec::add_tool`] or [`crate::VmSpec::files`].
pub fn guest_tool(env: &Env, name: &str) -> Result<PathBuf, VmError> {
    let src = env
        .repo_root
        .join("tools/vm/guest")
        .join(format!("{name}.c"));
    if name.contains('/') || !src.is_file() {
        return Err(VmError::NoTool {
            name: name.to_string(),
            path: src,
        });
    }
    guest_program(env, &src)
}

/// Compiles any C file with `gcc -static -O2 -Wall -Wextra` into
/// `<target>/vm-guest/<stem>-<hash>` and returns that path. The hash covers
/// the file, the `.h` files beside it, the files it `#include "..."`s from
/// elsewhere (and what those include) and the flags, so an unchanged
/// program is not rebuilt. A
/// compiler warning is an error ([`VmError::Build`]).
pub fn guest_program(env: &Env, src: &Path) -> Result<PathBuf, VmError> {
    build_c(env, src, CFLAGS)
}

/// [`guest_program`] with other flags (a host shared object, say): the
/// same cache, keyed by the flags too.
pub(crate) fn build_c(env: &Env, src: &Path, flags: &[&str]) -> Result<PathBuf, VmError> {
    let text = fs::read(src).map_err(|e| VmError::io(src, e))?;
    let mut h = fnv1a(&text, FNV_OFFSET);
    h = fnv1a(flags.join(" ").as_bytes(), h);
    if let Some(dir) = src.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut headers: Vec<PathBuf> = fs::read_dir(dir)
            .map_err(|e| VmError::io(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "h"))
            .collect();
        headers.sort();
        for hdr in headers {
            h = fnv1a(hdr.to_string_lossy().as_bytes(), h);
            h = fnv1a(&fs::read(&hdr).map_err(|e| VmError::io(&hdr, e))?, h);
        }
    }
    // Quoted includes from other directories (the shared fgft-netdev.h),
    // and what they include in turn.
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<(PathBuf, String)> = vec![(
        src.to_path_buf(),
        String::from_utf8_lossy(&text).into_owned(),
    )];
    while let Some((file, body)) = queue.pop() {
        for inc in fgft_base::includes::local_includes(&file, &body, &[]) {
            let canon = inc.canonicalize().unwrap_or_else(|_| inc.clone());
            if seen.contains(&canon) || inc.parent() == src.parent() {
                continue;
            }
            seen.push(canon);
            let bytes = fs::read(&inc).map_err(|e| VmError::io(&inc, e))?;
            h = fnv1a(inc.to_string_lossy().as_bytes(), h);
            h = fnv1a(&bytes, h);
            queue.push((inc, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    let stem = src
        .file_stem()
        .map_or_else(|| "prog".to_string(), |s| s.to_string_lossy().into_owned());
    let dir = env.target_dir.join("vm-guest");
    fs::create_dir_all(&dir).map_err(|e| VmError::io(&dir, e))?;
    let bin = dir.join(format!("{stem}-{h:016x}"));
    if bin.is_file() {
        return Ok(bin);
    }
    let tmp = dir.join(format!("{stem}-{h:016x}.tmp{}", std::process::id()));
    let out = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(src)
        .output()
        .map_err(|source| VmError::Spawn {
            cmd: format!(
                "gcc {} -o {} {}",
                flags.join(" "),
                tmp.display(),
                src.display()
            ),
            source,
        })?;
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() || output.contains("warning:") {
        let _ = fs::remove_file(&tmp);
        return Err(VmError::Build {
            name: src.display().to_string(),
            reason: if out.status.success() {
                "gcc printed a warning".into()
            } else {
                format!("gcc exited with {}", out.status)
            },
            output,
        });
    }
    fs::rename(&tmp, &bin).map_err(|e| VmError::io(&bin, e))?;
    Ok(bin)
}

/// A dynamically linked host program (a Debian package's, such as rt-tests'
/// `/usr/bin/cyclictest`) and the shared objects it needs: `(host path,
/// guest path)` pairs, the program and each library at the same path in
/// the guest as on the host, the dynamic loader included. The libraries
/// come from `ldd`, so the guest runs the host's own binary.
pub fn host_program(program: &Path) -> Result<Vec<(PathBuf, String)>, VmError> {
    if !program.is_absolute() || !program.is_file() {
        return Err(VmError::Spec {
            name: program.display().to_string(),
            reason: "a host program must be an absolute path to a file".into(),
        });
    }
    let out = Command::new("ldd")
        .arg(program)
        .output()
        .map_err(|source| VmError::Spawn {
            cmd: format!("ldd {}", program.display()),
            source,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut files = vec![(program.to_path_buf(), program.display().to_string())];
    if !out.status.success() {
        // "not a dynamic executable": a static program needs nothing else.
        return Ok(files);
    }
    for lib in ldd_paths(&text).map_err(|line| VmError::Spec {
        name: program.display().to_string(),
        reason: format!("ldd: cannot use {line:?}"),
    })? {
        files.push((PathBuf::from(&lib), lib));
    }
    Ok(files)
}

/// The absolute paths in `ldd` output (`libc.so.6 => /lib/... (0x...)`,
/// `/lib64/ld-linux-x86-64.so.2 (0x...)`); the vDSO has none. A library
/// that is `not found` is an error (the line).
pub(crate) fn ldd_paths(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("not found") {
            return Err(line.to_string());
        }
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.trim(),
            None => line,
        };
        let path = path.split_whitespace().next().unwrap_or("");
        if path.starts_with('/') && !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b"", FNV_OFFSET), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a", FNV_OFFSET), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn tools_build_static_and_cached() {
        let env = Env::load().expect("fgft environment (scripts/setup.sh)");
        for tool in ["fgft-ethtool", "fgft-pkt", "fgft-tcp"] {
            let a = guest_tool(&env, tool).unwrap();
            let b = guest_tool(&env, tool).unwrap();
            assert_eq!(a, b);
            let elf = fs::read(&a).unwrap();
            assert_eq!(&elf[..4], b"\x7fELF");
            // Static: no PT_INTERP, so no "/lib64/ld-linux" string.
            let interp = b"/lib64/ld-linux-x86-64.so.2";
            assert!(
                !elf.windows(interp.len()).any(|w| w == interp),
                "{tool} is dynamically linked"
            );
            let help = Command::new(&a).arg("--help").output().unwrap();
            assert!(String::from_utf8_lossy(&help.stderr).contains("usage:"));
        }
        assert!(matches!(
            guest_tool(&env, "no-such-tool"),
            Err(VmError::NoTool { .. })
        ));
    }

    /// fgft-fsw (issue 17) run on the host's own file system: a clean run
    /// verifies, and its check mode finds a byte changed behind its back
    /// and an entry it did not make.
    #[test]
    fn fsw_checks_itself() {
        let env = Env::load().expect("fgft environment (scripts/setup.sh)");
        let bin = guest_tool(&env, "fgft-fsw").unwrap();
        let tmp = env
            .target_dir
            .join(format!("fsw-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let dir = tmp.join("tree");
        fs::create_dir_all(&dir).unwrap();
        let model = tmp.join("model");
        let run = |args: &[&std::ffi::OsStr]| {
            let out = Command::new(&bin).args(args).output().unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let (code, out) = run(&[
            "-n".as_ref(),
            "2000".as_ref(),
            "-s".as_ref(),
            "3".as_ref(),
            "-m".as_ref(),
            model.as_os_str(),
            dir.as_os_str(),
        ]);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("failed=0 bad=0"), "{out}");
        let (code, out) = run(&[
            "-c".as_ref(),
            "-m".as_ref(),
            model.as_os_str(),
            dir.as_os_str(),
        ]);
        assert_eq!(
            (code, out.trim()),
            (Some(0), "FGFT-MARK fsw mode=check bad=0")
        );
        // One byte of the first non-empty file, changed.
        let text = fs::read_to_string(&model).unwrap();
        let file = text
            .lines()
            .filter_map(|l| l.strip_prefix("f "))
            .find(|l| l.split(' ').nth(1).is_some_and(|n| n != "0"))
            .and_then(|l| l.split(' ').next())
            .expect("a non-empty file");
        let path = dir.join(file);
        let mut bytes = fs::read(&path).unwrap();
        bytes[0] ^= 0xff;
        fs::write(&path, bytes).unwrap();
        fs::write(dir.join("stray"), b"").unwrap();
        let (code, out) = run(&[
            "-c".as_ref(),
            "-m".as_ref(),
            model.as_os_str(),
            dir.as_os_str(),
        ]);
        assert_eq!(code, Some(1), "{out}");
        assert!(
            out.contains("why=content") && out.contains("why=extra-entry"),
            "{out}"
        );
        assert!(out.contains("mode=check bad=2"), "{out}");
        fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn ldd_output_is_read() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibnuma.so.1 => /lib/x86_64-linux-gnu/libnuma.so.1 (0x00007f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007e)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007d)\n";
        assert_eq!(
            ldd_paths(text).unwrap(),
            [
                "/lib/x86_64-linux-gnu/libnuma.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
        assert!(ldd_paths("\tlibfoo.so.1 => not found\n").is_err());
    }

    #[test]
    fn host_programs_bring_their_libraries() {
        let files = host_program(Path::new("/bin/ls")).unwrap();
        assert_eq!(files[0].1, "/bin/ls");
        assert!(
            files.iter().any(|(_, g)| g.contains("libc.so")),
            "{files:?}"
        );
        assert!(host_program(Path::new("ls")).is_err());
    }

    #[test]
    fn warnings_fail_the_build() {
        let env = Env::load().expect("fgft environment (scripts/setup.sh)");
        let dir = env.target_dir.join("vm-unit").join("warn");
        fs::create_dir_all(&dir).unwrap();
        let src = dir.join("warny.c");
        fs::write(&src, "int main(void)\n{\n\tint unused;\n\treturn 0;\n}\n").unwrap();
        let err = guest_program(&env, &src).unwrap_err();
        assert!(
            matches!(&err, VmError::Build { output, .. } if output.contains("unused")),
            "{err}"
        );
    }
}
