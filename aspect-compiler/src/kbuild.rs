//! Kbuild runs: the kernel unit for types (the kernel headers the driver and
//! the aspect include, preprocessed with the kernel's own flags) and the
//! compile check of the generated C, whose gcc messages are mapped back to
//! the advice's lines in the aspect file.

use crate::codegen::LineOrigin;
use crate::scan::Driver;
use crate::weave::Woven;
use crate::xml::Aspect;
use crate::{AspectError, Diag};
use fgft_base::ident;
use fgft_base::kbuild::Make;
use fgft_parse::ParsedFile;
use std::path::Path;

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// System includes (`<...>`) at the top level of the driver's files (and
/// inside include guards), in source order.
pub fn system_includes(driver: &Driver) -> Vec<String> {
    fn walk(f: &crate::scan::SrcFile, n: tree_sitter::Node<'_>, out: &mut Vec<String>) {
        for k in 0..n.named_child_count() {
            let Some(c) = n.named_child(k as u32) else {
                continue;
            };
            match c.kind() {
                "preproc_include" => {
                    if let Some(p) = c.child_by_field_name("path") {
                        if p.kind() == "system_lib_string" {
                            let h = f.pf.text[p.byte_range()]
                                .trim_matches(['<', '>'])
                                .to_string();
                            if !h.starts_with("trace/") && !out.contains(&h) {
                                out.push(h);
                            }
                        }
                    }
                }
                "preproc_ifdef" if n.kind() == "translation_unit" => walk(f, c, out),
                _ => {}
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for f in &driver.files {
        walk(f, f.pf.tree.root_node(), &mut out);
    }
    out
}

/// Line markers of a preprocessed unit: (unit line, header, header line).
#[derive(Debug, Clone, Default)]
pub struct Markers(Vec<(usize, String, usize)>);

impl Markers {
    fn read(raw: &str) -> Markers {
        let mut v = Vec::new();
        for (i, line) in raw.lines().enumerate() {
            let Some(rest) = line.strip_prefix("# ") else {
                continue;
            };
            let mut parts = rest.splitn(2, ' ');
            let (Some(num), Some(file)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Ok(n) = num.parse::<usize>() else {
                continue;
            };
            let file = file.split('"').nth(1).unwrap_or("").to_string();
            v.push((i + 2, short_header(&file), n));
        }
        Markers(v)
    }

    /// Header and line of 1-based unit line `line`.
    pub fn origin(&self, line: usize) -> Option<(String, usize)> {
        let k = self.0.partition_point(|m| m.0 <= line);
        let (at, file, n) = self.0.get(k.checked_sub(1)?)?;
        Some((file.clone(), n + (line - at)))
    }
}

/// `/usr/src/linux-headers-X/include/linux/skbuff.h` -> `include/linux/skbuff.h`.
fn short_header(path: &str) -> String {
    for key in ["/arch/", "/include/"] {
        if let Some(k) = path.find(key) {
            return path[k + 1..].to_string();
        }
    }
    path.to_string()
}

/// Kernel type facts: a unit including the kernel headers of the driver and
/// the aspect's imports, preprocessed by Kbuild and parsed.  When an import
/// breaks the unit, the unit is made without the imports (the compile check
/// then reports the import).
pub fn kernel_unit(
    kdir: &Path,
    driver: &Driver,
    aspect: &Aspect,
) -> Result<(ParsedFile, Markers), String> {
    match unit(kdir, driver, aspect, true) {
        Ok(x) => Ok(x),
        Err(first) => unit(kdir, driver, aspect, false).map_err(|_| first),
    }
}

fn unit(
    kdir: &Path,
    driver: &Driver,
    aspect: &Aspect,
    imports: bool,
) -> Result<(ParsedFile, Markers), String> {
    let tmp = tempfile::Builder::new()
        .prefix("fgft-aspect-types")
        .tempdir()
        .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    let local: Vec<&str> = driver.files.iter().map(|f| f.rel.as_str()).collect();
    let mut src = String::from(
        "// SPDX-License-Identifier: GPL-2.0\n/* fgft-cc aspect: kernel types of the driver */\n",
    );
    for h in system_includes(driver) {
        src.push_str(&format!("#include <{h}>\n"));
    }
    if imports {
        for imp in &aspect.imports {
            if !local.contains(&imp.header.as_str()) && !imp.header.starts_with('"') {
                src.push_str(&format!("{}\n", Aspect::include_line(&imp.header, false)));
            }
        }
    }
    let file = tmp.path().join("fgft_types.c");
    std::fs::write(&file, &src).map_err(|e| format!("{}: {e}", file.display()))?;
    // fgft-parse runs Kbuild (`make -C KDIR M=scratch fgft_types.i`).
    let raw = fgft_parse::types::preprocess(kdir, &file).map_err(|e| {
        let msg = e.to_string();
        // Keep gcc's own complaint, not the scratch paths around it.
        let why: Vec<&str> = msg
            .split(" | ")
            .filter(|p| p.contains("error:") || p.contains("No such file"))
            .collect();
        format!(
            "preprocessing the kernel headers the driver and the aspect include failed{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(": {}", why.join("; "))
            }
        )
    })?;
    let markers = Markers::read(&raw);
    let text = prepare_unit(&raw);
    let opts = fgft_parse::Options {
        hints: None,
        budget: fgft_parse::Budget {
            time: std::time::Duration::from_secs(60),
            max_bytes: 256 << 20,
        },
    };
    let name = Path::new(KERNEL_UNIT);
    let pf = fgft_parse::parse_text_with(name, text, &opts).map_err(|e| e.to_string())?;
    Ok((pf, markers))
}

/// The path the kernel unit's facts are recorded under.
pub const KERNEL_UNIT: &str = "<kernel unit>";

/// Readies a preprocessed unit for tree-sitter without moving a byte: line
/// markers and function bodies are blanked (types are all that is read), and
/// GNU spellings tree-sitter-c lacks are respelled.
pub fn prepare_unit(raw: &str) -> String {
    let mut b: Vec<u8> = raw.as_bytes().to_vec();
    let blank = |b: &mut [u8], r: std::ops::Range<usize>| {
        for x in &mut b[r] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
    };
    // Line markers and pragmas.
    let mut off = 0;
    for line in raw.split_inclusive('\n') {
        if line.starts_with('#') {
            blank(&mut b, off..off + line.len());
        }
        off += line.len();
    }
    // Respellings of the same length.
    for (from, to) in [
        ("__signed__", "signed    "),
        ("__int128", "long    "),
        ("__seg_gs", "        "),
        ("__seg_fs", "        "),
    ] {
        let mut start = 0;
        while let Some(k) = find(&b[start..], from.as_bytes()) {
            let at = start + k;
            let before = at.checked_sub(1).map(|i| b[i]).unwrap_or(b' ');
            let after = b.get(at + from.len()).copied().unwrap_or(b' ');
            if !ident::is_byte(before) && !ident::is_byte(after) {
                b[at..at + from.len()].copy_from_slice(to.as_bytes());
            }
            start = at + from.len();
        }
    }
    // Attributes and asm labels carry no type facts and trip tree-sitter-c
    // (an attribute before `=` swallows what follows into an ERROR node).
    for word in [
        "__attribute__",
        "__attribute",
        "__asm__",
        "__asm",
        "asm",
        "_Static_assert",
    ] {
        let mut start = 0;
        while let Some(k) = find(&b[start..], word.as_bytes()) {
            let at = start + k;
            start = at + word.len();
            let before = at.checked_sub(1).map(|i| b[i]).unwrap_or(b' ');
            let after = b.get(at + word.len()).copied().unwrap_or(b' ');
            if ident::is_byte(before) || ident::is_byte(after) {
                continue;
            }
            // Skip qualifiers (asm volatile goto) to the parenthesis.
            let mut j = at + word.len();
            loop {
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                let w0 = j;
                while j < b.len() && ident::is_byte(b[j]) {
                    j += 1;
                }
                if j == w0 {
                    break;
                }
            }
            if b.get(j) != Some(&b'(') {
                continue;
            }
            let mut depth = 0usize;
            let mut e = j;
            while e < b.len() {
                match b[e] {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                e += 1;
            }
            let end = (e + 1).min(b.len());
            blank(&mut b, at..end);
            start = end;
        }
    }
    for word in [
        "__extension__",
        "__inline__",
        "__inline",
        "__volatile__",
        "__restrict__",
        "__restrict",
    ] {
        let mut start = 0;
        while let Some(k) = find(&b[start..], word.as_bytes()) {
            let at = start + k;
            start = at + word.len();
            let before = at.checked_sub(1).map(|i| b[i]).unwrap_or(b' ');
            let after = b.get(at + word.len()).copied().unwrap_or(b' ');
            if !ident::is_byte(before) && !ident::is_byte(after) {
                blank(&mut b, at..at + word.len());
            }
        }
    }
    // Function bodies: a `{` at depth 0 right after a parameter list.
    let mut depth = 0usize;
    let mut i = 0;
    let mut body_start = None;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' => {
                if depth == 0 && after_params(&b, i) {
                    body_start = Some(i + 1);
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some(s) = body_start.take() {
                        blank(&mut b, s..i);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    // Inside struct bodies: stray `;` (from macros that expand to nothing
    // but a `;`) and anonymous bit-fields (`unsigned :0;`), which
    // tree-sitter-c rejects, become blank and a named field `_0`.
    let mut depth = 0usize;
    for i in 0..b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b';' if depth > 0 => {
                let prev = b[..i].iter().rposition(|c| !c.is_ascii_whitespace());
                if prev.is_some_and(|p| b[p] == b';' || b[p] == b'{') {
                    b[i] = b' ';
                }
            }
            b':' if depth > 0 && b.get(i + 1) != Some(&b':') => {
                let Some(p) = b[..i].iter().rposition(|c| !c.is_ascii_whitespace()) else {
                    continue;
                };
                let anon = if ident::is_byte(b[p]) {
                    let mut k = p + 1;
                    while k > 0 && ident::is_byte(b[k - 1]) {
                        k -= 1;
                    }
                    TYPE_WORDS.contains(&&raw[k..=p])
                } else {
                    matches!(b[p], b',' | b';' | b'{')
                };
                if anon {
                    b[i] = b'_';
                    let mut j = i + 1;
                    while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                        b[j] = b'_';
                        j += 1;
                    }
                }
            }
            _ => {}
        }
    }
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

const TYPE_WORDS: &[&str] = &[
    "int", "long", "short", "char", "unsigned", "signed", "_Bool", "bool", "u8", "u16", "u32",
    "u64", "s8", "s16", "s32", "s64", "__u8", "__u16", "__u32", "__u64", "__s8", "__s16", "__s32",
    "__s64", "__le16", "__le32", "__le64", "__be16", "__be32", "__be64",
];

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether the `{` at `open` follows a function's parameter list (possibly
/// followed by attributes), not a struct tag, an attribute or `=`.
fn after_params(b: &[u8], open: usize) -> bool {
    let mut i = open;
    loop {
        while i > 0 && b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        if i == 0 || b[i - 1] != b')' {
            return false;
        }
        // Find the matching `(`.
        let mut depth = 0usize;
        let mut j = i;
        while j > 0 {
            j -= 1;
            match b[j] {
                b')' => depth += 1,
                b'(' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        let mut k = j;
        while k > 0 && b[k - 1].is_ascii_whitespace() {
            k -= 1;
        }
        let end = k;
        while k > 0 && ident::is_byte(b[k - 1]) {
            k -= 1;
        }
        let word = &b[k..end];
        if word == b"__attribute__" || word == b"__attribute" || word == b"__aligned" {
            i = k;
            continue;
        }
        return !word.is_empty() || (end > 0 && b[end - 1] == b')');
    }
}

fn copy_text(dst: &Path, text: &str) -> Result<(), AspectError> {
    if let Some(p) = dst.parent() {
        std::fs::create_dir_all(p).map_err(|e| AspectError::io(p, e))?;
    }
    std::fs::write(dst, text).map_err(|e| AspectError::io(dst, e))
}

/// Compiles the generated C against `kdir`; gcc's errors and warnings become
/// diagnostics at the advice lines (or imports) they come from.
pub fn check(
    kdir: &Path,
    aspect: &Aspect,
    woven: &Woven,
    driver: &Driver,
) -> Result<Vec<Diag>, AspectError> {
    let tmp = tempfile::Builder::new()
        .prefix("fgft-aspect-check")
        .tempdir()
        .map_err(|e| AspectError::io(Path::new("/tmp"), e))?;
    let prefix = format!("fgft_aspect_{}", aspect.name);
    for rel in &woven.generated {
        if let Some(t) = woven.files.get(rel) {
            copy_text(&tmp.path().join(rel), t)?;
        }
    }
    for f in driver.files.iter().filter(|f| f.rel.ends_with(".h")) {
        let text = woven
            .files
            .get(&f.rel)
            .cloned()
            .unwrap_or_else(|| f.pf.text.clone());
        copy_text(&tmp.path().join(&f.rel), &text)?;
    }
    let mut kbuild = format!("obj-m := {prefix}.o\nccflags-y += -fdiagnostics-column-unit=byte\n");
    for (rel, path) in &driver.others {
        if rel == "Makefile" || rel == "Kbuild" {
            if let Ok(t) = std::fs::read_to_string(path) {
                for l in t.lines() {
                    let l = l.trim();
                    if l.starts_with("ccflags-")
                        || l.starts_with("EXTRA_CFLAGS")
                        || l.starts_with("subdir-ccflags")
                    {
                        kbuild.push_str(l);
                        kbuild.push('\n');
                    }
                }
            }
        }
    }
    copy_text(&tmp.path().join("Kbuild"), &kbuild)?;
    let run = Make::new(kdir, tmp.path())
        .target(format!("{prefix}.o"))
        .env("LC_ALL", "C")
        .run()
        .map_err(|e| AspectError::Kbuild(e.to_string()))?;
    let (ok, out) = (run.success(), run.combined());
    let diags = map_messages(aspect, woven, &out);
    if !ok && !diags.iter().any(|d| !d.warning) {
        return Err(AspectError::Kbuild(format!(
            "compiling the generated {prefix}.c failed:\n{}",
            tail(&out, 15)
        )));
    }
    Ok(diags)
}

/// Maps gcc messages about the generated C file to the aspect file.
pub fn map_messages(aspect: &Aspect, woven: &Woven, out: &str) -> Vec<Diag> {
    let c_file = &woven.line_map.c_file;
    let mut diags: Vec<Diag> = Vec::new();
    let mut included_from: Option<usize> = None;
    for line in out.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("In file included from ") {
            if let Some(k) = rest.find(&format!("{c_file}:")) {
                let num: String = rest[k + c_file.len() + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                included_from = num.parse().ok();
            }
            continue;
        }
        let Some((file, l, col, sev, msg)) = parse_gcc(line) else {
            continue;
        };
        let warning = sev == "warning";
        let origin_line = if file.ends_with(c_file.as_str()) {
            Some(l)
        } else if file.ends_with(".h") && file.contains("/include/") {
            included_from
        } else {
            None
        };
        let origin = origin_line.and_then(|l| woven.line_map.lines.get(l - 1).cloned().flatten());
        let col_here = if file.ends_with(c_file.as_str()) {
            col
        } else {
            1
        };
        let d = match origin {
            Some(LineOrigin::Body {
                advice,
                body,
                line,
                cut,
                added,
            }) => {
                let a = &aspect.advices[advice];
                let b = &a.bodies[body];
                let start = crate::textmap::line_start(&b.code.text, line + 1);
                let mut off =
                    (start + cut + col_here.saturating_sub(1 + added)).min(b.code.text.len());
                while !b.code.text.is_char_boundary(off) {
                    off -= 1;
                }
                let raw = b.code.raw(off);
                let end = {
                    let t = &b.code.text[off..];
                    let n = t
                        .chars()
                        .take_while(|&c| ident::is_char(c))
                        .map(char::len_utf8)
                        .sum::<usize>()
                        .max(1);
                    b.code.raw((off + n).min(b.code.text.len())).max(raw + 1)
                };
                let mk = if warning { Diag::warning } else { Diag::error };
                mk(
                    &aspect.path,
                    &aspect.text,
                    raw..end,
                    format!("advice `{}` <{}>: {msg}", a.name, b.kind.tag()),
                    if warning {
                        "gcc warns here"
                    } else {
                        "gcc rejects this"
                    },
                )
            }
            Some(LineOrigin::BodyEnd { advice, body }) => {
                let a = &aspect.advices[advice];
                let b = &a.bodies[body];
                let end = b.code.text.trim_end().len();
                let raw = b.code.raw(end.saturating_sub(1));
                let mk = if warning { Diag::warning } else { Diag::error };
                mk(
                    &aspect.path,
                    &aspect.text,
                    raw..raw + 1,
                    format!("advice `{}` <{}>: {msg}", a.name, b.kind.tag()),
                    "at the end of this advice",
                )
            }
            Some(LineOrigin::Import(i)) => {
                let imp = &aspect.imports[i];
                let mk = if warning { Diag::warning } else { Diag::error };
                mk(
                    &aspect.path,
                    &aspect.text,
                    imp.range.clone(),
                    format!("import `{}`: {msg}", imp.header),
                    "from this import",
                )
            }
            None => {
                let base = file.rsplit('/').next().unwrap_or(&file);
                let where_ = format!("{base}:{l}");
                Diag::error(
                    &aspect.path,
                    &aspect.text,
                    0..0,
                    format!("the generated C does not compile cleanly: {msg}"),
                    "",
                )
                .note(format!("at {where_} (generated code)"))
            }
        };
        if !diags
            .iter()
            .any(|x| x.range == d.range && x.message == d.message)
        {
            diags.push(d);
        }
    }
    diags
}

/// `file:line:col: severity: message`.
fn parse_gcc(line: &str) -> Option<(String, usize, usize, String, String)> {
    for sev in ["fatal error", "error", "warning"] {
        let pat = format!(": {sev}: ");
        if let Some(k) = line.find(&pat) {
            let head = &line[..k];
            let msg = line[k + pat.len()..].to_string();
            let mut parts = head.rsplitn(3, ':');
            let col = parts.next()?.trim().parse::<usize>().ok()?;
            let l = parts.next()?.trim().parse::<usize>().ok()?;
            let file = parts.next()?.trim().to_string();
            let sev = if sev == "warning" { "warning" } else { "error" };
            return Some((file, l, col, sev.to_string(), msg));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn gcc_lines() {
        let p = super::parse_gcc(
            "/tmp/x/fgft_aspect_a.c:12:5: error: 'y' undeclared (first use in this function)",
        )
        .unwrap();
        assert_eq!((p.1, p.2, p.3.as_str()), (12, 5, "error"));
        assert!(super::parse_gcc("make: *** [x] Error 1").is_none());
    }
}
