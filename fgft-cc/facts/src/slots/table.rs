//! The slot table: the slot structures, table macros and registering calls
//! of `slots.toml` (built in, plus extension files), compiled for lookup.
//!
//! Invariant: a table is read once and never changes; extension files add
//! to the built-in table, never remove from it.

use super::*;
use fgft_parse::tables::{self, TableDirs, TableSource};
use fgft_parse::ParseError;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};

const BUILTIN: &str = include_str!("../../../tables/slots.toml");

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SlotFile {
    #[serde(default)]
    wrappers: Vec<String>,
    #[serde(default, rename = "struct")]
    structs: BTreeMap<String, StructDef>,
    #[serde(default, rename = "macro")]
    macros: BTreeMap<String, MacroDef>,
    #[serde(default, rename = "call")]
    calls: BTreeMap<String, Vec<(usize, String)>>,
    #[serde(default)]
    aborts: AbortsDef,
    #[serde(default)]
    in_place: Vec<String>,
    #[serde(default)]
    retry: Vec<String>,
}

/// What an aborted entry point returns, by its return type, when its slot
/// names no value of its own (`[aborts]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbortsDef {
    /// Signed types that carry an error code: the call returns the
    /// transaction's error (`-EIO`).
    #[serde(default)]
    pub error: Vec<String>,
    /// Other types and the value an aborted call returns.
    #[serde(default)]
    pub values: BTreeMap<String, String>,
    /// Types whose aborted call, once its body ran and the device was
    /// restored, returns another value (an interrupt handler: handled).
    #[serde(default)]
    pub restored: BTreeMap<String, AbortAction>,
}

/// What an aborted call does when its body ran and the entry's device
/// checkpoint was restored (the device is quiet and re-armed).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbortAction {
    /// A C expression; `$N` is the entry's parameter N (1-based).
    pub value: String,
    /// C statements run before the return (`$N` as in `value`).
    #[serde(default)]
    pub run: Option<String>,
    /// Why (shown in the stub's comment).
    pub why: String,
}

/// What the kernel's callers of one slot trust of the value it returns (a
/// count, a frequency): a C condition over `$ret` (and `$N`, the entry's
/// parameter N) that the entry's thunk tests inside the body; a value
/// outside aborts the call (cause ret) instead of reaching the caller.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotReturn {
    pub ok: String,
    /// What the caller does with the value (shown in the thunk's comment).
    pub why: String,
}

/// What an aborted call stored in one slot returns, when its callers read
/// the value as something other than an error code.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotAbort {
    /// A C expression; `$N` is the entry's parameter N (1-based).
    pub value: String,
    /// Why (shown in the stub's comment).
    pub why: String,
    /// C statements run before the return (`$N` as in `value`): what the
    /// caller expects done with what it handed over (a dropped frame).
    #[serde(default)]
    pub run: Option<String>,
    /// Instead, once the body ran and the device was restored.
    #[serde(default)]
    pub restored: Option<AbortAction>,
}

/// One slot structure.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StructDef {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub header: String,
    /// Positional initializers may be mapped by `fields` order.
    #[serde(default)]
    pub positional: bool,
    #[serde(default)]
    pub fields: Vec<String>,
    #[serde(default)]
    pub functions: Vec<String>,
    #[serde(default)]
    pub nested: BTreeMap<String, String>,
    #[serde(default)]
    pub pointers: BTreeMap<String, String>,
    /// Function fields whose aborted calls return a value of their own.
    #[serde(default)]
    pub aborts: BTreeMap<String, SlotAbort>,
    /// Function fields whose returned values the kernel trusts a range of.
    #[serde(default)]
    pub returns: BTreeMap<String, SlotReturn>,
}

/// A macro that fills a slot structure.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MacroDef {
    #[serde(rename = "struct")]
    pub struct_name: String,
    pub var: Option<usize>,
    #[serde(default)]
    pub args: Vec<Vec<String>>,
    #[serde(default)]
    pub derived: BTreeMap<String, String>,
}

/// Whether a `$` of an abort value or statement is not followed by a
/// parameter number (1-9).
fn bad_dollar(text: &str) -> bool {
    text.match_indices('$')
        .any(|(i, _)| !text[i + 1..].starts_with(|c: char| c.is_ascii_digit() && c != '0'))
}

