//! What an aborted entry point returns to its caller.

use fgft_facts::ctype::CType;
use fgft_facts::slots::AbortAction;
use fgft_facts::slots::SlotTable;
use fgft_stubs::{AbortExtra, AbortReturn, RestoredAbort};

/// `$N` (one digit) anywhere in `text` is parameter N's name; None when
/// the entry has no parameter N.
fn with_params(text: &str, d: &fgft_facts::program::FnDef) -> Option<String> {
    let mut v = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().and_then(|n| n.to_digit(10))) {
            ('$', Some(k)) => {
                chars.next();
                v.push_str(&d.params.get((k as usize).checked_sub(1)?)?.name);
            }
            _ => v.push(c),
        }
    }
    Some(v)
}

fn restored(a: &AbortAction, d: &fgft_facts::program::FnDef) -> Option<RestoredAbort> {
    Some(RestoredAbort {
        value: with_params(&a.value, d)?,
        run: match &a.run {
            Some(r) => Some(with_params(r, d)?),
            None => None,
        },
        why: a.why.clone(),
    })
}

/// What the kernel trusts of the value an entry returns (the slot table's
/// `returns`, the first of its slots that names one), as the thunk tests
/// it: `$ret` is `a->ret`, `$N` the argument `a->NAME`.
pub(super) fn slot_return(
    slots: &[String],
    d: &fgft_facts::program::FnDef,
    table: &SlotTable,
) -> Option<(String, String)> {
    let r = slots.iter().find_map(|s| table.slot_return(s))?;
    let mut v = String::new();
    let mut rest = r.ok.as_str();
    while let Some(i) = rest.find('$') {
        v.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix("ret") {
            v.push_str("a->ret");
            rest = after;
        } else {
            let k = rest.chars().next()?.to_digit(10)? as usize;
            v.push_str("a->");
            v.push_str(&d.params.get(k.checked_sub(1)?)?.name);
            rest = &rest[1..];
        }
    }
    v.push_str(rest);
    Some((v, r.why.clone()))
}

/// The abort value the slots of an entry call for, if any (the slot table's
/// `aborts`; the first of the entry's slots that names one), with what the
/// abort runs besides.
pub(super) fn slot_abort(
    slots: &[String],
    d: &fgft_facts::program::FnDef,
    table: &SlotTable,
) -> Option<(AbortReturn, AbortExtra)> {
    let a = slots.iter().find_map(|s| table.slot_abort(s))?;
    let extra = AbortExtra {
        run: match &a.run {
            Some(r) => Some((with_params(r, d)?, a.why.clone())),
            None => None,
        },
        restored: match &a.restored {
            Some(r) => Some(restored(r, d)?),
            None => None,
        },
    };
    Some((AbortReturn::Value(with_params(&a.value, d)?), extra))
}

/// A return type as the tables name it: without `static` and `const`.
fn core_type(ret_text: &str) -> &str {
    ret_text
        .trim()
        .trim_start_matches("static ")
        .trim_start_matches("const ")
        .trim()
}

/// What an aborted call of a return type the table names does once its
/// device was restored (`[aborts.restored]`).
pub(super) fn type_restored(
    ret_text: &str,
    d: &fgft_facts::program::FnDef,
    table: &SlotTable,
) -> AbortExtra {
    let core = core_type(ret_text);
    AbortExtra {
        run: None,
        restored: table.abort_restored.get(core).and_then(|a| restored(a, d)),
    }
}

/// What an aborted call returns by its return type: nothing for void,
/// NULL for a pointer, the transaction's error for the table's error
/// types, the table's value for its other types, else 0.
pub(super) fn abort_for(ret: &CType, ret_text: &str, table: &SlotTable) -> AbortReturn {
    let t = ret_text.trim();
    if t == "void" {
        return AbortReturn::Void;
    }
    if matches!(ret, CType::Ptr(_)) || t.ends_with('*') {
        return AbortReturn::Value("NULL".into());
    }
    let core = core_type(t);
    if table.abort_error_types.contains(core) {
        return AbortReturn::Error;
    }
    match table.abort_values.get(core) {
        Some(v) => AbortReturn::Value(v.clone()),
        None => AbortReturn::Value("0".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_values() {
        let t = SlotTable::builtin().unwrap();
        assert_eq!(abort_for(&CType::Void, "void", &t), AbortReturn::Void);
        assert_eq!(
            abort_for(&CType::Scalar("int".into()), "int", &t),
            AbortReturn::Error
        );
        assert_eq!(
            abort_for(&CType::Scalar("u32".into()), "u32", &t),
            AbortReturn::Value("0".into())
        );
        assert_eq!(
            abort_for(&CType::Named("irqreturn_t".into()), "irqreturn_t", &t),
            AbortReturn::Value("IRQ_NONE".into())
        );
    }

    #[test]
    fn slot_aborts_come_from_the_table() {
        let src = "struct napi_struct;\nstatic int p(struct napi_struct *napi, int budget) { return 0; }\n";
        let pf = fgft_parse::parse_text(std::path::Path::new("a.c"), src.into()).unwrap();
        let prog = fgft_facts::program::Program::new(vec![pf]);
        let d = &prog.fns[prog.defs("p")[0]];
        let t = SlotTable::builtin().unwrap();
        assert_eq!(
            slot_abort(&["napi_struct.poll".into()], d, &t).map(|a| a.0),
            Some(AbortReturn::Value("budget".into()))
        );
        assert_eq!(slot_abort(&["ethtool_ops.get_regs".into()], d, &t), None);
        // An extension file can name another slot's value.
        let ext = fgft_parse::tables::TableSource {
            path: Some("x/slots.toml".into()),
            text: "[struct.napi_struct]\nfunctions = [\"poll\"]\naborts.poll = { value = \"$1 ? 0 : 1\", why = \"w\" }\n".into(),
        };
        let base = fgft_parse::tables::TableSource {
            path: None,
            text: include_str!("../../../tables/slots.toml").into(),
        };
        let t = SlotTable::from_sources(&[base, ext]).unwrap();
        assert_eq!(
            slot_abort(&["napi_struct.poll".into()], d, &t).map(|a| a.0),
            Some(AbortReturn::Value("napi ? 0 : 1".into()))
        );
    }
}
