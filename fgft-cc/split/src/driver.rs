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
}

pub(crate) fn gather(args: &Options, ann: &Annotations) -> Result<Files, Error> {
    let tree = args.tree.as_deref();
    let (sources, mut headers, inc_dirs): (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>);
    let mut module = args.module.clone();
    if !args.sources.is_empty() {
        headers = Vec::new();
        inc_dirs = Vec::new();
        if args.sources.len() == 1 && args.sources[0].is_dir() {
            let dir = &args.sources[0];
            let mut cs = Vec::new();
            let mut hs = Vec::new();
            let rd = std::fs::read_dir(dir).map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            for e in rd.flatten() {
                let p = e.path();
                match p.extension().and_then(|e| e.to_str()) {
                    Some("c") => cs.push(p),
                    Some("h") => hs.push(p),
                    _ => {}
                }
            }
            cs.sort();
            hs.sort();
            sources = cs;
            headers = hs;
            if module.is_none() {
                module = dir
                    .canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_string()));
            }
        } else {
            for s in &args.sources {
                if !s.is_file() {
                    return Err(Error::Msg(format!(
                        "{}: not a file (give source files, or one directory)",
                        s.display()
                    )));
                }
            }
            sources = args.sources.clone();
        }
    } else if let Some(drv) = &ann.driver {
        let r = drv.resolve(tree, args.kernel_version.as_deref())?;
        sources = r.sources;
        headers = r.headers;
        inc_dirs = r.include_dirs;
        if module.is_none() {
            module = Some(drv.module.clone());
        }
    } else {
        return Err(Error::Msg(
            "no sources: give SOURCES...|DIR, or --annotations with a [driver] section (and --tree)"
                .into(),
        ));
    }
    // Local includes, transitively.
    let mut all: Vec<PathBuf> = Vec::new();
    let mut included_by: Vec<Vec<usize>> = Vec::new();
    let mut queue: Vec<PathBuf> = sources.iter().chain(headers.iter()).cloned().collect();
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
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
        for inc in local_includes(&all[k], &text, &inc_dirs) {
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
    let src_set: BTreeSet<PathBuf> = sources.iter().map(|p| canon(p)).collect();
    let base_dir = sources
        .first()
        .and_then(|p| p.parent())
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let mk = makefile::read_dir(&base_dir);
    let mut files: Vec<DriverFile> = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let is_c = p.extension().and_then(|e| e.to_str()) == Some("c");
        let c = canon(p);
        let role = if is_c && src_set.contains(&c) && included_by[i].is_empty() {
            FileRole::Tu
        } else if is_c {
            FileRole::IncludedC
        } else {
            FileRole::Header
        };
        let rel = p
            .strip_prefix(&base_dir)
            .map(|r| r.to_path_buf())
            .unwrap_or_else(|_| PathBuf::from(p.file_name().unwrap_or_default()));
        let obj = format!("{}", rel.with_extension("o").display());
        let member = mk.as_deref().and_then(|m| makefile::membership(m, &obj));
        if role == FileRole::Tu && module.is_none() {
            if let Some((m, _)) = &member {
                module = Some(m.clone());
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
    let module = module.unwrap_or_else(|| {
        sources
            .first()
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "driver".into())
    });
    // Order: headers first (their records win), then sources as given,
    // then included .c files.
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
    let remap: Vec<usize> = {
        let mut r = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            r[old] = new;
        }
        r
    };
    let mut out_files = Vec::new();
    let mut out_paths = Vec::new();
    for &old in &order {
        let mut f = files[old].clone();
        f.included_by = f.included_by.iter().map(|&j| remap[j]).collect();
        out_files.push(f);
        out_paths.push(all[old].clone());
    }
    if !out_files.iter().any(|f| f.role == FileRole::Tu) {
        return Err(Error::Msg("no C source among the inputs".into()));
    }
    Ok(Files {
        files: out_files,
        paths: out_paths,
        module,
    })
}
