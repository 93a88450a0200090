//! `contracts.toml`: the kernel's interface contracts, written once.
//!
//! Job: state how the kernel hands memory to a slot's parameters
//! (`ethtool_ops.get_regs` gets `regs->len` bytes) and how a kernel
//! structure sizes what its members point to (`ethtool_rxfh_param.indir`),
//! and turn them into hints on the driver functions stored in those slots.
//!
//! Invariants: a contract never replaces a hint of the driver's own on the
//! same parameter or member; a contract whose length names a slot the
//! driver does not fill (`$fn(ethtool_ops.get_sset_count)`) does not apply;
//! unknown keys, kinds and parameter numbers are located table errors.

use fgft_annotations::{Access, Annotations, Hint, HintKind, HintSource, HintTarget, Loc};
use fgft_facts::program::{FileId, Program};
use fgft_facts::slots::Root;
use fgft_parse::tables::{self, TableDirs, TableSource};
use fgft_parse::ParseError;
use std::path::Path;

pub const TABLE_NAME: &str = "contracts.toml";
const BUILTIN: &str = include_str!("../../../tables/contracts.toml");

/// How a contract marshals its parameter or member: a hint kind whose
/// length may still hold `$N` and `$fn(S.F)`.
#[derive(Debug, Clone)]
struct Contract {
    kind: HintKind,
    loc: Loc,
}

#[derive(Debug, Clone)]
struct ParamContract {
    /// `STRUCT.FIELD`.
    slot: String,
    /// 1-based.
    param: usize,
    c: Contract,
}

#[derive(Debug, Clone)]
struct MemberContract {
    strukt: String,
    field: String,
    c: Contract,
}

