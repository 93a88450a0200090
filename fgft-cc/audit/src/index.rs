//! Where the kernel tree defines what: every C function definition (by
//! name, with the byte range of its text), every function-like macro, every
//! assembly function, and every struct's body, found by a scan of the text
//! in kernel style (a definition starts at the beginning of a line).
//!
//! Invariant: the scan reads each file once and keeps only offsets; a
//! definition's text is read again, and parsed, only when the audit asks
//! for it.  The scan never follows a symlink.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Directories of the tree that define no kernel function a module calls
/// (documentation, user-space tools, build scripts), and the architectures
/// other than x86.
const SKIP_TOP: &[&str] = &[
    "Documentation",
    "tools",
    "samples",
    "scripts",
    "usr",
    "LICENSES",
    "rust",
];

/// One definition: the file (relative to the tree) and the byte range of
/// its text, from the line of its return type to its closing brace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Def {
    pub file: PathBuf,
    pub range: std::ops::Range<usize>,
    /// 1-based line where `range` starts.
    pub line: usize,
}

/// What the tree defines.
#[derive(Debug, Default)]
pub struct Index {
    pub root: PathBuf,
    pub fns: HashMap<String, Vec<Def>>,
    /// `struct NAME {`: the body's text range.
    pub structs: HashMap<String, Def>,
    /// `#define NAME(`: file and line of the first.
    pub macros: HashMap<String, (PathBuf, usize)>,
    /// `EXPORT_SYMBOL*(NAME)`: the files that export it.
    pub exports: HashMap<String, Vec<PathBuf>>,
    /// Names with a prototype (`int foo(int a);` at the start of a line):
    /// declared, whatever defines them.
    pub declared: BTreeSet<String>,
    /// Assembly functions (`SYM_FUNC_START(NAME)`, `NAME:` in a .S file).
    pub asm: HashMap<String, (PathBuf, usize)>,
    /// Files that could not be read, with why.
    pub unreadable: Vec<(PathBuf, String)>,
    pub files: usize,
    pub bytes: usize,
}

