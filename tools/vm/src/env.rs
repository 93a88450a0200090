//! The build and boot environment, from `scripts/setup.sh --print-env`.

use crate::VmError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Paths of the kernels, sources and caches fgft works with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// 6.12 headers (`make -C KDIR M=...`).
    pub kdir: PathBuf,
    /// 6.1 headers.
    pub kdir61: PathBuf,
    /// The kernel the VMs boot (`/boot/vmlinuz-$KVER`).
    pub kernel_image: PathBuf,
    /// Release of that kernel (`6.12.117+deb12-amd64`).
    pub kver: String,
    /// Unpacked linux-source-6.12 (read-only).
    pub src612: PathBuf,
    /// Unpacked linux-source-6.1 (read-only).
    pub src61: PathBuf,
    /// Cache outside git (`$FGFT_CACHE`, default `~/.cache/fgft`).
    pub cache: PathBuf,
    /// Root of the fgft repository.
    pub repo_root: PathBuf,
    /// Cargo's target directory (`$CARGO_TARGET_DIR` or `<repo>/target`).
    pub target_dir: PathBuf,
    /// The PREEMPT_RT flavour of 6.12: its headers, release and image
    /// ([`Env::rt`] makes them the environment's kernel).
    pub kdir_rt: PathBuf,
    pub kver_rt: String,
    pub kernel_image_rt: PathBuf,
}

static ENV: OnceLock<Result<Env, String>> = OnceLock::new();

impl Env {
    /// Runs `bash <repo>/scripts/setup.sh --print-env` once per process and
    /// parses its `export NAME=value` lines.
    pub fn load() -> Result<Env, VmError> {
        ENV.get_or_init(|| load_uncached().map_err(|e| e.to_string()))
            .clone()
            .map_err(VmError::Env)
    }

    /// The same environment with Debian's 6.12 PREEMPT_RT kernel as the one
    /// that modules are built against (`kdir`) and VMs boot (`kver`,
    /// `kernel_image`). Builds, logs and guest programs go to
    /// `<target>/rt/`, apart from the stock kernel's.
    pub fn rt(&self) -> Env {
        Env {
            kdir: self.kdir_rt.clone(),
            kver: self.kver_rt.clone(),
            kernel_image: self.kernel_image_rt.clone(),
            target_dir: self.target_dir.join("rt"),
            ..self.clone()
        }
    }

    /// Whether this environment's kernel is the PREEMPT_RT one.
    pub fn is_rt(&self) -> bool {
        self.kver == self.kver_rt
    }
}

fn repo_root() -> PathBuf {
    if let Some(r) = std::env::var_os("FGFT_REPO") {
        return PathBuf::from(r);
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    root.canonicalize().unwrap_or(root)
}

fn load_uncached() -> Result<Env, VmError> {
    let repo_root = repo_root();
    let script = repo_root.join("scripts/setup.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("--print-env")
        .output()
        .map_err(|source| VmError::Spawn {
            cmd: format!("bash {} --print-env", script.display()),
            source,
        })?;
    if !out.status.success() {
        return Err(VmError::Env(format!(
            "{} --print-env failed ({}):\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let vars = parse_exports(&String::from_utf8_lossy(&out.stdout));
    let get = |k: &str| -> Result<String, VmError> {
        vars.get(k).cloned().ok_or_else(|| {
            VmError::Env(format!("{} --print-env did not set {k}", script.display()))
        })
    };
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => {
            let t = PathBuf::from(t);
            if t.is_absolute() {
                t
            } else {
                repo_root.join(t)
            }
        }
        None => repo_root.join("target"),
    };
    Ok(Env {
        kdir: get("KDIR")?.into(),
        kdir61: get("KDIR61")?.into(),
        kernel_image: get("KERNEL_IMAGE")?.into(),
        kver: get("KVER")?,
        src612: get("SRC612")?.into(),
        src61: get("SRC61")?.into(),
        cache: get("FGFT_CACHE")?.into(),
        kdir_rt: get("KDIR_RT")?.into(),
        kver_rt: get("KVER_RT")?,
        kernel_image_rt: get("KERNEL_IMAGE_RT")?.into(),
        repo_root,
        target_dir,
    })
}

/// Parses `export NAME=value` lines (values unquoted or in single or double
/// quotes); other lines are ignored.
pub(crate) fn parse_exports(text: &str) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("export ") else {
            continue;
        };
        let Some((k, v)) = rest.split_once('=') else {
            continue;
        };
        let v = v.trim();
        let v = v
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(v);
        vars.insert(k.trim().to_string(), v.to_string());
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_are_parsed() {
        let v = parse_exports(
            "setup: noise\nexport KDIR=/usr/src/x\nexport KVER='6.12'\nexport A=\"b c\"\nexport BAD\n",
        );
        assert_eq!(v.get("KDIR").map(String::as_str), Some("/usr/src/x"));
        assert_eq!(v.get("KVER").map(String::as_str), Some("6.12"));
        assert_eq!(v.get("A").map(String::as_str), Some("b c"));
        assert_eq!(v.len(), 3);
    }
}
