//! Checks that every marshaling hint names something the driver has.

use super::{shown_origin, Inputs};
use crate::diag::Located;
use fgft_annotations::{Hint, HintKind, HintSource, HintTarget};
use fgft_base::ident;
use fgft_facts::program::Program;

/// One line of `plan.txt` for an applied hint: target, kind, and where it
/// comes from (`sidecar.toml:12`, the contract's table line, or the
/// allocation site an inferred hint rests on).
pub(super) fn describe(h: &Hint) -> String {
    let how = match &h.kind {
        HintKind::Blob { len } => format!("blob of {len} bytes"),
        HintKind::Opaque { ty } => format!("opaque {ty}"),
        HintKind::Shared { len, rights } => format!("shared, {len} bytes, {}", rights.name()),
        HintKind::Container { outer, member } => format!("container {outer}.{member}"),
        k => k.name().to_string(),
    };
    format!(
        "{}: {how} ({}, {}:{})",
        h.target,
        h.source.describe(),
        h.loc.file.display(),
        h.loc.line
    )
}

/// Every hint names a member of a struct the driver defines (or at least
/// names: kernel structs, whose members fgft does not read) or a parameter
/// of a function it defines; anything else is a located error at the hint.
pub(super) fn check_hint_targets(inp: &Inputs<'_>, diags: &mut Vec<Located>) {
    let prog = inp.prog;
    // Derived hints (contracts, inference) are checked where they are made.
    for h in inp
        .ann
        .hints
        .iter()
        .filter(|h| h.source == HintSource::Annotation)
    {
        let problem = match &h.target {
            HintTarget::Field { strukt, field } => {
                let rec = ["struct", "union"]
                    .iter()
                    .find_map(|k| prog.records.get(&format!("{k} {strukt}")));
                match rec {
                    Some(r) if r.fields.iter().any(|f| f.name == *field) => None,
                    Some(r) => Some((
                        format!("struct {strukt} has no member `{field}`"),
                        format!(
                            "struct {strukt} is defined at {}; its members: {}",
                            shown_origin(inp, r.file, r.line),
                            r.fields
                                .iter()
                                .map(|f| f.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )),
                    None if names_struct(prog, strukt) => None,
                    None => Some((
                        format!("struct {strukt} is neither defined nor used by the driver's sources"),
                        "a hint names a struct (without the `struct` keyword) that the driver's files define or use".into(),
                    )),
                }
            }
            HintTarget::Param { function, param } => match prog.defs(function).first() {
                Some(&d) if prog.fns[d].params.iter().any(|p| p.name == *param) => None,
                Some(&d) => Some((
                    format!("function `{function}` has no parameter `{param}`"),
                    format!(
                        "`{function}` ({}) takes: {}",
                        inp.origin(d),
                        prog.fns[d]
                            .params
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
                None => Some((
                    format!("function `{function}` is not defined in the driver's sources"),
                    "a parameter hint names a function the driver defines".into(),
                )),
            },
        };
        if let Some((message, note)) = problem {
            diags.push(Located {
                path: h.loc.file.clone(),
                text: std::fs::read_to_string(&h.loc.file).unwrap_or_default(),
                range: h.loc.start..h.loc.end,
                message: format!("{} hint: {message}", h.kind.name()),
                label: "unknown hint target".into(),
                notes: vec![note],
                warning: false,
            });
        }
    }
}

/// True when some driver file spells `struct NAME` or `union NAME`.
fn names_struct(prog: &Program, name: &str) -> bool {
    prog.files.iter().any(|f| {
        ["struct", "union"].iter().any(|k| {
            let needle = format!("{k} {name}");
            f.text.match_indices(&needle).any(|(i, _)| {
                let after = f.text[i + needle.len()..].chars().next();
                let before = f.text[..i].chars().next_back();
                !after.is_some_and(ident::is_char) && !before.is_some_and(ident::is_char)
            })
        })
    })
}
