//! Stock modules: `modules.dep` resolution and decompression into a cache.

use crate::{Env, VmError};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One `modules.dep` line: `path: dep dep ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleDep {
    /// Module name, normalized (`-` becomes `_`): `snd_ens1370`.
    pub name: String,
    /// Path relative to `/lib/modules/$KVER`, as written in modules.dep.
    pub path: String,
    /// Paths of the modules it needs, as written (load them last to first).
    pub deps: Vec<String>,
}

/// A parsed `modules.dep`.
#[derive(Debug, Clone, Default)]
pub struct ModulesDep {
    by_name: BTreeMap<String, ModuleDep>,
    name_of_path: BTreeMap<String, String>,
}

/// `kernel/sound/pci/snd-ens1370.ko.xz` -> `snd_ens1370`.
pub(crate) fn module_name(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = base.split(".ko").next().unwrap_or(base);
    stem.replace('-', "_")
}

impl ModulesDep {
    /// Parses the text of a `modules.dep`; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<ModulesDep, VmError> {
        let mut md = ModulesDep::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((path, deps)) = line.split_once(':') else {
                return Err(VmError::ModulesDep {
                    path: origin.to_path_buf(),
                    line: i + 1,
                });
            };
            let path = path.trim();
            if path.is_empty() || !path.contains(".ko") {
                return Err(VmError::ModulesDep {
                    path: origin.to_path_buf(),
                    line: i + 1,
                });
            }
            let name = module_name(path);
            md.name_of_path.insert(path.to_string(), name.clone());
            md.by_name.insert(
                name.clone(),
                ModuleDep {
                    name,
                    path: path.to_string(),
                    deps: deps.split_whitespace().map(str::to_string).collect(),
                },
            );
        }
        Ok(md)
    }

    /// Reads `/lib/modules/<kver>/modules.dep`.
    pub fn load(kver: &str) -> Result<ModulesDep, VmError> {
        let path = PathBuf::from(format!("/lib/modules/{kver}/modules.dep"));
        let text = fs::read_to_string(&path).map_err(|e| VmError::io(&path, e))?;
        ModulesDep::parse(&text, &path)
    }

    /// The entry of a module, by name (`snd-ens1370` or `snd_ens1370`).
    pub fn get(&self, name: &str) -> Option<&ModuleDep> {
        self.by_name.get(&name.replace('-', "_"))
    }

    fn by_path(&self, path: &str) -> Option<&ModuleDep> {
        self.name_of_path
            .get(path)
            .and_then(|n| self.by_name.get(n))
    }
}

/// The named modules and everything they depend on, each once, in an order
/// in which they can be loaded (dependencies first).
pub fn resolve_modules<'a>(
    md: &'a ModulesDep,
    names: &[String],
) -> Result<Vec<&'a ModuleDep>, VmError> {
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for name in names {
        let m = md
            .get(name)
            .ok_or_else(|| VmError::UnknownModule(name.clone()))?;
        visit(md, m, &mut seen, &mut order)?;
    }
    Ok(order)
}

fn visit<'a>(
    md: &'a ModulesDep,
    m: &'a ModuleDep,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<&'a ModuleDep>,
) -> Result<(), VmError> {
    if !seen.insert(m.name.clone()) {
        return Ok(());
    }
    // modules.dep lists dependencies so that the last one loads first.
    for d in m.deps.iter().rev() {
        let dm = md
            .by_path(d)
            .ok_or_else(|| VmError::UnknownModule(d.clone()))?;
        visit(md, dm, seen, order)?;
    }
    order.push(m);
    Ok(())
}

/// `kernel/x/e1000.ko.xz` -> `kernel/x/e1000.ko`.
pub(crate) fn decompressed_path(path: &str) -> String {
    for ext in [".xz", ".gz", ".zst"] {
        if let Some(p) = path.strip_suffix(ext) {
            return p.to_string();
        }
    }
    path.to_string()
}

/// Returns the host path of an uncompressed copy of the stock module at
/// `rel` (relative to `/lib/modules/$KVER`), decompressing it into
/// `<cache>/vm-modules/$KVER/` the first time.
pub(crate) fn uncompressed_module(env: &Env, rel: &str) -> Result<PathBuf, VmError> {
    let src = PathBuf::from(format!("/lib/modules/{}/{rel}", env.kver));
    let dst = env
        .cache
        .join("vm-modules")
        .join(&env.kver)
        .join(decompressed_path(rel));
    if dst.is_file() {
        return Ok(dst);
    }
    let dir = dst.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(dir).map_err(|e| VmError::io(dir, e))?;
    let tmp = dst.with_extension(format!("tmp{}", std::process::id()));
    let tool = if rel.ends_with(".xz") {
        Some("xz")
    } else if rel.ends_with(".gz") {
        Some("gzip")
    } else if rel.ends_with(".zst") {
        Some("zstd")
    } else {
        None
    };
    match tool {
        None => {
            fs::copy(&src, &tmp).map_err(|e| VmError::io(&src, e))?;
        }
        Some(tool) => {
            let out = Command::new(tool)
                .arg("-dc")
                .arg(&src)
                .output()
                .map_err(|source| VmError::Spawn {
                    cmd: format!("{tool} -dc {}", src.display()),
                    source,
                })?;
            if !out.status.success() {
                return Err(VmError::Build {
                    name: rel.to_string(),
                    reason: format!("{tool} -dc {} failed", src.display()),
                    output: String::from_utf8_lossy(&out.stderr).into_owned(),
                });
            }
            fs::write(&tmp, &out.stdout).map_err(|e| VmError::io(&tmp, e))?;
        }
    }
    fs::rename(&tmp, &dst).map_err(|e| VmError::io(&dst, e))?;
    Ok(dst)
}

/// The `modules.dep` text for the given modules, with decompressed paths.
pub(crate) fn guest_modules_dep(mods: &[&ModuleDep]) -> String {
    let mut s = String::new();
    for m in mods {
        s.push_str(&decompressed_path(&m.path));
        s.push(':');
        for d in &m.deps {
            s.push(' ');
            s.push_str(&decompressed_path(d));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "\
kernel/a/snd-pcm.ko.xz: kernel/a/snd-timer.ko.xz kernel/a/snd.ko.xz kernel/soundcore.ko.xz
kernel/a/snd-timer.ko.xz: kernel/a/snd.ko.xz kernel/soundcore.ko.xz
kernel/a/snd.ko.xz: kernel/soundcore.ko.xz
kernel/soundcore.ko.xz:
kernel/b/snd-ens1370.ko.xz: kernel/g/gameport.ko.xz kernel/a/snd-pcm.ko.xz kernel/a/snd-timer.ko.xz kernel/a/snd.ko.xz kernel/soundcore.ko.xz
kernel/g/gameport.ko.xz:
kernel/n/e1000.ko.xz:
";

    fn names(v: &[&ModuleDep]) -> Vec<String> {
        v.iter().map(|m| m.name.clone()).collect()
    }

    #[test]
    fn names_are_normalized() {
        assert_eq!(module_name("kernel/b/snd-ens1370.ko.xz"), "snd_ens1370");
        assert_eq!(module_name("e1000.ko"), "e1000");
        assert_eq!(decompressed_path("k/e1000.ko.xz"), "k/e1000.ko");
        assert_eq!(decompressed_path("k/e1000.ko"), "k/e1000.ko");
    }

    #[test]
    fn dependencies_load_first_once() {
        let md = ModulesDep::parse(DEP, Path::new("modules.dep")).unwrap();
        let order =
            resolve_modules(&md, &["snd-ens1370".to_string(), "snd_pcm".to_string()]).unwrap();
        assert_eq!(
            names(&order),
            [
                "soundcore",
                "snd",
                "snd_timer",
                "snd_pcm",
                "gameport",
                "snd_ens1370"
            ]
        );
        let order = resolve_modules(&md, &["e1000".to_string()]).unwrap();
        assert_eq!(names(&order), ["e1000"]);
        assert_eq!(
            guest_modules_dep(&resolve_modules(&md, &["snd".to_string()]).unwrap()),
            "kernel/soundcore.ko:\nkernel/a/snd.ko: kernel/soundcore.ko\n"
        );
    }

    #[test]
    fn unknown_and_malformed() {
        let md = ModulesDep::parse(DEP, Path::new("modules.dep")).unwrap();
        assert!(matches!(
            resolve_modules(&md, &["nope".to_string()]),
            Err(VmError::UnknownModule(n)) if n == "nope"
        ));
        let broken = "kernel/x.ko.xz: kernel/missing.ko.xz\n";
        let md = ModulesDep::parse(broken, Path::new("m")).unwrap();
        assert!(matches!(
            resolve_modules(&md, &["x".to_string()]),
            Err(VmError::UnknownModule(p)) if p == "kernel/missing.ko.xz"
        ));
        let err = ModulesDep::parse("ok.ko:\nno colon here\n", Path::new("m")).unwrap_err();
        assert_eq!(err.to_string(), "m:2: malformed modules.dep line");
    }

    #[test]
    fn host_modules_dep_resolves_ens1370() {
        let env = Env::load().expect("fgft environment (scripts/setup.sh)");
        let md = ModulesDep::load(&env.kver).unwrap();
        let order = resolve_modules(&md, &["snd-ens1370".to_string()]).unwrap();
        let n = names(&order);
        assert_eq!(n.last().map(String::as_str), Some("snd_ens1370"));
        let pos = |x: &str| n.iter().position(|m| m == x).unwrap();
        assert!(pos("soundcore") < pos("snd") && pos("snd") < pos("snd_pcm"));
    }
}
