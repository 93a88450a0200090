//! The driver's files: the sources given (or the sidecar's `[driver]`
//! section resolved against the tree), the local files they `#include`
//! (transitively), each file's role, and the module name.

use crate::diag::Error;
use crate::plan::{self, DriverFile, FileRole};
use crate::Options;
use fgft_annotations::Annotations;
use fgft_base::{includes, makefile};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Local `#include "x"` targets of a C file that exist (next to it, else in
/// `dirs`; an unclosed quote names the rest of the line).
fn local_includes(path: &Path, text: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
    includes::directives(text)
        .into_iter()
        .filter_map(|i| includes::resolve(path, i.name, dirs))
        .collect()
}

pub(crate) fn read(p: &Path) -> Result<String, Error> {
    // A FIFO or device would block or never end: only regular files are read.
    let meta = std::fs::metadata(p).map_err(|source| Error::Io {
        path: p.to_path_buf(),
        source,
    })?;
    if let Some(kind) = fgft_base::walk::special_kind(&meta.file_type()) {
        return Err(Error::Msg(format!(
            "{}: {kind}, not a regular file: fgft reads only regular files",
            p.display()
        )));
    }
    std::fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|source| Error::Io {
            path: p.to_path_buf(),
            source,
        })
}

pub(crate) struct Files {
    pub files: Vec<DriverFile>,
    pub paths: Vec<PathBuf>,
    pub module: String,
    /// Entries of a source directory that were not read (special files).
    pub skipped: Vec<fgft_base::walk::Skipped>,
}

/// The files named by the options or the sidecar, before includes.
struct Given {
    sources: Vec<PathBuf>,
    headers: Vec<PathBuf>,
    /// Extra include directories (the sidecar's).
    inc_dirs: Vec<PathBuf>,
    module: Option<String>,
    /// The source directory's name, the module name of last resort.
    dir_name: Option<String>,
    /// Entries of the source directory that were not read.
    skipped: Vec<fgft_base::walk::Skipped>,
}

/// Every file of the driver, its role and the module name.
pub(crate) fn gather(args: &Options, ann: &Annotations) -> Result<Files, Error> {
    let given = given(args, ann)?;
    let (all, included_by) = with_includes(&given)?;
    let base_dir = given
        .sources
        .first()
        .and_then(|p| p.parent())
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let mut module = given.module.clone();
    let files = describe(args, &given, &all, &included_by, &base_dir, &mut module);
    let from_flag = args.module.is_some();
    let module = module
        .or_else(|| given.dir_name.clone())
        .unwrap_or_else(|| {
            given
                .sources
                .first()
                .and_then(|p| p.file_stem())
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "driver".into())
        });
    check_module_name(&module, from_flag)?;
    let (files, paths) = ordered(&given.sources, files, all);
    if !files.iter().any(|f| f.role == FileRole::Tu) {
        return Err(crate::diag::sources_error(
            &args.sources,
            "no C source (.c file) among the inputs".into(),
            "name the driver's .c files, or the directory that holds them",
        ));
    }
    Ok(Files {
        files,
        paths,
        module,
        skipped: given.skipped,
    })
}

/// Longest module name: the kernel's `MODULE_NAME_LEN` (56 with its NUL)
/// less the `_fgft` and `_sfi` of the two modules fgft builds.
pub const MAX_MODULE_NAME: usize = 50;

/// A module name Kbuild and the kernel accept: ASCII letters, digits, `_`
/// and `-`, not starting with `-`, at most [`MAX_MODULE_NAME`] bytes.
pub fn check_module_name(name: &str, from_flag: bool) -> Result<(), Error> {
    let bad = name
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_alphanumeric() || c == '_' || (c == '-' && i > 0)));
    let why = if name.is_empty() {
        Some("it is empty".to_string())
    } else if let Some((_, c)) = bad {
        Some(format!(
            "it holds `{c}`, which Kbuild does not take in a module name"
        ))
    } else if name.len() > MAX_MODULE_NAME {
        Some(format!(
            "it is {} bytes long, more than the {MAX_MODULE_NAME} the kernel's module names allow with fgft's suffixes",
            name.len()
        ))
    } else {
        None
    };
    let Some(why) = why else { return Ok(()) };
    let text = format!("--module {name}\n");
    Err(Error::Located(vec![crate::Located {
        path: PathBuf::from("<command line>"),
        range: 9..9 + name.len().max(1),
        text,
        message: format!("module name `{name}` is not valid: {why}"),
        label: if from_flag {
            "given here".into()
        } else {
            "taken from the sources' directory or file name".into()
        },
        notes: vec![
            "give a name of ASCII letters, digits, `_` and `-` with --module NAME (e.g. --module my_drv)"
                .into(),
        ],
        warning: false,
    }]))
}

