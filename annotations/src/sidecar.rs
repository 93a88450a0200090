//! The sidecar TOML format (see README.md for the documentation).

use fgft_base::ident;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::validate::{self, KINDS};
use crate::{
    Access, AnnotError, Annotations, DriverInfo, FnRef, Hint, HintKind, HintSource, HintTarget,
    KeyToDev, Loc, Pattern, SourceBase, SourceFile, VersionFiles,
};

type S = Spanned<String>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSidecar {
    driver: Option<Spanned<RawDriver>>,
    isolate: Option<RawIsolate>,
    #[serde(default)]
    hint: Vec<Spanned<RawHint>>,
    checkpoint: Option<RawCheckpoint>,
    kernel_api: Option<RawKernelApi>,
    recovery: Option<RawRecovery>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawRecovery {
    #[serde(default)]
    retry: Vec<S>,
    #[serde(default)]
    error: Vec<S>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawDriver {
    name: S,
    module: Option<S>,
    base: Option<S>,
    tree_version: Option<S>,
    sources: Spanned<Vec<S>>,
    #[serde(default)]
    headers: Vec<S>,
    #[serde(default)]
    include_dirs: Vec<S>,
    #[serde(default)]
    version: BTreeMap<String, Spanned<RawVersion>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawVersion {
    sources: Option<Vec<S>>,
    headers: Option<Vec<S>>,
    include_dirs: Option<Vec<S>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawIsolate {
    #[serde(default)]
    entry: Vec<S>,
    #[serde(default)]
    exclude: Vec<S>,
    #[serde(default)]
    unchecked_reads: Vec<S>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawHint {
    #[serde(rename = "struct")]
    strukt: Option<S>,
    field: Option<S>,
    function: Option<S>,
    param: Option<S>,
    kind: S,
    len: Option<S>,
    #[serde(rename = "type")]
    ty: Option<S>,
    outer: Option<S>,
    member: Option<S>,
    rights: Option<S>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawCheckpoint {
    checkpoint: Option<S>,
    restore: Option<S>,
    key_to_dev: Option<S>,
    none: Option<Spanned<bool>>,
    #[serde(default)]
    key: Vec<Spanned<RawKey>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawKey {
    entries: Vec<S>,
    key_to_dev: S,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawKernelApi {
    #[serde(default)]
    pure: Vec<S>,
}

/// Parses sidecar `text` as if read from the file `name`: the entry point
/// for fuzzing, and for sidecars that are not on disk. Relative paths of a
/// `base = "sidecar"` driver are taken relative to `name`'s directory.
pub fn parse_sidecar_str(name: &str, text: &str) -> Result<Annotations, AnnotError> {
    parse(Path::new(name), text)
}

struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn loc(&self, span: Range<usize>) -> Loc {
        Loc::from_span(self.path, self.text, span.start, span.end)
    }

    fn at(&self, s: &S) -> Loc {
        self.loc(s.span())
    }

    fn invalid(&self, span: Range<usize>, msg: String) -> AnnotError {
        AnnotError::Invalid {
            loc: self.loc(span),
            msg,
        }
    }

    /// The `[table]` header in force at byte `at`, for messages.
    fn table_at(&self, at: usize) -> String {
        let at = at.min(self.text.len());
        let eol = self.text[at..]
            .find('\n')
            .map_or(self.text.len(), |k| at + k);
        let upto = &self.text[..eol];
        upto.lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('['))
            .map(|l| l.split('#').next().unwrap_or(l).trim().to_string())
            .unwrap_or_else(|| "the top level".to_string())
    }

    fn toml_error(&self, e: toml::de::Error) -> AnnotError {
        let span = e.span().unwrap_or(0..0);
        let msg = e.message().trim().to_string();
        let loc = self.loc(span.clone());
        if let Some(rest) = msg.strip_prefix("unknown field `") {
            let (key, tail) = rest.split_once('`').unwrap_or((rest, ""));
            let expected = tail
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            return AnnotError::UnknownKey {
                loc,
                key: key.to_string(),
                expected,
            };
        }
        if let Some(rest) = msg.strip_prefix("missing field `") {
            let key = rest.split('`').next().unwrap_or(rest);
            return AnnotError::MissingKey {
                loc,
                key: key.to_string(),
                table: self.table_at(span.start),
            };
        }
        AnnotError::Toml { loc, msg }
    }
}

pub(crate) fn parse(path: &Path, text: &str) -> Result<Annotations, AnnotError> {
    let cx = Ctx { path, text };
    let raw: RawSidecar = toml::from_str(text).map_err(|e| cx.toml_error(e))?;
    let mut out = Annotations::default();
    if let Some(d) = raw.driver {
        out.driver = Some(driver(&cx, d)?);
    }
    if let Some(iso) = raw.isolate {
        for e in &iso.entry {
            let p = Pattern::new(e.get_ref(), cx.at(e))?;
            if !out.isolate.iter().any(|q| q.text() == p.text()) {
                out.isolate.push(p);
            }
        }
        for e in &iso.exclude {
            let p = Pattern::new(e.get_ref(), cx.at(e))?;
            if !out.exclude.iter().any(|q| q.text() == p.text()) {
                out.exclude.push(p);
            }
        }
        for e in &iso.unchecked_reads {
            let p = Pattern::new(e.get_ref(), cx.at(e))?;
            if !out.unchecked_reads.iter().any(|q| q.text() == p.text()) {
                out.unchecked_reads.push(p);
            }
        }
    }
    for h in raw.hint {
        let h = hint(&cx, h)?;
        validate::add_hint(&mut out.hints, h)?;
    }
    if let Some(c) = raw.checkpoint {
        let f = |s: Option<S>, what: &str| -> Result<Option<FnRef>, AnnotError> {
            s.map(|s| {
                let loc = cx.at(&s);
                let name = validate::ident(s.get_ref(), &loc, what)?;
                Ok(FnRef { name, loc })
            })
            .transpose()
        };
        out.checkpoint = f(c.checkpoint, "checkpoint function")?;
        out.restore = f(c.restore, "restore function")?;
        if let Some(k) = c.key_to_dev {
            let loc = cx.at(&k);
            out.key_to_dev = Some(KeyToDev {
                entries: Vec::new(),
                expr: validate::key_expr(k.get_ref(), &loc)?,
                loc,
            });
        }
        if let Some(n) = c.none {
            if *n.get_ref() {
                let loc = cx.loc(n.span());
                if out.checkpoint.is_some() || out.restore.is_some() {
                    return Err(AnnotError::Invalid {
                        loc,
                        msg: "`none = true` with a checkpoint or restore function".into(),
                    });
                }
                out.no_checkpoint = Some(loc);
            }
        }
        for k in c.key {
            let span = k.span();
            let k = k.into_inner();
            if k.entries.is_empty() {
                return Err(AnnotError::Invalid {
                    loc: cx.loc(span),
                    msg: "[[checkpoint.key]] needs at least one entry pattern".into(),
                });
            }
            let mut entries = Vec::new();
            for e in &k.entries {
                entries.push(Pattern::new(e.get_ref(), cx.at(e))?);
            }
            let loc = cx.at(&k.key_to_dev);
            out.key_to_dev_for.push(KeyToDev {
                entries,
                expr: validate::key_expr(k.key_to_dev.get_ref(), &loc)?,
                loc,
            });
        }
    }
    if let Some(r) = raw.recovery {
        for (list, out) in [(&r.retry, &mut out.retry), (&r.error, &mut out.no_retry)] {
            for e in list {
                let p = Pattern::new(e.get_ref(), cx.at(e))?;
                if !out.iter().any(|q| q.text() == p.text()) {
                    out.push(p);
                }
            }
        }
    }
    if let Some(k) = raw.kernel_api {
        for p in &k.pure {
            let name = validate::ident(p.get_ref(), &cx.at(p), "kernel function")?;
            if !out.pure_apis.contains(&name) {
                out.pure_apis.push(name);
            }
        }
    }
    Ok(out)
}

fn module_name(cx: &Ctx<'_>, s: &S, what: &str) -> Result<String, AnnotError> {
    let v = s.get_ref();
    if !v.is_empty() && v.chars().all(|c| ident::is_char(c) || c == '-') {
        Ok(v.clone())
    } else {
        Err(cx.invalid(
            s.span(),
            format!("{what} `{v}` may hold only letters, digits, `_` and `-`"),
        ))
    }
}

fn version_string(cx: &Ctx<'_>, v: &str, span: Range<usize>) -> Result<String, AnnotError> {
    let ok = v.split('.').count() == 2
        && v.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if ok {
        Ok(v.to_string())
    } else {
        Err(cx.invalid(
            span,
            format!("kernel version `{v}` is not of the form MAJOR.MINOR (e.g. \"6.12\")"),
        ))
    }
}

fn file_list(
    cx: &Ctx<'_>,
    list: &[S],
    ext: Option<&str>,
    what: &str,
) -> Result<Vec<SourceFile>, AnnotError> {
    let mut out: Vec<SourceFile> = Vec::new();
    for s in list {
        let v = s.get_ref();
        let p = PathBuf::from(v);
        let escapes = p
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
        if v.is_empty() || escapes {
            return Err(cx.invalid(
                s.span(),
                format!("{what} `{v}` must be a relative path inside the tree, without `..`"),
            ));
        }
        if let Some(ext) = ext {
            let got = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !ext.split('|').any(|e| e == got) {
                let want = ext.replace('|', " or .");
                return Err(cx.invalid(s.span(), format!("{what} `{v}` is not a .{want} file")));
            }
        }
        if let Some(prev) = out.iter().find(|f| f.path == p) {
            return Err(AnnotError::Conflict {
                loc: cx.at(s),
                msg: format!("{what} `{v}` is listed twice"),
                previous: Box::new(prev.loc.clone()),
            });
        }
        out.push(SourceFile {
            path: p,
            loc: cx.at(s),
        });
    }
    Ok(out)
}

fn driver(cx: &Ctx<'_>, d: Spanned<RawDriver>) -> Result<DriverInfo, AnnotError> {
    let span = d.span();
    let d = d.into_inner();
    let name = module_name(cx, &d.name, "driver name")?;
    let module = match &d.module {
        Some(m) => module_name(cx, m, "module name")?,
        None => name.clone(),
    };
    let base = match d.base.as_ref().map(|b| (b.get_ref().as_str(), b.span())) {
        None | Some(("tree", _)) => SourceBase::Tree,
        Some(("sidecar", _)) => {
            let dir = cx.path.parent().map(Path::to_path_buf).unwrap_or_default();
            SourceBase::Sidecar(if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            })
        }
        Some((other, sp)) => {
            return Err(cx.invalid(sp, format!("base `{other}` is not one of: tree, sidecar")))
        }
    };
    let tree_version = d
        .tree_version
        .as_ref()
        .map(|v| version_string(cx, v.get_ref(), v.span()))
        .transpose()?;
    let sources = file_list(cx, d.sources.get_ref(), Some("c"), "source")?;
    if sources.is_empty() {
        return Err(cx.invalid(d.sources.span(), "`sources` lists no file".into()));
    }
    let headers = file_list(cx, &d.headers, Some("h|c"), "header")?;
    let include_dirs = file_list(cx, &d.include_dirs, None, "include dir")?;
    let mut versions = BTreeMap::new();
    for (k, v) in d.version {
        let vspan = v.span();
        let key = version_string(cx, &k, vspan.clone())?;
        let v = v.into_inner();
        let vf = VersionFiles {
            sources: v
                .sources
                .as_deref()
                .map(|l| file_list(cx, l, Some("c"), "source"))
                .transpose()?,
            headers: v
                .headers
                .as_deref()
                .map(|l| file_list(cx, l, Some("h|c"), "header"))
                .transpose()?,
            include_dirs: v
                .include_dirs
                .as_deref()
                .map(|l| file_list(cx, l, None, "include dir"))
                .transpose()?,
        };
        if vf.sources.as_ref().is_some_and(Vec::is_empty) {
            return Err(cx.invalid(vspan, format!("version {key}: `sources` lists no file")));
        }
        versions.insert(key, vf);
    }
    Ok(DriverInfo {
        name,
        module,
        base,
        tree_version,
        sources,
        headers,
        include_dirs,
        versions,
        loc: cx.loc(span),
    })
}

fn hint(cx: &Ctx<'_>, h: Spanned<RawHint>) -> Result<Hint, AnnotError> {
    let span = h.span();
    let h = h.into_inner();
    let hloc = cx.loc(span.clone());
    let missing = |key: &str| AnnotError::MissingKey {
        loc: hloc.clone(),
        key: key.to_string(),
        table: "[[hint]]".to_string(),
    };
    let target = match (&h.strukt, &h.field, &h.function, &h.param) {
        (Some(s), Some(f), None, None) => HintTarget::Field {
            strukt: validate::struct_name(s.get_ref(), &cx.at(s))?,
            field: validate::ident(f.get_ref(), &cx.at(f), "field")?,
        },
        (None, None, Some(fun), Some(p)) => HintTarget::Param {
            function: validate::ident(fun.get_ref(), &cx.at(fun), "function")?,
            param: validate::ident(p.get_ref(), &cx.at(p), "parameter")?,
        },
        (Some(_), None, None, None) => return Err(missing("field")),
        (None, Some(_), None, None) => return Err(missing("struct")),
        (None, None, Some(_), None) => return Err(missing("param")),
        (None, None, None, Some(_)) => return Err(missing("function")),
        (None, None, None, None) => {
            return Err(cx.invalid(
                span,
                "a hint needs `struct` and `field`, or `function` and `param`".into(),
            ))
        }
        _ => {
            return Err(cx.invalid(
                span,
                "a hint is on a struct field (`struct`, `field`) or on a parameter \
                 (`function`, `param`), not both"
                    .into(),
            ))
        }
    };
    let kind_name = h.kind.get_ref().as_str();
    if !KINDS.contains(&kind_name) {
        return Err(cx.invalid(
            h.kind.span(),
            format!(
                "unknown hint kind `{kind_name}`; expected one of: {}",
                KINDS.join(", ")
            ),
        ));
    }
    // Keys that only some kinds take.
    let extra: [(&str, &Option<S>, &[&str]); 5] = [
        ("len", &h.len, &["blob", "shared"]),
        ("rights", &h.rights, &["shared"]),
        ("type", &h.ty, &["opaque"]),
        ("outer", &h.outer, &["container"]),
        ("member", &h.member, &["container"]),
    ];
    for (key, val, kinds) in extra {
        if let Some(v) = val {
            if !kinds.contains(&kind_name) {
                return Err(cx.invalid(
                    v.span(),
                    format!(
                        "`{key}` applies only to kind = {}, not to kind = \"{kind_name}\"",
                        kinds
                            .iter()
                            .map(|k| format!("\"{k}\""))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ),
                ));
            }
        }
    }
    let kind = match kind_name {
        "nullterm" => HintKind::NullTerm,
        "noderef" => HintKind::NoDeref,
        "recursive" => HintKind::Recursive,
        "blob" => {
            let l = h.len.as_ref().ok_or_else(|| missing("len"))?;
            HintKind::Blob {
                len: validate::c_expr(l.get_ref(), &cx.at(l))?,
            }
        }
        "shared" => {
            let l = h.len.as_ref().ok_or_else(|| missing("len"))?;
            let rights = match h.rights.as_ref().map(|r| (r.get_ref().as_str(), r.span())) {
                None | Some(("rw", _)) => Access::ReadWrite,
                Some(("r", _)) => Access::Read,
                Some((other, sp)) => {
                    return Err(cx.invalid(sp, format!("rights `{other}` is not one of: r, rw")))
                }
            };
            HintKind::Shared {
                len: validate::len_expr(l.get_ref(), &cx.at(l), "shared")?,
                rights,
            }
        }
        "opaque" => {
            let t = h.ty.as_ref().ok_or_else(|| missing("type"))?;
            HintKind::Opaque {
                ty: validate::c_type(t.get_ref(), &cx.at(t))?,
            }
        }
        _ => {
            let o = h.outer.as_ref().ok_or_else(|| missing("outer"))?;
            let m = h.member.as_ref().ok_or_else(|| missing("member"))?;
            HintKind::Container {
                outer: validate::struct_name(o.get_ref(), &cx.at(o))?,
                member: validate::member_path(m.get_ref(), &cx.at(m))?,
            }
        }
    };
    Ok(Hint {
        target,
        kind,
        loc: hloc,
        source: HintSource::Annotation,
    })
}
