//! SARIF 2.1.0 output of diagnostics (`split --format sarif`), for CI
//! code-scanning tools that show them inline.
//!
//! One run of fgft-cc; a result per diagnostic, error or warning, at its
//! file, line and column (columns counted in Unicode code points, 1-based,
//! the end exclusive), with the source snippet; the notes follow the
//! message.  A rule per kind of diagnostic (its label: `unknown kernel
//! function` is rule `fgft/unknown-kernel-function`).  Paths are written
//! as the user gave them, as relative URI references.

use crate::diag::Located;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// `unknown kernel function` -> `fgft/unknown-kernel-function`.
fn rule_id(label: &str) -> String {
    let mut s = String::from("fgft/");
    let mut dash = false;
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !s.ends_with('/') {
                s.push('-');
            }
            s.push(c.to_ascii_lowercase());
            dash = false;
        } else {
            dash = true;
        }
    }
    if s.ends_with('/') {
        s.push_str("diagnostic");
    }
    s
}

/// A path as a relative URI reference (`%`, spaces and `#`/`?` escaped).
fn uri(p: &std::path::Path) -> String {
    let mut s = String::new();
    for c in p.display().to_string().chars() {
        match c {
            '%' => s.push_str("%25"),
            ' ' => s.push_str("%20"),
            '#' => s.push_str("%23"),
            '?' => s.push_str("%3F"),
            c => s.push(c),
        }
    }
    s
}

/// 1-based (line, column in code points) of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[start..at].chars().count() + 1)
}

fn result(d: &Located) -> Value {
    let mut text = d.message.clone();
    for n in &d.notes {
        text.push_str("\nnote: ");
        text.push_str(n);
    }
    let mut r = json!({
        "ruleId": rule_id(&d.label),
        "level": if d.warning { "warning" } else { "error" },
        "message": { "text": text },
    });
    if !d.path.as_os_str().is_empty() {
        let mut loc = json!({
            "physicalLocation": {
                "artifactLocation": { "uri": uri(&d.path) },
            }
        });
        if !d.text.is_empty() {
            let (sl, sc) = line_col(&d.text, d.range.start);
            let (el, ec) = line_col(&d.text, d.range.end.max(d.range.start));
            let snippet = d.text.get(d.range.clone()).unwrap_or_default().to_string();
            loc["physicalLocation"]["region"] = json!({
                "startLine": sl,
                "startColumn": sc,
                "endLine": el,
                "endColumn": ec,
                "snippet": { "text": snippet },
            });
        }
        if !d.label.is_empty() {
            loc["message"] = json!({ "text": d.label });
        }
        r["locations"] = json!([loc]);
    }
    r
}

/// The SARIF log of `diags`, plus `errors` that have no location.
pub fn log(diags: &[Located], errors: &[String]) -> Value {
    log_with(
        diags
            .iter()
            .map(|d| (rule_id(&d.label), d.label.clone(), result(d))),
        errors,
        None,
    )
}

/// A survey's findings: per module, each kernel function without a
/// compensation-table entry and each member that needs a hint, at its first
/// use (`file:line` under `tree`, the `SRCROOT` base), and the files the
/// survey could not read (`failed`).
pub fn survey_log(
    survey: &fgft_survey::report::Survey,
    tree: &std::path::Path,
    failed: &[Located],
) -> Value {
    let mut items: Vec<(String, String, Value)> = Vec::new();
    let at = |where_: &str| -> Option<Value> {
        let (file, line) = where_.rsplit_once(':')?;
        let line: u64 = line.parse().ok()?;
        Some(json!([{
            "physicalLocation": {
                "artifactLocation": { "uri": uri(std::path::Path::new(file)), "uriBaseId": "SRCROOT" },
                "region": { "startLine": line },
            }
        }]))
    };
    let mut need = |rule: &str, what: &str, text: String, where_: &str| {
        let mut r = json!({
            "ruleId": rule,
            "level": "warning",
            "message": { "text": text },
        });
        if let Some(l) = at(where_) {
            r["locations"] = l;
        }
        items.push((rule.to_string(), what.to_string(), r));
    };
    for m in &survey.modules {
        for a in &m.unknown_apis {
            need(
                "fgft/unknown-kernel-api",
                "kernel function without a compensation-table entry",
                format!(
                    "module {}: kernel function `{}` has no compensation-table entry ({} entry point(s) reach it); add [api.{}] to a compensations.toml",
                    m.name, a.name, a.entry_points, a.name
                ),
                &a.at,
            );
        }
        for h in &m.hints {
            need(
                "fgft/hint-needed",
                "member that needs a hint",
                format!(
                    "module {}: member `{}` needs a hint ({}) before split can copy what it points to",
                    m.name, h.field, h.hint
                ),
                &h.at,
            );
        }
    }
    items.extend(
        failed
            .iter()
            .map(|d| (rule_id(&d.label), d.label.clone(), result(d))),
    );
    let base = format!("file://{}/", tree.display());
    log_with(
        items.into_iter(),
        &[],
        Some(uri(std::path::Path::new(&base))),
    )
}

fn log_with(
    items: impl Iterator<Item = (String, String, Value)>,
    errors: &[String],
    srcroot: Option<String>,
) -> Value {
    let mut rules: BTreeMap<String, String> = BTreeMap::new();
    let mut results: Vec<Value> = Vec::new();
    for (id, label, r) in items {
        rules.entry(id).or_insert_with(|| {
            if label.is_empty() {
                "fgft-cc diagnostic".to_string()
            } else {
                label
            }
        });
        results.push(r);
    }
    for e in errors {
        rules
            .entry("fgft/error".into())
            .or_insert_with(|| "fgft-cc error".into());
        results.push(json!({
            "ruleId": "fgft/error",
            "level": "error",
            "message": { "text": e },
        }));
    }
    let rules: Vec<Value> = rules
        .into_iter()
        .map(|(id, d)| json!({ "id": id, "shortDescription": { "text": d } }))
        .collect();
    let mut run = json!({
        "tool": { "driver": {
            "name": "fgft-cc",
            "version": env!("CARGO_PKG_VERSION"),
            "rules": rules,
        }},
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if let Some(base) = srcroot {
        run["originalUriBaseIds"] = json!({ "SRCROOT": { "uri": base } });
    }
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [run],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_lines_and_columns() {
        assert_eq!(
            rule_id("unknown kernel function"),
            "fgft/unknown-kernel-function"
        );
        assert_eq!(rule_id("the stub's unit"), "fgft/the-stub-s-unit");
        assert_eq!(rule_id(""), "fgft/diagnostic");
        assert_eq!(line_col("ab\ncdé f", 0), (1, 1));
        assert_eq!(line_col("ab\ncdé f", 3), (2, 1));
        // é is two bytes, one code point.
        assert_eq!(line_col("ab\ncdé f", 8), (2, 5));
        assert_eq!(uri(std::path::Path::new("a b/c#.c")), "a%20b/c%23.c");
    }
}