fn canon(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The sources and headers: the files or the directory given, else the
/// sidecar's `[driver]` section resolved against the tree.
fn given(args: &Options, ann: &Annotations) -> Result<Given, Error> {
    // The name: --module, then the sidecar's, then the Makefile's (read
    // later), then the directory's or the first source's.
    let module = args
        .module
        .clone()
        .or_else(|| ann.driver.as_ref().map(|d| d.module.clone()));
    if !args.sources.is_empty() {
        if args.sources.len() == 1 && args.sources[0].is_dir() {
            let dir = &args.sources[0];
            let (sources, headers, skipped) = dir_files(dir)?;
            return Ok(Given {
                sources,
                headers,
                inc_dirs: Vec::new(),
                module,
                dir_name: dir
                    .canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_string())),
                skipped,
            });
        }
        for s in &args.sources {
            let kind = match std::fs::metadata(s) {
                Ok(m) if m.is_file() => continue,
                Ok(m) if m.is_dir() => "a directory among several sources".to_string(),
                Ok(m) => fgft_base::walk::special_kind(&m.file_type())
                    .map_or("not a regular file".into(), |k| {
                        format!("{k}, not a regular file")
                    }),
                Err(e) => e.to_string(),
            };
            return Err(crate::diag::arg_error(
                None,
                &s.display().to_string(),
                format!("source {}: {kind}", s.display()),
                "give regular source files, or one directory",
            ));
        }
        return Ok(Given {
            sources: args.sources.clone(),
            headers: Vec::new(),
            inc_dirs: Vec::new(),
            module,
            dir_name: None,
            skipped: Vec::new(),
        });
    }
    let Some(drv) = &ann.driver else {
        return Err(Error::Msg(
            "no sources: give SOURCES...|DIR, or --annotations with a [driver] section (and --tree)"
                .into(),
        ));
    };
    let r = drv.resolve(args.tree.as_deref(), args.kernel_version.as_deref())?;
    Ok(Given {
        sources: r.sources,
        headers: r.headers,
        inc_dirs: r.include_dirs,
        module,
        dir_name: None,
        skipped: Vec::new(),
    })
}

/// The `.c` and `.h` files of a directory, sorted, and what was not read
/// (special files: a FIFO named `x.c` would block).
type DirFiles = (Vec<PathBuf>, Vec<PathBuf>, Vec<fgft_base::walk::Skipped>);

fn dir_files(dir: &Path) -> Result<DirFiles, Error> {
    let mut cs = Vec::new();
    let mut hs = Vec::new();
    let mut skipped = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in rd.flatten() {
        let p = e.path();
        let ext = p.extension().and_then(|e| e.to_str());
        if !matches!(ext, Some("c" | "h")) {
            continue;
        }
        let kind = std::fs::metadata(&p).ok().and_then(|m| {
            if m.is_dir() {
                Some("a directory")
            } else {
                fgft_base::walk::special_kind(&m.file_type())
            }
        });
        if let Some(kind) = kind {
            skipped.push(fgft_base::walk::Skipped {
                path: p,
                why: format!("{kind}, not a regular file: not read"),
            });
            continue;
        }
        match ext {
            Some("c") => cs.push(p),
            _ => hs.push(p),
        }
    }
    cs.sort();
    hs.sort();
    Ok((cs, hs, skipped))
}