/// Every contract, built in and extended.
#[derive(Debug, Clone, Default)]
pub struct Contracts {
    params: Vec<ParamContract>,
    members: Vec<MemberContract>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    param: Vec<RawParam>,
    #[serde(default)]
    member: Vec<RawMember>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParam {
    slot: toml::Spanned<String>,
    param: usize,
    #[serde(flatten)]
    how: RawHow,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMember {
    #[serde(rename = "struct")]
    strukt: toml::Spanned<String>,
    field: String,
    #[serde(flatten)]
    how: RawHow,
}

#[derive(serde::Deserialize)]
struct RawHow {
    kind: String,
    len: Option<String>,
    #[serde(rename = "type")]
    ty: Option<String>,
    rights: Option<String>,
    #[allow(dead_code)]
    why: Option<String>,
}

fn err(src: &TableSource, span: std::ops::Range<usize>, message: String) -> ParseError {
    ParseError::Table {
        path: src.display(TABLE_NAME),
        text: src.text.clone(),
        range: Some(span),
        message,
    }
}

fn kind_of(
    src: &TableSource,
    span: std::ops::Range<usize>,
    how: &RawHow,
) -> Result<HintKind, ParseError> {
    let need = |what: &str, v: &Option<String>| {
        v.clone().ok_or_else(|| {
            err(
                src,
                span.clone(),
                format!("kind `{}` needs `{what}`", how.kind),
            )
        })
    };
    let kind = match how.kind.as_str() {
        "blob" => HintKind::Blob {
            len: need("len", &how.len)?,
        },
        "opaque" => HintKind::Opaque {
            ty: need("type", &how.ty)?,
        },
        "nullterm" => HintKind::NullTerm,
        "noderef" => HintKind::NoDeref,
        "shared" => HintKind::Shared {
            len: need("len", &how.len)?,
            rights: match how.rights.as_deref() {
                None | Some("rw") => Access::ReadWrite,
                Some("r") => Access::Read,
                Some(other) => {
                    return Err(err(
                        src,
                        span,
                        format!("rights `{other}` is not one of: r, rw"),
                    ))
                }
            },
        },
        k => {
            return Err(err(
                src,
                span,
                format!(
                    "unknown kind `{k}`: a contract is blob, opaque, nullterm, noderef or shared"
                ),
            ))
        }
    };
    if how.rights.is_some() && !matches!(kind, HintKind::Shared { .. }) {
        return Err(err(
            src,
            span,
            format!("`rights` applies to kind `shared` only, not `{}`", how.kind),
        ));
    }
    Ok(kind)
}

impl Contracts {
    /// The built-in table extended by the files in `dirs`; an entry for the
    /// same slot parameter or member replaces an earlier one.
    pub fn load(dirs: &TableDirs) -> Result<Contracts, ParseError> {
        let mut out = Contracts::default();
        for src in dirs.sources(BUILTIN, TABLE_NAME)? {
            let f: File = tables::parse_toml(&src, TABLE_NAME)?;
            let path = src.display(TABLE_NAME);
            for p in f.param {
                let span = p.slot.span();
                let slot = p.slot.into_inner();
                if slot.split('.').count() != 2 || !slot.split('.').all(fgft_base::ident::is_ident)
                {
                    return Err(err(
                        &src,
                        span,
                        format!("slot `{slot}` is not STRUCT.FIELD"),
                    ));
                }
                if p.param == 0 {
                    return Err(err(&src, span, "`param` counts from 1".into()));
                }
                let kind = kind_of(&src, span.clone(), &p.how)?;
                let loc = Loc::from_span(&path, &src.text, span.start, span.end);
                out.params
                    .retain(|o| !(o.slot == slot && o.param == p.param));
                out.params.push(ParamContract {
                    slot,
                    param: p.param,
                    c: Contract { kind, loc },
                });
            }
            for m in f.member {
                let span = m.strukt.span();
                let strukt = m.strukt.into_inner();
                let kind = kind_of(&src, span.clone(), &m.how)?;
                let loc = Loc::from_span(&path, &src.text, span.start, span.end);
                out.members
                    .retain(|o| !(o.strukt == strukt && o.field == m.field));
                out.members.push(MemberContract {
                    strukt,
                    field: m.field,
                    c: Contract { kind, loc },
                });
            }
        }
        Ok(out)
    }

    /// The hints the contracts give this driver: one per parameter of a
    /// function stored in a contracted slot, and one per contracted member,
    /// except where the driver's annotations already hint the same thing.
    /// With them, the driver's hints the contracts contradict (`conflicts`).
    pub fn hints(
        &self,
        prog: &Program,
        roots: &[(FileId, Root)],
        ann: &Annotations,
    ) -> (Vec<Hint>, Vec<(Hint, Hint)>) {
        let params = self.param_hints(prog, roots);
        let conflicts = conflicts(&params, ann);
        let mut out: Vec<Hint> = params
            .into_iter()
            .filter(|h| !hinted(ann, &h.target))
            .collect();
        for mc in &self.members {
            let target = HintTarget::Field {
                strukt: mc.strukt.clone(),
                field: mc.field.clone(),
            };
            if hinted(ann, &target) {
                continue;
            }
            out.push(Hint {
                target,
                kind: mc.c.kind.clone(),
                loc: mc.c.loc.clone(),
                source: HintSource::Contract {
                    slot: format!("struct {}", mc.strukt),
                },
            });
        }
        (out, conflicts)
    }

    /// One hint per parameter of a driver function stored in a contracted
    /// slot, whatever the driver's annotations say (first contract wins).
    fn param_hints(&self, prog: &Program, roots: &[(FileId, Root)]) -> Vec<Hint> {
        let mut out: Vec<Hint> = Vec::new();
        for pc in &self.params {
            for (_, r) in roots {
                if format!("{}.{}", r.struct_name, r.field) != pc.slot {
                    continue;
                }
                let Some(&d) = prog.defs(&r.function).first() else {
                    continue;
                };
                let params = &prog.fns[d].params;
                let Some(p) = params.get(pc.param - 1) else {
                    continue;
                };
                let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
                let Some(kind) = instantiate(&pc.c.kind, &names, r, roots) else {
                    continue;
                };
                let target = HintTarget::Param {
                    function: r.function.clone(),
                    param: p.name.clone(),
                };
                if out.iter().any(|h| h.target == target) {
                    continue;
                }
                out.push(Hint {
                    target,
                    kind,
                    loc: pc.c.loc.clone(),
                    source: HintSource::Contract {
                        slot: pc.slot.clone(),
                    },
                });
            }
        }
        out
    }

    /// Where the built-in table is shown from (for reports).
    pub fn builtin_path() -> &'static Path {
        Path::new("<built-in contracts.toml>")
    }
}

/// The driver's own buffer hints whose length is the contract hint's in
/// `params` off by a constant (`FGFT_BLOB(count)` on a
/// `device_attribute.store` buffer, which the kernel passes with its
/// NUL, `count + 1` bytes): (the driver's hint, the contract's).  Other
/// spellings (`sizeof(keys)` for `n * ETH_GSTRING_LEN`) are not
/// compared: fgft cannot tell them apart.  The driver's hint still
/// wins; the caller warns.
fn conflicts(params: &[Hint], ann: &Annotations) -> Vec<(Hint, Hint)> {
    let mut out = Vec::new();
    for c in params {
        let HintKind::Blob { len: want } = &c.kind else {
            continue;
        };
        let HintTarget::Param { function, param } = &c.target else {
            continue;
        };
        for h in ann.param_hints(function, param) {
            let differs = match &h.kind {
                HintKind::Blob { len } => off_by_constant(len, want),
                _ => false,
            };
            if differs && h.source == HintSource::Annotation {
                out.push((h.clone(), c.clone()));
            }
        }
    }
    out
}

/// Whether the driver's annotations hint parameter or member `t`.
fn hinted(ann: &Annotations, t: &HintTarget) -> bool {
    match t {
        HintTarget::Param { function, param } => ann.param_hints(function, param).next().is_some(),
        HintTarget::Field { strukt, field } => ann.field_hints(strukt, field).next().is_some(),
    }
}

/// Whether lengths `a` and `b` are one expression plus two different
/// constants (`count` and `count + 1`).
fn off_by_constant(a: &str, b: &str) -> bool {
    let split = |e: &str| -> (String, i64) {
        let e: String = e.split_whitespace().collect();
        let Some(i) = e.rfind(['+', '-']) else {
            return (e, 0);
        };
        match e[i + 1..].parse::<i64>() {
            Ok(n) if i > 0 && !e[..i].ends_with(['*', '/', '(']) => {
                (e[..i].to_string(), if &e[i..=i] == "-" { -n } else { n })
            }
            _ => (e, 0),
        }
    };
    let (ba, ka) = split(a);
    let (bb, kb) = split(b);
    ba == bb && ka != kb
}

/// `kind` with `$N` spelled as parameter N's name and `$fn(S.F)` as the
/// driver function in slot S.F of the same ops structure as `r`; None when
/// either names something the driver does not have.
fn instantiate(
    kind: &HintKind,
    params: &[&str],
    r: &Root,
    roots: &[(FileId, Root)],
) -> Option<HintKind> {
    let fill = |t: &str| subst(t, params, r, roots);
    Some(match kind {
        HintKind::Blob { len } => HintKind::Blob { len: fill(len)? },
        HintKind::Opaque { ty } => HintKind::Opaque { ty: fill(ty)? },
        HintKind::Shared { len, rights } => HintKind::Shared {
            len: fill(len)?,
            rights: *rights,
        },
        k => k.clone(),
    })
}

fn subst(t: &str, params: &[&str], r: &Root, roots: &[(FileId, Root)]) -> Option<String> {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(inner) = after.strip_prefix("fn(") {
            let close = inner.find(')')?;
            let slot = &inner[..close];
            out.push_str(&slot_function(slot, r, roots)?);
            rest = &inner[close + 1..];
        } else {
            let n: String = after.chars().take_while(char::is_ascii_digit).collect();
            let k: usize = n.parse().ok()?;
            out.push_str(params.get(k.checked_sub(1)?)?);
            rest = &after[n.len()..];
        }
    }
    out.push_str(rest);
    Some(out)
}