impl Index {
    /// Scans `root` (a kernel source tree), or only `dirs` of it.
    pub fn build(root: &Path, dirs: &[PathBuf]) -> std::io::Result<Index> {
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        if dirs.is_empty() {
            collect(root, root, 0, &mut files, &mut skipped)?;
        }
        for d in dirs {
            let depth = d.components().count();
            collect(root, &root.join(d), depth, &mut files, &mut skipped)?;
        }
        files.sort();
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        let chunk = files.len().div_ceil(threads).max(1);
        let parts: Vec<Index> = std::thread::scope(|s| {
            let hs: Vec<_> = files
                .chunks(chunk)
                .map(|c| s.spawn(move || scan_files(root, c)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let mut ix = Index {
            root: root.to_path_buf(),
            unreadable: skipped,
            ..Default::default()
        };
        // The chunks are in path order, so the merged lists are too.
        for p in parts {
            for (k, v) in p.fns {
                ix.fns.entry(k).or_default().extend(v);
            }
            for (k, v) in p.structs {
                ix.structs.entry(k).or_insert(v);
            }
            for (k, v) in p.macros {
                ix.macros.entry(k).or_insert(v);
            }
            for (k, v) in p.exports {
                ix.exports.entry(k).or_default().extend(v);
            }
            ix.declared.extend(p.declared);
            for (k, v) in p.asm {
                ix.asm.entry(k).or_insert(v);
            }
            ix.unreadable.extend(p.unreadable);
            ix.files += p.files;
            ix.bytes += p.bytes;
        }
        for v in ix.fns.values_mut() {
            v.sort_by(|a, b| (&a.file, a.range.start).cmp(&(&b.file, b.range.start)));
        }
        Ok(ix)
    }

    /// The definitions that are the kernel's `name`: those in a file that
    /// exports it, else those in a header (static inlines), else the ones
    /// that are not `static` (a static function of some driver that
    /// happens to share the name is not what a module calls).
    pub fn kernel_defs(&self, name: &str) -> Vec<&Def> {
        let Some(all) = self.fns.get(name) else {
            return Vec::new();
        };
        if let Some(files) = self.exports.get(name) {
            let v: Vec<&Def> = all.iter().filter(|d| files.contains(&d.file)).collect();
            if !v.is_empty() {
                return v;
            }
        }
        let hdr: Vec<&Def> = all
            .iter()
            .filter(|d| {
                d.file.extension().is_some_and(|e| e == "h") && d.file.starts_with("include")
                    || d.file.starts_with("arch/x86/include")
            })
            .collect();
        if !hdr.is_empty() {
            return hdr;
        }
        all.iter()
            .filter(|d| {
                self.text(d)
                    .map(|t| !t.trim_start().starts_with("static"))
                    .unwrap_or(false)
            })
            .collect()
    }

    /// The text of a definition.
    pub fn text(&self, d: &Def) -> std::io::Result<String> {
        let bytes = std::fs::read(self.root.join(&d.file))?;
        let end = d.range.end.min(bytes.len());
        let start = d.range.start.min(end);
        Ok(String::from_utf8_lossy(&bytes[start..end]).into_owned())
    }
}

fn collect(
    root: &Path,
    dir: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
    skipped: &mut Vec<(PathBuf, String)>,
) -> std::io::Result<()> {
    let mut names: BTreeSet<(String, PathBuf, bool)> = BTreeSet::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        // An unreadable directory below the top is skipped and listed; the
        // top one is an error.
        Err(e) if depth > 0 => {
            let rel = dir.strip_prefix(root).unwrap_or(dir).to_path_buf();
            skipped.push((rel, e.to_string()));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    for e in entries {
        let e = e?;
        let ft = e.file_type()?;
        if ft.is_symlink() {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        // Only directories and regular files: a FIFO or a device named
        // `x.c` would block the read or never end it.
        if ft.is_dir() || ft.is_file() {
            names.insert((name, e.path(), ft.is_dir()));
        }
    }
    for (name, path, is_dir) in names {
        if is_dir {
            if depth == 0 && SKIP_TOP.contains(&name.as_str()) {
                continue;
            }
            if depth == 1 && dir.file_name().is_some_and(|d| d == "arch") && name != "x86" {
                continue;
            }
            // The x86 boot loader's own small library (its test_bit() is
            // not the kernel's).
            if depth == 2 && name == "boot" && dir.ends_with("arch/x86") {
                continue;
            }
            if name.starts_with('.') {
                continue;
            }
            collect(root, &path, depth + 1, out, skipped)?;
        } else if name.ends_with(".c") || name.ends_with(".h") || name.ends_with(".S") {
            if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_path_buf());
            }
        }
    }
    Ok(())
}

fn scan_files(root: &Path, files: &[PathBuf]) -> Index {
    let mut ix = Index::default();
    for f in files {
        match std::fs::read(root.join(f)) {
            Ok(b) => {
                ix.files += 1;
                ix.bytes += b.len();
                if f.extension().is_some_and(|e| e == "S") {
                    scan_asm(f, &b, &mut ix);
                } else {
                    scan_c(f, &b, &mut ix);
                }
            }
            Err(e) => ix.unreadable.push((f.clone(), e.to_string())),
        }
    }
    ix
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Line starts of `b`.
fn lines(b: &[u8]) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', b).map(|i| i + 1))
        .collect()
}

fn scan_asm(f: &Path, b: &[u8], ix: &mut Index) {
    let starts = lines(b);
    for (ln, &s) in starts.iter().enumerate() {
        let e = starts.get(ln + 1).copied().unwrap_or(b.len());
        let line = String::from_utf8_lossy(&b[s..e]);
        let t = line.trim();
        let name = if let Some(r) = t
            .strip_prefix("SYM_FUNC_START(")
            .or_else(|| t.strip_prefix("SYM_TYPED_FUNC_START("))
            .or_else(|| t.strip_prefix("SYM_FUNC_START_WEAK("))
            .or_else(|| t.strip_prefix("SYM_FUNC_ALIAS("))
        {
            r.split([')', ',']).next().unwrap_or("").trim().to_string()
        } else if let Some(n) = t.strip_suffix(':') {
            if !n.is_empty() && n.bytes().all(is_ident) && !line.starts_with(char::is_whitespace) {
                n.to_string()
            } else {
                continue;
            }
        } else {
            continue;
        };
        if !name.is_empty() {
            ix.asm.entry(name).or_insert((f.to_path_buf(), ln + 1));
        }
    }
}

/// Skips a comment, string or character literal at `i`; the index after it.
fn skip_lit(b: &[u8], i: usize) -> Option<usize> {
    use fgft_base::lex;
    match (b[i], b.get(i + 1)) {
        (b'/', Some(b'*')) => Some(lex::skip_block_comment(b, i)),
        (b'/', Some(b'/')) => Some(lex::skip_line_comment(b, i)),
        (b'"' | b'\'', _) => Some(lex::skip_literal(b, i)),
        _ => None,
    }
}

/// The index just past the bracket that closes the one at `open`.
fn close(b: &[u8], open: usize, limit: usize) -> Option<usize> {
    let (o, c) = (b[open], if b[open] == b'(' { b')' } else { b'}' });
    let mut depth = 0usize;
    let mut i = open;
    let end = b.len().min(open.saturating_add(limit));
    while i < end {
        if let Some(j) = skip_lit(b, i) {
            i = j;
            continue;
        }
        if b[i] == o {
            depth += 1;
        } else if b[i] == c {
            depth -= 1;
            if depth == 0 {
                return Some(i + 1);
            }
        } else if b[i] == b'#' && (i == 0 || b[i - 1] == b'\n') && o == b'(' {
            // A directive inside a parameter list: not a definition we read.
            return None;
        }
        i += 1;
    }
    None
}

/// Skips blanks, comments and attribute-like macros (`__acquires(x)`,
/// `__must_hold(x)`, `__attribute__((...))`) after a parameter list.
fn skip_tail(b: &[u8], mut i: usize) -> usize {
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i + 1 < b.len() && b[i] == b'/' && (b[i + 1] == b'*' || b[i + 1] == b'/') {
            i = skip_lit(b, i).unwrap_or(b.len());
            continue;
        }
        if i < b.len() && b[i] == b'_' {
            let s = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let mut j = i;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j < b.len() && b[j] == b'(' {
                if let Some(k) = close(b, j, 4096) {
                    i = k;
                    continue;
                }
            }
            if i > s {
                continue;
            }
        }
        return i;
    }
}

fn scan_c(f: &Path, b: &[u8], ix: &mut Index) {
    let starts = lines(b);
    let mut ln = 0;
    while ln < starts.len() {
        let s = starts[ln];
        let next = ln + 1;
        if s >= b.len() {
            break;
        }
        let c0 = b[s];
        if c0 == b'#' {
            define(f, b, s, ln, ix);
            ln = next;
            continue;
        }
        if !(c0.is_ascii_alphabetic() || c0 == b'_') {
            ln = next;
            continue;
        }
        let e = starts.get(next).copied().unwrap_or(b.len());
        let line = &b[s..e];
        if line.starts_with(b"struct ") {
            if let Some(d) = struct_def(f, b, s, e, ln) {
                let name = d.0;
                ix.structs.entry(name).or_insert(d.1);
            }
        }
        let Some(p) = line.iter().position(|&c| c == b'(') else {
            ln = next;
            continue;
        };
        // The identifier just before the `(`, and only a type before it.
        let mut k = p;
        while k > 0 && line[k - 1] == b' ' {
            k -= 1;
        }
        let ne = k;
        while k > 0 && is_ident(line[k - 1]) {
            k -= 1;
        }
        let before = &line[..k];
        let name = &line[k..ne];
        let typeish = before
            .iter()
            .all(|&c| is_ident(c) || c == b' ' || c == b'*' || c == b'\t');
        if name.is_empty() || !typeish || name[0].is_ascii_digit() {
            ln = next;
            continue;
        }
        let Some(pe) = close(b, s + p, 8192) else {
            ln = next;
            continue;
        };
        let body = skip_tail(b, pe);
        if body < b.len() && b[body] == b';' {
            let name = String::from_utf8_lossy(name).into_owned();
            if name.starts_with("EXPORT_SYMBOL") {
                if let Some(sym) = String::from_utf8_lossy(&b[s + p + 1..pe - 1])
                    .split(',')
                    .next()
                    .map(|x| x.trim().to_string())
                {
                    ix.exports.entry(sym).or_default().push(f.to_path_buf());
                }
            } else {
                ix.declared.insert(name);
            }
            ln = next;
            continue;
        }
        if body >= b.len() || b[body] != b'{' {
            ln = next;
            continue;
        }
        let Some(end) = close(b, body, 1 << 22) else {
            ln = next;
            continue;
        };
        // The return type may stand alone on the line before (`static int\nfoo(...)`).
        let mut start = s;
        if before.iter().all(|c| c.is_ascii_whitespace()) && ln > 0 {
            let ps = starts[ln - 1];
            let prev = String::from_utf8_lossy(&b[ps..s]);
            let t = prev.trim();
            if !t.is_empty()
                && !t.ends_with(';')
                && !t.ends_with('}')
                && !t.ends_with("*/")
                && !t.starts_with('#')
                && !t.ends_with('\\')
            {
                start = ps;
            }
        }
        let name = String::from_utf8_lossy(name).into_owned();
        ix.fns.entry(name).or_default().push(Def {
            file: f.to_path_buf(),
            range: start..end,
            line: if start == s { ln + 1 } else { ln },
        });
        // Go on after the body.
        ln = match starts.binary_search(&end) {
            Ok(i) => i,
            Err(i) => i,
        }
        .max(next);
    }
}

fn define(f: &Path, b: &[u8], s: usize, ln: usize, ix: &mut Index) {
    let mut i = s + 1;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    let Some(r) = b.get(i..).filter(|r| r.starts_with(b"define")) else {
        return;
    };
    let mut j = 6;
    while j < r.len() && (r[j] == b' ' || r[j] == b'\t') {
        j += 1;
    }
    let n0 = j;
    while j < r.len() && is_ident(r[j]) {
        j += 1;
    }
    if j > n0 {
        let name = String::from_utf8_lossy(&r[n0..j]).into_owned();
        ix.macros.entry(name).or_insert((f.to_path_buf(), ln + 1));
    }
}

/// `struct NAME {` at the start of a line: the name and the body's range.
fn struct_def(f: &Path, b: &[u8], s: usize, e: usize, ln: usize) -> Option<(String, Def)> {
    let line = &b[s..e];
    let rest = &line[7..];
    let n = rest.iter().take_while(|&&c| is_ident(c)).count();
    if n == 0 {
        return None;
    }
    let after = &rest[n..];
    let brace = after.iter().position(|&c| c == b'{')?;
    if !after[..brace].iter().all(|c| c.is_ascii_whitespace()) {
        return None;
    }
    let open = s + 7 + n + brace;
    let end = close(b, open, 1 << 20)?;
    Some((
        String::from_utf8_lossy(&rest[..n]).into_owned(),
        Def {
            file: f.to_path_buf(),
            range: open..end,
            line: ln + 1,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(src: &str) -> Index {
        let mut ix = Index::default();
        scan_c(Path::new("x.c"), src.as_bytes(), &mut ix);
        ix
    }

    #[test]
    fn finds_definitions_in_kernel_style() {
        let src = "/* c */\nstatic inline int\nfoo(struct a *p)\n{\n\treturn p->x;\n}\n\
             void bar(u8 **data,\n\t const char *s) __must_hold(&l)\n{\n\t{ }\n}\n\
             EXPORT_SYMBOL(bar);\nint decl(int a);\n#define MAC(x) (x)\n\
             struct s {\n\tchar name[16];\n};\n";
        let ix = scan(src);
        let foo = &ix.fns["foo"][0];
        assert_eq!(foo.line, 2);
        assert!(src[foo.range.clone()].starts_with("static inline int\nfoo("));
        assert!(src[foo.range.clone()].ends_with("}"));
        assert!(ix.fns.contains_key("bar"));
        assert!(!ix.fns.contains_key("EXPORT_SYMBOL"));
        assert_eq!(ix.exports["bar"], vec![PathBuf::from("x.c")]);
        assert!(!ix.fns.contains_key("decl"));
        assert!(ix.declared.contains("decl"));
        assert!(ix.macros.contains_key("MAC"));
        assert!(ix.structs.contains_key("s"));
    }

    #[test]
    fn special_files_and_symlinks_are_not_read() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("lib/a.c"), "int f(int *p)\n{\n\t*p = 1;\n}\n").unwrap();
        let fifo = root.join("lib/fifo.c");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // A loop back up the tree.
        std::os::unix::fs::symlink(root, root.join("lib/up")).unwrap();
        let ix = Index::build(root, &[]).unwrap();
        assert_eq!(ix.files, 1);
        assert!(ix.fns.contains_key("f"));
    }
}
