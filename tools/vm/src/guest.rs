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
/// `fgft-pkt`), built static. Returns the host path of the binary; put it in
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
    let text = fs::read(src).map_err(|e| VmError::io(src, e))?;
    let mut h = fnv1a(&text, FNV_OFFSET);
    h = fnv1a(CFLAGS.join(" ").as_bytes(), h);
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
        .args(CFLAGS)
        .arg("-o")
        .arg(&tmp)
        .arg(src)
        .output()
        .map_err(|source| VmError::Spawn {
            cmd: format!(
                "gcc {} -o {} {}",
                CFLAGS.join(" "),
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
        for tool in ["fgft-ethtool", "fgft-pkt"] {
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