/// The driver function stored in `slot` (`S.F`) of the ops structure that
/// holds `r`, or the only one stored in that slot anywhere in the driver.
fn slot_function(slot: &str, r: &Root, roots: &[(FileId, Root)]) -> Option<String> {
    let (s, f) = slot.split_once('.')?;
    let of = |x: &&Root| x.struct_name == s && x.field == f;
    if let Some(x) = roots
        .iter()
        .map(|(_, x)| x)
        .filter(of)
        .find(|x| !r.var.is_empty() && x.var == r.var)
    {
        return Some(x.function.clone());
    }
    let mut fns: Vec<&str> = roots
        .iter()
        .map(|(_, x)| x)
        .filter(of)
        .map(|x| x.function.as_str())
        .collect();
    fns.sort_unstable();
    fns.dedup();
    match fns.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_loads() {
        let c = Contracts::load(&TableDirs::none()).unwrap();
        assert!(c
            .params
            .iter()
            .any(|p| p.slot == "ethtool_ops.get_regs" && p.param == 3));
        assert!(c.members.iter().any(|m| m.strukt == "ethtool_rxfh_param"));
    }

    #[test]
    fn bad_kind_and_param_are_located() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(TABLE_NAME),
            "[[param]]\nslot = \"ethtool_ops.get_regs\"\nparam = 3\nkind = \"bolb\"\nlen = \"1\"\n",
        )
        .unwrap();
        let e = Contracts::load(&TableDirs::of(vec![dir.path().to_path_buf()])).unwrap_err();
        let ParseError::Table { message, range, .. } = e else {
            panic!("not a table error");
        };
        assert!(message.contains("unknown kind `bolb`"), "{message}");
        assert!(range.is_some());
        std::fs::write(
            dir.path().join(TABLE_NAME),
            "[[param]]\nslot = \"get_regs\"\nparam = 3\nkind = \"noderef\"\n",
        )
        .unwrap();
        let e = Contracts::load(&TableDirs::of(vec![dir.path().to_path_buf()])).unwrap_err();
        assert!(e.to_string().contains("STRUCT.FIELD") || matches!(e, ParseError::Table { .. }));
    }

    #[test]
    fn lengths_name_parameters_and_sibling_slots() {
        let root = |f: &str, field: &str| Root {
            function: f.into(),
            struct_name: "ethtool_ops".into(),
            field: field.into(),
            file: "d.c".into(),
            line: 1,
            var: "d_ethtool_ops".into(),
            kind: "ethtool".into(),
        };
        let roots = vec![
            (0, root("d_get_strings", "get_strings")),
            (0, root("d_get_sset_count", "get_sset_count")),
        ];
        let s = subst(
            "max_t(int, $fn(ethtool_ops.get_sset_count)($1, $2), 0) * 32",
            &["dev", "sset", "buf"],
            &roots[0].1,
            &roots,
        );
        assert_eq!(
            s.as_deref(),
            Some("max_t(int, d_get_sset_count(dev, sset), 0) * 32")
        );
        assert_eq!(
            subst(
                "$fn(ethtool_ops.get_regs_len)(dev)",
                &[],
                &roots[0].1,
                &roots
            ),
            None
        );
        assert_eq!(subst("$4->len", &["a", "b"], &roots[0].1, &roots), None);
    }

    #[test]
    fn lengths_off_by_a_constant() {
        assert!(off_by_constant("count", "count + 1"));
        assert!(off_by_constant("len+1", "len - 1"));
        assert!(!off_by_constant("count + 1", "count+1"));
        assert!(!off_by_constant("sizeof(keys)", "n * ETH_GSTRING_LEN"));
        assert!(!off_by_constant("n * 4", "n * 4 + m"));
        assert!(!off_by_constant("PAGE_SIZE", "count + 1"));
    }
}
