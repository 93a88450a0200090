//! Kbuild makefiles: which objects make which module.
//!
//! Job: read the `obj-` lines of a `Makefile` or `Kbuild` the way Kbuild
//! does, without running make:
//! - `obj-$(CONFIG_X) += foo.o`, `obj-y`, `obj-m` name the modules (and
//!   built-in objects) of the directory;
//! - `foo-y`, `foo-objs`, `foo-$(CONFIG_Y)` list the objects of a composite
//!   module `foo.o`;
//! - line continuations, `+=` across lines, `:=`/`=`/`?=` assignments,
//!   references to other variables (`$(foo-y)`), `$(addprefix)` and
//!   `$(addsuffix)`.
//!
//! Invariants: reading never fails (what is not understood is skipped);
//! every branch of `ifdef`/`ifeq` blocks is taken, and every assignment adds
//! to its variable: the survey wants each object any configuration can build,
//! so the union of the branches is the answer.  A `$(...)` inside a variable
//! name (`foo-$(CONFIG_X)`) reads as `y` (except in [`membership`], which
//! reports the condition).  Logical lines join physical ones at an odd number
//! of trailing backslashes; a `#` not escaped by `\` starts a comment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One assignment's words, unexpanded.
#[derive(Debug, Clone)]
struct Assign {
    /// The name as written (`obj-$(CONFIG_E1000)`).
    raw_name: String,
    words: Vec<String>,
    line: usize,
}

/// The variables of one makefile.
#[derive(Debug, Clone, Default)]
pub struct Makefile {
    /// Canonical name -> assignments in file order.
    vars: BTreeMap<String, Vec<Assign>>,
}

/// A module (or built-in object) named on an `obj-` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleDef {
    /// The object's path without `.o`, relative to the makefile's directory
    /// (`e1000`, `sub/foo`).
    pub name: String,
    /// `CONFIG_` symbols of its `obj-` lines (sorted, deduplicated).
    pub configs: Vec<String>,
    /// Named only on `obj-y` lines (never a loadable module).
    pub builtin: bool,
    /// Line of its first `obj-` line.
    pub line: usize,
    /// Object paths (`.o`, relative to the makefile's directory) it is built
    /// from: its composite list, or itself.
    pub objects: Vec<String>,
}

const MAX_DEPTH: usize = 16;