/// The compiled slot table.
#[derive(Debug, Clone, Default)]
pub struct SlotTable {
    pub structs: HashMap<String, StructDef>,
    pub macros: HashMap<String, MacroDef>,
    /// Registering call -> (argument, struct, field).
    pub calls: HashMap<String, Vec<(usize, String, String)>>,
    pub wrappers: HashSet<String>,
    /// Return types that abort with the transaction's error.
    pub abort_error_types: HashSet<String>,
    /// Return type -> the value an aborted call returns.
    pub abort_values: HashMap<String, String>,
    /// Return type -> what an aborted call does once the device was restored.
    pub abort_restored: HashMap<String, AbortAction>,
    /// Slots (`STRUCT.FIELD`) whose entry points are marshaled in place.
    pub in_place: HashSet<String>,
    /// Slots (`STRUCT.FIELD`, `STRUCT.*`) whose aborted calls run once more
    /// by default (`retry`).
    pub retry: HashSet<String>,
    /// Function field name -> structures that have it.
    pub(super) fn_field_owners: HashMap<String, Vec<String>>,
    /// Pointer field name -> pointed slot structures.
    pub(super) ptr_field_targets: HashMap<String, Vec<String>>,
    /// The keys of `fn_field_owners` and `ptr_field_targets`.
    slot_fields: HashSet<String, fgft_parse::hints::FxBuild>,
    /// Finds the names of `calls` and `macros` in a text (leftmost first:
    /// every occurrence overlaps a match); `None` when not built or when a
    /// name is empty (the scan then enters every node).
    pub(super) call_names: Option<aho_corasick::AhoCorasick>,
}

impl SlotTable {
    /// The built-in table only.
    pub fn builtin() -> Result<SlotTable, ParseError> {
        Self::from_sources(&[TableSource {
            path: None,
            text: BUILTIN.to_string(),
        }])
    }

    /// The built-in table extended by `slots.toml` files in `FGFT_TABLES`
    /// directories and `extra_dirs`.
    pub fn load(dirs: &TableDirs) -> Result<SlotTable, ParseError> {
        Self::from_sources(&dirs.sources(BUILTIN, TABLE_NAME)?)
    }

