//! The driver's own tracepoints: the `TRACE_EVENT()`, `DEFINE_EVENT()` and
//! `DECLARE_TRACE()` statements of its trace headers.
//!
//! Job: name each tracepoint and keep its `TP_PROTO()` parameter list, so
//! that a call of `trace_<name>()` (or `trace_<name>_enabled()`) in the
//! closure of an isolated entry point is known for what it is: a call into
//! the driver's own tracepoint, which lives in the main module (the unit
//! that defines `CREATE_TRACE_POINTS` holds its `__tracepoint_<name>`), not
//! a kernel function.
//!
//! Invariants: only statements at file scope count (a `#define` that
//! redefines `TRACE_EVENT` for a configuration without tracing is no
//! tracepoint); an event class (`DECLARE_EVENT_CLASS`) is not a tracepoint,
//! the events defined from it are.

use crate::program::{FileId, Program, TopKind};
use fgft_base::lex;
use std::collections::BTreeMap;

/// One tracepoint of the driver.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Tracepoint {
    /// The event name (`wil6210_log_dbg`): the tracepoint fires through
    /// `trace_<name>()`.
    pub name: String,
    /// The parameter list of its `TP_PROTO()`, as written.
    pub proto: String,
    pub file: FileId,
    /// The statement.
    pub range: std::ops::Range<usize>,
    /// 1-based line of the statement.
    pub line: usize,
}

/// How a call names a tracepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceCall {
    /// `trace_<name>(args)`: fires it.
    Fire,
    /// `trace_<name>_enabled()`: whether a probe is attached.
    Enabled,
}

/// The macros that define a tracepoint, and the argument that names it.
const DEFINERS: &[(&str, usize)] = &[
    ("TRACE_EVENT", 0),
    ("TRACE_EVENT_CONDITION", 0),
    ("TRACE_EVENT_FN", 0),
    ("TRACE_EVENT_FN_COND", 0),
    ("DECLARE_TRACE", 0),
    ("DECLARE_TRACE_CONDITION", 0),
    ("DEFINE_EVENT", 1),
    ("DEFINE_EVENT_PRINT", 1),
    ("DEFINE_EVENT_CONDITION", 1),
    ("DEFINE_EVENT_FN", 1),
];

/// The tracepoints the driver's files define, by name.
pub fn collect(p: &Program) -> BTreeMap<String, Tracepoint> {
    let mut out = BTreeMap::new();
    for (fid, items) in p.top.iter().enumerate() {
        let text = p.files[fid].text.as_str();
        for it in items {
            let TopKind::MacroStmt(m) = &it.kind else {
                continue;
            };
            let Some(&(_, at)) = DEFINERS.iter().find(|(d, _)| d == m) else {
                continue;
            };
            let stmt = &text[it.range.clone()];
            let Some(tp) = parse(stmt, at) else { continue };
            let line = p.files[fid].line_of(it.range.start);
            out.entry(tp.0.clone()).or_insert(Tracepoint {
                name: tp.0,
                proto: tp.1,
                file: fid,
                range: it.range.clone(),
                line,
            });
        }
    }
    out
}

/// (name, TP_PROTO parameter list) of `DEFINER(args...)`, the name being
/// argument `at`.
fn parse(stmt: &str, at: usize) -> Option<(String, String)> {
    let b = stmt.as_bytes();
    let open = stmt.find('(')?;
    let close = lex::close_paren(b, open)?;
    let args = lex::split_top(&stmt[open + 1..close - 1], b',');
    let name = args.get(at)?.trim();
    if !fgft_base::ident::is_ident(name) {
        return None;
    }
    let proto = args.iter().map(|a| a.trim()).find_map(|a| {
        let rest = a.strip_prefix("TP_PROTO")?.trim_start();
        let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
        Some(inner.split_whitespace().collect::<Vec<_>>().join(" "))
    })?;
    Some((name.to_string(), proto))
}

impl Program {
    /// The tracepoint a call of `callee` fires or tests, if the driver
    /// defines it.
    pub fn tracepoint_call(&self, callee: &str) -> Option<(&Tracepoint, TraceCall)> {
        let rest = callee.strip_prefix("trace_")?;
        if let Some(t) = self.tracepoints.get(rest) {
            return Some((t, TraceCall::Fire));
        }
        let name = rest.strip_suffix("_enabled")?;
        self.tracepoints.get(name).map(|t| (t, TraceCall::Enabled))
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn names_and_protos() {
        let ev = "TRACE_EVENT(foo_log,\n\tTP_PROTO(struct va_format *vaf),\n\tTP_ARGS(vaf),\n\tTP_STRUCT__entry(__field(int, x)),\n\tTP_fast_assign(__entry->x = 1;),\n\tTP_printk(\"%d\", __entry->x)\n);";
        assert_eq!(
            parse(ev, 0),
            Some(("foo_log".into(), "struct va_format *vaf".into()))
        );
        let de = "DEFINE_EVENT(foo_class, foo_tx,\n\tTP_PROTO(struct sk_buff *skb,\n\t\tint len),\n\tTP_ARGS(skb, len)\n);";
        assert_eq!(
            parse(de, 1),
            Some(("foo_tx".into(), "struct sk_buff *skb, int len".into()))
        );
        // No TP_PROTO: not a tracepoint statement fgft can call.
        assert_eq!(parse("DEFINE_EVENT(a, b);", 1), None);
    }
}