/// Parses a makefile's text.  Never fails: what is not understood is skipped.
pub fn parse(text: &str) -> Makefile {
    let mut mk = Makefile::default();
    let mut in_rule = false;
    let mut in_define = false;
    for (line_no, logical) in logical_lines(text) {
        let starts_with_tab = logical.starts_with('\t');
        let stripped = strip_comment(&logical);
        let t = stripped.trim();
        if in_define {
            if first_word(t) == "endef" {
                in_define = false;
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if starts_with_tab && in_rule {
            continue; // a recipe line
        }
        let mut t = t;
        match first_word(t) {
            "ifeq" | "ifneq" | "ifdef" | "ifndef" | "else" | "endif" | "include" | "-include"
            | "sinclude" | "unexport" | "undefine" | "vpath" => {
                in_rule = false;
                continue;
            }
            "define" => {
                in_define = true;
                continue;
            }
            "export" | "override" | "private" => {
                t = t[first_word(t).len()..].trim_start();
            }
            _ => {}
        }
        match split_assignment(t) {
            Some((name, value)) => {
                in_rule = false;
                let raw_name = name.trim().to_string();
                if raw_name.is_empty() || has_top_level_space(&raw_name) {
                    continue;
                }
                let canon = canonical_name(&raw_name);
                mk.vars.entry(canon).or_default().push(Assign {
                    raw_name,
                    words: split_words(value),
                    line: line_no,
                });
            }
            None => {
                // A rule (`target: deps`) or something else.
                in_rule = has_top_level_colon(t);
            }
        }
    }
    mk
}

impl Makefile {
    /// Expanded value of a variable (canonical or raw name).
    pub fn value(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = Vec::new();
        self.expand_var(&canonical_name(name), 0, &mut stack, &mut out);
        out
    }

    /// The modules and built-in objects of this makefile, sorted by name.
    pub fn modules(&self) -> Vec<ModuleDef> {
        let mut by: BTreeMap<String, ModuleDef> = BTreeMap::new();
        for (canon, assigns) in &self.vars {
            if canon != "obj-y" && canon != "obj-m" && canon != "obj-" {
                continue;
            }
            for a in assigns {
                let builtin = a.raw_name == "obj-y";
                let configs = config_symbols(&a.raw_name);
                let mut words = Vec::new();
                let mut stack = Vec::new();
                for w in &a.words {
                    self.expand_word(w, 0, &mut stack, &mut words);
                }
                for w in words {
                    let Some(stem) = w.strip_suffix(".o") else {
                        continue; // subdirectories (`foo/`) and the rest
                    };
                    let stem = normalize(stem);
                    if stem.is_empty() {
                        continue;
                    }
                    let m = by.entry(stem.clone()).or_insert_with(|| ModuleDef {
                        name: stem.clone(),
                        configs: Vec::new(),
                        builtin: true,
                        line: a.line,
                        objects: Vec::new(),
                    });
                    m.builtin &= builtin;
                    m.line = m.line.min(a.line);
                    for c in &configs {
                        if !m.configs.contains(c) {
                            m.configs.push(c.clone());
                        }
                    }
                }
            }
        }
        for m in by.values_mut() {
            m.configs.sort();
            let mut objs = BTreeSet::new();
            let mut seen = BTreeSet::new();
            self.members(&m.name, 0, &mut seen, &mut objs);
            m.objects = objs.into_iter().collect();
        }
        by.into_values().collect()
    }

    /// Objects of composite `stem` (recursively), or `stem.o` itself.
    fn members(
        &self,
        stem: &str,
        depth: usize,
        seen: &mut BTreeSet<String>,
        out: &mut BTreeSet<String>,
    ) {
        if depth > MAX_DEPTH || !seen.insert(stem.to_string()) {
            return;
        }
        let mut words = Vec::new();
        for suffix in ["-y", "-objs", "-"] {
            let mut stack = Vec::new();
            self.expand_var(&format!("{stem}{suffix}"), 0, &mut stack, &mut words);
        }
        let parts: Vec<String> = words
            .iter()
            .filter_map(|w| w.strip_suffix(".o"))
            .map(normalize)
            .filter(|s| !s.is_empty())
            .collect();
        if parts.is_empty() {
            out.insert(format!("{stem}.o"));
            return;
        }
        for p in parts {
            // A part named like the module is its own source file
            // (`foo-y := foo.o bar.o` is not valid Kbuild, but be safe).
            if p == stem {
                out.insert(format!("{p}.o"));
            } else {
                self.members(&p, depth + 1, seen, out);
            }
        }
    }

    fn expand_var(
        &self,
        canon: &str,
        depth: usize,
        stack: &mut Vec<String>,
        out: &mut Vec<String>,
    ) {
        if depth > MAX_DEPTH || stack.iter().any(|s| s == canon) {
            return;
        }
        let Some(assigns) = self.vars.get(canon) else {
            return;
        };
        stack.push(canon.to_string());
        for a in assigns {
            for w in &a.words {
                self.expand_word(w, depth + 1, stack, out);
            }
        }
        stack.pop();
    }

    /// Expands one word into zero or more words.
    fn expand_word(&self, w: &str, depth: usize, stack: &mut Vec<String>, out: &mut Vec<String>) {
        if !w.contains('$') {
            out.push(w.to_string());
            return;
        }
        if depth > MAX_DEPTH {
            return;
        }
        let text = self.expand_text(w, depth, stack);
        out.extend(split_words(&text));
    }

    /// Expands the references in `s`, giving text.
    fn expand_text(&self, s: &str, depth: usize, stack: &mut Vec<String>) -> String {
        let b = s.as_bytes();
        let mut out = String::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'$' && i + 1 < b.len() {
                let open = b[i + 1];
                if open == b'(' || open == b'{' {
                    let close = if open == b'(' { b')' } else { b'}' };
                    match matching(b, i + 1, open, close) {
                        Some(end) => {
                            let inner = &s[i + 2..end];
                            out.push_str(&self.reference(inner, depth, stack));
                            i = end + 1;
                        }
                        None => break, // unbalanced: drop the rest
                    }
                    continue;
                }
                if open == b'$' {
                    out.push('$');
                    i += 2;
                    continue;
                }
                // `$x`: a one-character variable; nothing we know.  Skip the
                // whole character (it may be several bytes).
                i += 1 + s[i + 1..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            let ch_len = s[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&s[i..i + ch_len]);
            i += ch_len;
        }
        out
    }

    /// Expands the inside of one `$(...)`.
    fn reference(&self, inner: &str, depth: usize, stack: &mut Vec<String>) -> String {
        let inner = inner.trim();
        let (func, rest) = match inner.find(|c: char| c.is_whitespace()) {
            Some(k) => (&inner[..k], inner[k..].trim_start()),
            None => (inner, ""),
        };
        if rest.is_empty() {
            // A variable reference.
            let name = self.expand_text(func, depth + 1, stack);
            if name.starts_with("CONFIG_") {
                return "y".into();
            }
            let mut words = Vec::new();
            self.expand_var(&canonical_name(&name), depth + 1, stack, &mut words);
            return words.join(" ");
        }
        let args = split_args(rest);
        let arg = |k: usize, stack: &mut Vec<String>| -> String {
            args.get(k)
                .map(|a| self.expand_text(a, depth + 1, stack))
                .unwrap_or_default()
        };
        match func {
            "addprefix" => {
                let p = arg(0, stack);
                let list = arg(1, stack);
                split_words(&list)
                    .iter()
                    .map(|w| format!("{}{w}", p.trim()))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "addsuffix" => {
                let p = arg(0, stack);
                let list = arg(1, stack);
                split_words(&list)
                    .iter()
                    .map(|w| format!("{w}{}", p.trim()))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            // Union of branches: `$(if c,a,b)` may give either.
            "if" => format!("{} {}", arg(1, stack), arg(2, stack)),
            "filter" | "filter-out" => arg(1, stack),
            "sort" | "strip" => arg(0, stack),
            _ => String::new(),
        }
    }
}

/// Physical lines joined at backslash continuations, with the 1-based line
/// where each logical line starts.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    let mut open = false;
    for (k, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if !open {
            start = k + 1;
            cur.clear();
        }
        let trailing = line.bytes().rev().take_while(|&c| c == b'\\').count();
        if trailing % 2 == 1 {
            cur.push_str(&line[..line.len() - 1]);
            cur.push(' ');
            open = true;
        } else {
            cur.push_str(line);
            out.push((start, std::mem::take(&mut cur)));
            open = false;
        }
    }
    if open {
        out.push((start, cur));
    }
    out
}

/// Drops a `#` comment (an escaped `\#` is kept).
fn strip_comment(line: &str) -> String {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == b'#' {
            return line[..i].to_string();
        }
        i += 1;
    }
    line.to_string()
}

fn first_word(t: &str) -> &str {
    t.split(|c: char| c.is_whitespace()).next().unwrap_or("")
}

/// Splits `name OP value` at the first assignment operator outside `$(...)`;
/// `None` when a `:` (a rule) comes first or there is no operator.
fn split_assignment(t: &str) -> Option<(&str, &str)> {
    let b = t.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' | b'{' => depth += 1,
            b')' | b'}' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            b'=' => return Some((&t[..i], &t[i + 1..])),
            b'+' | b'?' | b'!' if b.get(i + 1) == Some(&b'=') => {
                return Some((&t[..i], &t[i + 2..]));
            }
            b':' => {
                if t[i..].starts_with("::=") {
                    return Some((&t[..i], &t[i + 3..]));
                }
                if b.get(i + 1) == Some(&b'=') {
                    return Some((&t[..i], &t[i + 2..]));
                }
                return None;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn has_top_level_colon(t: &str) -> bool {
    let mut depth = 0usize;
    for c in t.bytes() {
        match c {
            b'(' | b'{' => depth += 1,
            b')' | b'}' => depth = depth.saturating_sub(1),
            b':' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

fn has_top_level_space(t: &str) -> bool {
    let mut depth = 0usize;
    for c in t.chars() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth = depth.saturating_sub(1),
            c if c.is_whitespace() && depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The name with every `$(...)`/`${...}` read as `y`.
fn canonical_name(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && (b[i + 1] == b'(' || b[i + 1] == b'{') {
            let close = if b[i + 1] == b'(' { b')' } else { b'}' };
            match matching(b, i + 1, b[i + 1], close) {
                Some(end) => {
                    out.push('y');
                    i = end + 1;
                    continue;
                }
                None => break,
            }
        }
        let ch_len = name[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&name[i..i + ch_len]);
        i += ch_len;
    }
    out
}

/// `CONFIG_` symbols named in a variable name.
fn config_symbols(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = name;
    while let Some(k) = rest.find("CONFIG_") {
        let tail = &rest[k..];
        let end = tail
            .find(|c: char| !crate::ident::is_char(c))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// Index of the bracket closing the one at `open_at`.
fn matching(b: &[u8], open_at: usize, open: u8, close: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &c) in b.iter().enumerate().skip(open_at) {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// Whitespace-separated words, keeping `$(...)` (which may hold spaces) whole.
fn split_words(s: &str) -> Vec<String> {
    split_top(s, char::is_whitespace)
        .into_iter()
        .filter(|w| !w.is_empty())
        .collect()
}

/// Function arguments, split at top-level commas.
fn split_args(s: &str) -> Vec<String> {
    split_top(s, |c| c == ',')
}

/// `s` split at every separator outside `(...)`/`{...}` (the pieces may be
/// empty).
fn split_top(s: &str, sep: impl Fn(char) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth = depth.saturating_sub(1),
            c if depth == 0 && sep(c) => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

/// Lexically normalizes a relative object path (`./a`, `x/../a`).
pub fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// The makefile of a directory: its `Kbuild`, else its `Makefile`.
pub fn read_dir(dir: &Path) -> Option<String> {
    ["Kbuild", "Makefile"]
        .iter()
        .find_map(|n| std::fs::read_to_string(dir.join(n)).ok())
}

/// (module, condition) of object `obj` by the first assignment that names
/// it: `obj-y/obj-m/obj-$(CONFIG_X) += obj` (the object is its own module),
/// `mod-y += obj`, `mod-objs := obj`, `mod-$(CONFIG_X) += obj` (condition
/// `CONFIG_X`).  Only the words written on the line count (no expansion).
pub fn membership(text: &str, obj: &str) -> Option<(String, Option<String>)> {
    for (_, logical) in logical_lines(text) {
        let line = strip_comment(&logical);
        let Some((lhs, rhs)) = split_assignment(&line) else {
            continue;
        };
        let lhs = lhs.trim();
        if !rhs.split_whitespace().any(|w| w == obj) {
            continue;
        }
        if lhs.starts_with("obj-") {
            return Some((obj.trim_end_matches(".o").to_string(), None));
        }
        for suf in ["-objs", "-y"] {
            if let Some(m) = lhs.strip_suffix(suf) {
                return Some((m.to_string(), None));
            }
        }
        if let Some(i) = lhs.find("-$(") {
            let m = &lhs[..i];
            let c = lhs[i + 3..].trim_end_matches(')');
            return Some((m.to_string(), Some(c.to_string())));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(mk: &Makefile) -> Vec<(String, Vec<String>)> {
        mk.modules()
            .into_iter()
            .map(|m| (m.name, m.objects))
            .collect()
    }

    #[test]
    fn simple_and_composite() {
        let mk = parse(
            "# SPDX\nobj-$(CONFIG_E1000) += e1000.o\n\n\
             e1000-y := e1000_main.o e1000_hw.o \\\n\te1000_ethtool.o\n\
             e1000-y += e1000_param.o\n",
        );
        let m = mk.modules();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].name, "e1000");
        assert_eq!(m[0].configs, ["CONFIG_E1000"]);
        assert!(!m[0].builtin);
        assert_eq!(m[0].line, 2);
        assert_eq!(
            m[0].objects,
            [
                "e1000_ethtool.o",
                "e1000_hw.o",
                "e1000_main.o",
                "e1000_param.o"
            ]
        );
    }

    #[test]
    fn objs_and_config_dependent_members() {
        let mk = parse(
            "obj-m += foo.o\nfoo-objs := a.o\nfoo-$(CONFIG_FOO_DEBUG) += dbg.o\n\
             foo-$(if $(CONFIG_X),y) += x.o\nobj-y += bar.o baz.o\n",
        );
        assert_eq!(
            names(&mk),
            [
                ("bar".to_string(), vec!["bar.o".to_string()]),
                ("baz".to_string(), vec!["baz.o".to_string()]),
                (
                    "foo".to_string(),
                    vec!["a.o".to_string(), "dbg.o".to_string(), "x.o".to_string()]
                ),
            ]
        );
        let m = mk.modules();
        assert!(m[0].builtin && m[1].builtin && !m[2].builtin);
    }

    #[test]
    fn conditionals_take_every_branch_and_variables_expand() {
        let mk = parse(
            "libphy-y := phy.o phy-core.o \\\n   linkmode.o\nmdio-bus-y += mdio_bus.o\n\
             ifdef CONFIG_PHYLIB\nlibphy-y += $(mdio-bus-y)\nobj-y += stubs.o\nelse\n\
             obj-$(CONFIG_MDIO_DEVICE) += mdio-bus.o\nendif\nobj-$(CONFIG_PHYLIB) += libphy.o\n\
             sfp-obj-$(CONFIG_SFP) += sfp-bus.o\nobj-y += $(sfp-obj-y) $(sfp-obj-m)\n\
             ifdef CONFIG_RUST\n  obj-$(CONFIG_AX) += ax_rust.o\nelse\n  obj-$(CONFIG_AX) += ax.o\nendif\n",
        );
        let n = names(&mk);
        let get = |k: &str| n.iter().find(|(a, _)| a == k).map(|(_, o)| o.clone());
        assert_eq!(
            get("libphy").unwrap(),
            ["linkmode.o", "mdio_bus.o", "phy-core.o", "phy.o"]
        );
        assert_eq!(get("mdio-bus").unwrap(), ["mdio_bus.o"]);
        assert_eq!(get("sfp-bus").unwrap(), ["sfp-bus.o"]);
        assert!(get("stubs").is_some());
        assert!(get("ax_rust").is_some() && get("ax").is_some());
    }

    #[test]
    fn rules_recipes_defines_and_comments_are_skipped() {
        let mk = parse(
            "obj-m += a.o # the module\n$(obj)/gen.c: $(src)/x.txt\n\tobj-m += notme.o\n\
             define CMD\nobj-m += nope.o\nendef\nexport b-y := b1.o\nobj-m += b.o\n\
             foo.o: CFLAGS += -O2\nccflags-y := -I$(src)\nobj-m += sub/c.o ./d.o x/../e.o dir/\n",
        );
        let n: Vec<String> = mk.modules().into_iter().map(|m| m.name).collect();
        assert_eq!(n, ["a", "b", "d", "e", "sub/c"]);
        assert_eq!(mk.value("b-y"), ["b1.o"]);
    }

    #[test]
    fn addprefix_and_cycles() {
        let mk = parse(
            "obj-m := m.o\nm-y := $(addprefix core/, a.o b.o) $(addsuffix .o, c)\n\
             x := $(y)\ny := $(x) z.o\nobj-m += $(x)\n",
        );
        let n = names(&mk);
        assert_eq!(n[0].1, ["c.o", "core/a.o", "core/b.o"]);
        assert_eq!(n[1].0, "z");
    }

    #[test]
    fn same_module_on_several_lines() {
        let mk = parse(
            "obj-$(CONFIG_B) += baycom.o hdlcdrv.o\nobj-$(CONFIG_A) += hdlcdrv.o\n\
             obj-y += hdlcdrv.o\n",
        );
        let m = mk.modules();
        let h = m.iter().find(|m| m.name == "hdlcdrv").unwrap();
        assert_eq!(h.configs, ["CONFIG_A", "CONFIG_B"]);
        assert!(!h.builtin);
        assert_eq!(h.line, 1);
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "$(",
            "obj-m += $(",
            "a := $(b\\",
            "\\",
            "obj-$(x += y.o",
            "=\n:=\n+=",
            "obj-m += .o",
            "obj-m += ../../.o",
            "ü-y := ä.o\nobj-m += ü.o\n",
            "${{{",
            "obj-m += $$(x).o",
            // Found by the fuzzer: `$` before a multi-byte character.
            "obj-m += $é.o",
            "obj-m += a$",
            "x := $ü\nobj-m += $(x)",
        ] {
            let mk = parse(s);
            let _ = mk.modules();
        }
    }

    #[test]
    fn membership_of_objects() {
        let mk = "obj-$(CONFIG_MOUSE_PS2) += psmouse.o\npsmouse-objs := psmouse-base.o synaptics.o\npsmouse-$(CONFIG_MOUSE_PS2_ALPS) += alps.o\n";
        assert_eq!(
            membership(mk, "psmouse-base.o"),
            Some(("psmouse".into(), None))
        );
        assert_eq!(
            membership(mk, "alps.o"),
            Some(("psmouse".into(), Some("CONFIG_MOUSE_PS2_ALPS".into())))
        );
        assert_eq!(membership(mk, "psmouse.o"), Some(("psmouse".into(), None)));
        assert_eq!(membership(mk, "nope.o"), None);
    }

    #[test]
    fn membership_across_continuations_and_comments() {
        let mk = "# e1000.o is not here\ne1000-y := a.o \\\n\tb.o # c.o\n";
        assert_eq!(membership(mk, "b.o"), Some(("e1000".into(), None)));
        assert_eq!(membership(mk, "c.o"), None);
        assert_eq!(membership(mk, "e1000.o"), None);
    }
}