    /// Builds a table; later sources add or replace structures and macros.
    pub fn from_sources(sources: &[TableSource]) -> Result<SlotTable, ParseError> {
        let mut t = SlotTable::default();
        for src in sources {
            let f: SlotFile = tables::parse_toml(src, TABLE_NAME)?;
            t.wrappers.extend(f.wrappers);
            for (key, list, set) in [
                ("in_place", f.in_place, &mut t.in_place),
                ("retry", f.retry, &mut t.retry),
            ] {
                for slot in list {
                    let ok = slot.split_once('.').is_some_and(|(a, b)| {
                        fgft_base::ident::is_ident(a) && (b == "*" || fgft_base::ident::is_ident(b))
                    });
                    if !ok {
                        return Err(ParseError::Table {
                            path: src.display(TABLE_NAME),
                            text: src.text.clone(),
                            range: None,
                            message: format!("`{key}`: `{slot}` is not STRUCT.FIELD or STRUCT.*"),
                        });
                    }
                    set.insert(slot);
                }
            }
            t.abort_error_types.extend(f.aborts.error);
            t.abort_values.extend(f.aborts.values);
            for (ty, a) in &f.aborts.restored {
                for text in [Some(&a.value), a.run.as_ref()].into_iter().flatten() {
                    if bad_dollar(text) {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            text,
                            format!(
                                "`aborts.restored.{ty}`: `$` must be followed by a parameter \
                                 number (1-9)"
                            ),
                        ));
                    }
                }
            }
            t.abort_restored.extend(f.aborts.restored);
            for (name, def) in f.structs {
                for (fun, r) in &def.returns {
                    let bad = if !def.functions.contains(fun) {
                        Some(format!(
                            "struct {name}: `returns.{fun}` names no function field"
                        ))
                    } else if !r.ok.contains("$ret") || bad_dollar(&r.ok.replace("$ret", "")) {
                        Some(format!(
                            "struct {name}: `returns.{fun}`: `ok` is a condition over `$ret` \
                             (and `$1`..`$9`, the parameters)"
                        ))
                    } else {
                        None
                    };
                    if let Some(message) = bad {
                        return Err(tables::table_error(src, TABLE_NAME, &r.ok, message));
                    }
                }
                for (fun, a) in &def.aborts {
                    if !def.functions.contains(fun) {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            &a.value,
                            format!("struct {name}: `aborts.{fun}` names no function field"),
                        ));
                    }
                    let texts = [
                        Some(&a.value),
                        a.run.as_ref(),
                        a.restored.as_ref().map(|r| &r.value),
                        a.restored.as_ref().and_then(|r| r.run.as_ref()),
                    ];
                    if let Some(text) = texts.into_iter().flatten().find(|t| bad_dollar(t)) {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            text,
                            format!(
                                "struct {name}: `aborts.{fun}`: `$` must be followed by a \
                                 parameter number (1-9)"
                            ),
                        ));
                    }
                }
                for fun in &def.functions {
                    if def.positional && !def.fields.contains(fun) {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            fun,
                            format!("struct {name}: function `{fun}` is not in its `fields` list"),
                        ));
                    }
                }
                t.structs.insert(name, def);
            }
            for (name, m) in f.macros {
                for tmpl in m.derived.values() {
                    if !tmpl.contains('{') {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            tmpl,
                            format!(
                                "macro {name}: derived name `{tmpl}` uses no argument (`{{0}}`)"
                            ),
                        ));
                    }
                }
                t.macros.insert(name, m);
            }
            for (name, slots) in f.calls {
                let mut v = Vec::new();
                for (pos, slot) in slots {
                    let Some((s, fld)) = slot.split_once('.') else {
                        return Err(tables::table_error(
                            src,
                            TABLE_NAME,
                            &slot,
                            format!("call {name}: slot `{slot}` must be `struct.field`"),
                        ));
                    };
                    v.push((pos, s.to_string(), fld.to_string()));
                }
                t.calls.insert(name, v);
            }
        }
        t.index();
        Ok(t)
    }

    /// A table of the given structures only (the driver's own function
    /// pointer members, to find what it stores in them), stripping the
    /// same wrapper macros as `like`.
    pub fn of_structs(structs: Vec<(String, StructDef)>, like: &SlotTable) -> SlotTable {
        let mut t = SlotTable {
            structs: structs.into_iter().collect(),
            wrappers: like.wrappers.clone(),
            ..Default::default()
        };
        t.index();
        t
    }

    fn index(&mut self) {
        self.fn_field_owners.clear();
        self.ptr_field_targets.clear();
        let mut names: Vec<&String> = self.structs.keys().collect();
        names.sort();
        for name in names {
            let def = &self.structs[name];
            for f in &def.functions {
                self.fn_field_owners
                    .entry(f.clone())
                    .or_default()
                    .push(name.clone());
            }
            for (f, target) in &def.pointers {
                self.ptr_field_targets
                    .entry(f.clone())
                    .or_default()
                    .push(target.clone());
            }
        }
        self.slot_fields = self
            .fn_field_owners
            .keys()
            .chain(self.ptr_field_targets.keys())
            .cloned()
            .collect();
        let mut names: Vec<&str> = self
            .calls
            .keys()
            .chain(self.macros.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names.dedup();
        self.call_names = if names.iter().any(|n| n.is_empty()) {
            None
        } else {
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                .build(names)
                .ok()
        };
    }

    /// Whether `ty` is one of the table's slot structures (a kernel ops
    /// table: `struct inode_operations`).
    pub fn is_slot_struct(&self, ty: &crate::ctype::CType) -> bool {
        ty.record().is_some_and(|r| {
            self.structs
                .contains_key(r.strip_prefix("struct ").unwrap_or(r))
        })
    }

    /// Whether `slot` (`STRUCT.FIELD`) is marshaled in place: listed as
    /// such, or every field of its structure is (`STRUCT.*`).
    pub fn is_in_place(&self, slot: &str) -> bool {
        listed(&self.in_place, slot)
    }

    /// Whether an aborted call of `slot` runs once more by default.
    pub fn is_retry(&self, slot: &str) -> bool {
        listed(&self.retry, slot)
    }

    /// What the callers of `slot` (`struct.field`) trust of its returned
    /// value, when the table says.
    pub fn slot_return(&self, slot: &str) -> Option<&SlotReturn> {
        let (s, f) = slot.split_once('.')?;
        self.structs.get(s)?.returns.get(f)
    }

    /// What an aborted call stored in `slot` (`struct.field`) returns, when
    /// the table says.
    pub fn slot_abort(&self, slot: &str) -> Option<&SlotAbort> {
        let (s, f) = slot.split_once('.')?;
        self.structs.get(s)?.aborts.get(f)
    }

    /// Whether some slot structure has a function or slot-pointer field
    /// named `f` (a member store elsewhere fills no slot).
    pub(super) fn is_slot_field(&self, f: &str) -> bool {
        self.slot_fields.contains(f)
    }

    pub(super) fn kind_of(&self, s: &str) -> String {
        self.structs
            .get(s)
            .map(|d| d.kind.clone())
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| match s {
                "module" => "module".into(),
                "irqaction" => "irq".into(),
                _ => "other".into(),
            })
    }
}

/// Whether `slot` (`STRUCT.FIELD`) is in `set`, itself or as `STRUCT.*`.
fn listed(set: &HashSet<String>, slot: &str) -> bool {
    set.contains(slot)
        || slot
            .split_once('.')
            .is_some_and(|(st, _)| set.contains(&format!("{st}.*")))
}