/// The given files and the local files they include, transitively, with
/// who includes each.
fn with_includes(given: &Given) -> Result<(Vec<PathBuf>, Vec<Vec<usize>>), Error> {
    let mut all: Vec<PathBuf> = Vec::new();
    let mut included_by: Vec<Vec<usize>> = Vec::new();
    let mut queue: Vec<PathBuf> = given
        .sources
        .iter()
        .chain(given.headers.iter())
        .cloned()
        .collect();
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(p) = queue.pop() {
        let c = canon(&p);
        if seen.contains(&c) {
            continue;
        }
        seen.push(c);
        all.push(p);
        included_by.push(Vec::new());
    }
    let mut k = 0;
    while k < all.len() {
        let text = read(&all[k])?;
        for inc in local_includes(&all[k], &text, &given.inc_dirs) {
            let c = canon(&inc);
            match seen.iter().position(|s| *s == c) {
                Some(j) => {
                    if !included_by[j].contains(&k) {
                        included_by[j].push(k);
                    }
                }
                None => {
                    seen.push(c);
                    all.push(inc);
                    included_by.push(vec![k]);
                }
            }
        }
        k += 1;
    }
    Ok((all, included_by))
}

/// Each file's role, paths and Kbuild condition; the module name from
/// the Makefile when nothing named it.
fn describe(
    args: &Options,
    given: &Given,
    all: &[PathBuf],
    included_by: &[Vec<usize>],
    base_dir: &Path,
    module: &mut Option<String>,
) -> Vec<DriverFile> {
    let tree = args.tree.as_deref();
    let src_set: BTreeSet<PathBuf> = given.sources.iter().map(|p| canon(p)).collect();
    let mk = makefile::read_dir(base_dir);
    let mut files: Vec<DriverFile> = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let is_c = p.extension().and_then(|e| e.to_str()) == Some("c");
        let role = if is_c && src_set.contains(&canon(p)) && included_by[i].is_empty() {
            FileRole::Tu
        } else if is_c {
            FileRole::IncludedC
        } else {
            FileRole::Header
        };
        let rel = p
            .strip_prefix(base_dir)
            .map(|r| r.to_path_buf())
            .unwrap_or_else(|_| PathBuf::from(p.file_name().unwrap_or_default()));
        let obj = format!("{}", rel.with_extension("o").display());
        let member = mk.as_deref().and_then(|m| makefile::membership(m, &obj));
        if role == FileRole::Tu && module.is_none() {
            if let Some((m, _)) = &member {
                *module = Some(m.clone());
            }
        }
        // Shown relative to the tree, else from the driver's directory.
        let shown = match tree.filter(|t| p.starts_with(t)) {
            Some(_) => plan::shown_path(p, tree),
            None => plan::shown_path(p, base_dir.parent()),
        };
        files.push(DriverFile {
            role,
            rel,
            shown,
            config: member.and_then(|m| m.1),
            included_by: included_by[i].clone(),
        });
    }
    files
}

/// Headers first (their records win), then sources as given, then
/// included .c files; `included_by` renumbered to the new order.
fn ordered(
    sources: &[PathBuf],
    files: Vec<DriverFile>,
    all: Vec<PathBuf>,
) -> (Vec<DriverFile>, Vec<PathBuf>) {
    let mut order: Vec<usize> = (0..all.len()).collect();
    let rank = |f: &DriverFile| match f.role {
        FileRole::Header => 0,
        FileRole::Tu => 1,
        FileRole::IncludedC => 2,
    };
    let src_pos = |i: usize| {
        sources
            .iter()
            .position(|s| canon(s) == canon(&all[i]))
            .unwrap_or(usize::MAX)
    };
    order.sort_by_key(|&i| (rank(&files[i]), src_pos(i), files[i].rel.clone()));
    let mut remap = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        remap[old] = new;
    }
    let mut out_files = Vec::new();
    let mut out_paths = Vec::new();
    for &old in &order {
        let mut f = files[old].clone();
        f.included_by = f.included_by.iter().map(|&j| remap[j]).collect();
        out_files.push(f);
        out_paths.push(all[old].clone());
    }
    (out_files, out_paths)
}
