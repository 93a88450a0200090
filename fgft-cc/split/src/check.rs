//! `fgft-cc split --check`: the output is compiled before anyone relies on
//! it.
//!
//! Job: build OUT with Kbuild against the kernel build directory, turn
//! every gcc error and warning into a located diagnostic at the generated
//! line, with a note naming the driver line the generated code comes from,
//! and refuse an SFI object that calls a kernel symbol without a wrapper.
//!
//! Invariants: a check that finds nothing returns no diagnostic; anything
//! the compiler or modpost says, or an undefined symbol outside the
//! runtime, the sanitizer call-backs, the table's `[direct]` symbols, its
//! kernel globals and the driver's pure APIs, is an error; nothing in OUT
//! is changed.

use crate::diag::{Error, Located};
use crate::plan::table::Table;
use fgft_base::kbuild::Make;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the check needs besides OUT.
pub struct CheckOpts<'a> {
    pub kdir: &'a Path,
    pub table: &'a Table,
    /// Kernel functions the driver's annotations declare side-effect free.
    pub pure: &'a [String],
}

/// Builds `out` and returns the problems found.
pub fn check(out: &Path, o: &CheckOpts<'_>) -> Result<Vec<Located>, Error> {
    // The runtime's symbols resolve: OUT builds fgft_rt.ko from runtime/,
    // or names an installed one's Module.symvers.
    let built = Make::new(o.kdir, out)
        .jobs(0)
        .target("modules")
        .run()
        .map_err(|e| Error::Msg(e.to_string()))?;
    let text = built.combined();
    let mut diags = Vec::new();
    let prefix = format!("{}/", out.display());
    for l in text.lines() {
        if let Some(d) = compiler_line(l, out, &prefix) {
            diags.push(d);
        } else if let Some(m) = modpost_line(l) {
            diags.push(plain(out, format!("modpost: {m}")));
        } else if let Some(m) = objtool_line(l) {
            diags.push(plain(out, format!("objtool: {m}")));
        }
    }
    // Parallel jobs finish in any order: report by place.
    diags.sort_by(|a, b| {
        (&a.path, a.range.start, &a.message).cmp(&(&b.path, b.range.start, &b.message))
    });
    diags.dedup_by(|a, b| a.path == b.path && a.range == b.range && a.message == b.message);
    if !built.success() && diags.is_empty() {
        let tail: Vec<&str> = text.lines().rev().take(8).collect();
        diags.push(plain(
            out,
            format!(
                "the build failed: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            ),
        ));
    }
    if built.success() {
        diags.extend(unwrapped_calls(out, o)?);
    }
    Ok(diags)
}

/// A diagnostic about OUT as a whole.
fn plain(out: &Path, message: String) -> Located {
    Located {
        path: out.to_path_buf(),
        text: String::new(),
        range: 0..0,
        message,
        label: String::new(),
        notes: vec![],
        warning: false,
    }
}

/// `path:line:col: error|warning: message` of a file under OUT.
fn compiler_line(l: &str, out: &Path, prefix: &str) -> Option<Located> {
    let (kind, at) = [": error: ", ": warning: "]
        .iter()
        .find_map(|k| l.find(k).map(|i| (*k, i)))?;
    let loc = &l[..at];
    let message = &l[at + kind.len()..];
    let mut parts = loc.rsplitn(3, ':');
    let col: usize = parts.next()?.parse().ok()?;
    let line: usize = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    let rel = file.strip_prefix(prefix).unwrap_or(file);
    let path: PathBuf = out.join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let ls = line_start(&text, line);
    let start = ls + byte_of_column(&text[ls..], col);
    let end = text[start.min(text.len())..]
        .find('\n')
        .map_or(text.len(), |k| start + k);
    let mut notes = Vec::new();
    if let Some(origin) = origin_above(&text, line) {
        notes.push(format!("generated for {origin}"));
    } else if rel.starts_with("main/") || rel.starts_with("sfi/") {
        notes.push(format!(
            "in fgft's copy of the driver's {}",
            &rel[rel.find('/').map_or(0, |i| i + 1)..]
        ));
    }
    notes.push("fgft-cc split wrote code that does not build cleanly: please report it".into());
    Some(Located {
        path,
        range: start.min(text.len())..end.max(start).min(text.len()),
        text,
        message: format!("gcc {}: {message}", kind.trim_matches([':', ' '])),
        label: "here".into(),
        notes,
        warning: false,
    })
}

/// objtool's `x.o: warning: objtool: ...` lines (an object, no line).
fn objtool_line(l: &str) -> Option<String> {
    let i = l
        .find(": warning: objtool: ")
        .or_else(|| l.find(": error: objtool: "))?;
    let obj = l[..i].rsplit('/').next().unwrap_or(&l[..i]);
    let msg = l[i..].split_once("objtool: ")?.1;
    Some(format!("{obj}: {msg}"))
}

/// modpost's `ERROR:`/`WARNING:` lines worth reporting.
fn modpost_line(l: &str) -> Option<String> {
    let m = l
        .trim_start()
        .strip_prefix("ERROR: modpost: ")
        .or_else(|| l.trim_start().strip_prefix("WARNING: modpost: "))?;
    Some(m.to_string())
}

/// The byte offset in `line` of gcc's 1-based display column `col` (tabs
/// advance to the next multiple of 8).
fn byte_of_column(line: &str, col: usize) -> usize {
    let mut disp = 1;
    for (i, c) in line.char_indices() {
        if disp >= col || c == '\n' {
            return i;
        }
        disp = if c == '\t' {
            (disp - 1) / 8 * 8 + 9
        } else {
            disp + 1
        };
    }
    line.len()
}

/// Byte offset of 1-based line `n`.
fn line_start(text: &str, n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(n - 2)
        .map_or(text.len(), |(i, _)| i + 1)
}

/// The nearest `(file.c:N)` origin named by a comment at or above line `n`.
fn origin_above(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    for l in lines[..n.min(lines.len())].iter().rev() {
        let mut rest = *l;
        while let Some(open) = rest.find('(') {
            let inner = &rest[open + 1..];
            if let Some(close) = inner.find(')') {
                let cand = &inner[..close];
                if let Some((f, num)) = cand.rsplit_once(':') {
                    if (f.ends_with(".c") || f.ends_with(".h"))
                        && !f.contains(' ')
                        && num.parse::<usize>().is_ok()
                    {
                        return Some(cand.to_string());
                    }
                }
            }
            rest = inner;
        }
    }
    None
}

/// Undefined symbols of the SFI objects that are not reached through a
/// wrapper.
fn unwrapped_calls(out: &Path, o: &CheckOpts<'_>) -> Result<Vec<Located>, Error> {
    let sfi = out.join("sfi");
    let mut objs: Vec<PathBuf> = match std::fs::read_dir(&sfi) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "o"))
            .filter(|p| {
                let n = p
                    .file_name()
                    .map(|f| f.to_string_lossy().to_string())
                    .unwrap_or_default();
                !n.ends_with("_sfi_rt.o") && !n.ends_with(".mod.o")
            })
            .collect(),
        Err(_) => return Ok(Vec::new()),
    };
    objs.sort();
    // What the SFI module's own objects define (one unit calls another's
    // functions, or the const global it duplicates) is no kernel call.
    let mut defined = std::collections::BTreeSet::new();
    for p in std::fs::read_dir(&sfi)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
    {
        if p.extension().is_some_and(|e| e == "o") {
            defined.extend(nm(&p, "--defined-only")?);
        }
    }
    let mut diags = Vec::new();
    for obj in objs {
        for sym in nm(&obj, "-u")? {
            let sym = sym.as_str();
            if redirected(sym) {
                diags.push(plain(
                    &obj,
                    format!(
                        "{}: the SFI code still calls `{sym}`, which include/fgft/sfi-direct.list sends to the runtime's checked fgft_d_{sym}: the unit was not built through include/fgft/sfi-as.sh",
                        obj.strip_prefix(out).unwrap_or(&obj).display()
                    ),
                ));
                continue;
            }
            if allowed(sym, o) || defined.contains(sym) {
                continue;
            }
            // The paravirt call of `slow_down_io()` (inb_p(), outb_p()):
            // `pv_ops.cpu.io_delay`, the first operation of the table, and
            // `BUG_func`, the placeholder of every paravirt call site that
            // boot-time patching replaces (never called).
            if sym == "BUG_func" || (sym == "pv_ops" && only_io_delay(&obj)?) {
                continue;
            }
            diags.push(plain(
                &obj,
                format!(
                    "{}: the SFI code calls kernel symbol `{sym}` directly, without a wrapper: its effects would not be undone and its arguments not checked",
                    obj.strip_prefix(out).unwrap_or(&obj).display()
                ),
            ));
        }
    }
    Ok(diags)
}

/// Whether every reference of `obj` to `pv_ops` is to its first member,
/// `cpu.io_delay` (a call through `pv_ops+0(%rip)`: addend -4), the one
/// paravirt operation that only waits.
fn only_io_delay(obj: &Path) -> Result<bool, Error> {
    let text = tool_output("objdump", "-r", obj)?;
    let mut any = false;
    for l in text.lines() {
        let Some(target) = l.split_whitespace().nth(2) else {
            continue;
        };
        let Some(addend) = target.strip_prefix("pv_ops") else {
            continue;
        };
        if addend.starts_with(|c: char| fgft_base::ident::is_char(c)) {
            // Another symbol (`pv_ops_foo`).
            continue;
        }
        any = true;
        let ok = addend
            .strip_prefix("-0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            == Some(4);
        if !ok {
            return Ok(false);
        }
    }
    Ok(any)
}

/// The symbol names `nm FLAG obj` lists.
fn nm(obj: &Path, flag: &str) -> Result<Vec<String>, Error> {
    Ok(tool_output("nm", flag, obj)?
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect())
}

/// What `tool FLAG obj` (binutils) prints on its standard output.
fn tool_output(tool: &str, flag: &str, obj: &Path) -> Result<String, Error> {
    let out = Command::new(tool)
        .arg(flag)
        .arg(obj)
        .output()
        .map_err(|source| Error::Io {
            path: obj.to_path_buf(),
            source,
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether sfi-as.sh turns calls of `sym` into calls of the runtime's
/// checked `fgft_d_sym` (include/fgft/sfi-direct.list).
fn redirected(sym: &str) -> bool {
    crate::emit::direct_names().any(|n| n == sym)
}

fn allowed(sym: &str, o: &CheckOpts<'_>) -> bool {
    sym.starts_with("__asan_")
        || sym.starts_with("__hwasan_")
        || sym.starts_with("__ubsan_")
        || sym.starts_with("fgft_")
        || sym.starts_with("__x86_")
        || sym == "__fentry__"
        || sym == "__stack_chk_fail"
        || o.table.direct.contains(sym)
        // Table entries a kernel inline may call directly (kernel.rs).
        || o.table.apis.get(sym).is_some_and(|e| {
            crate::kernel::HEADER_SAFE_EFFECTS.contains(&e.effect.as_str())
        })
        || o.table.globals.contains_key(sym)
        || o.pure.iter().any(|p| p == sym)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_redirected_name_has_its_checked_form_in_the_runtime() {
        let direct = crate::runtime_src::FILES
            .iter()
            .find(|(p, _)| *p == "src/direct.c")
            .map(|(_, t)| *t)
            .expect("the runtime carries src/direct.c");
        let names: Vec<&str> = crate::emit::direct_names().collect();
        assert!(names.contains(&"strnlen") && names.contains(&"_printk"));
        for n in names {
            assert!(
                n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{n}"
            );
            let defined = direct.contains(&format!("fgft_d_{n}("))
                || direct.contains(&format!("FGFT_D_DEV({n});"))
                || direct.contains(&format!("FGFT_D_NETDEV({n});"));
            assert!(
                defined,
                "sfi-direct.list names {n}, direct.c has no fgft_d_{n}"
            );
            assert!(redirected(n));
        }
        assert!(!redirected("memcpy"));
    }

    #[test]
    fn origins_are_found_above_the_line() {
        let t = "/*\n * fgft: copy-in for f\n * (drv/a.c:12)\n */\nint x;\n\tc->n = o->n;\n";
        assert_eq!(origin_above(t, 6).as_deref(), Some("drv/a.c:12"));
        assert_eq!(origin_above("int x;\n", 1), None);
    }

    #[test]
    fn compiler_lines_are_located() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("main")).unwrap();
        std::fs::write(
            dir.path().join("main/s.c"),
            "/* for g (d/x.c:3) */\nint a;\n\tc->name = o->name;\n",
        )
        .unwrap();
        let prefix = format!("{}/", dir.path().display());
        let l = format!(
            "{}main/s.c:3:17: error: assignment to expression with array type",
            prefix
        );
        let d = compiler_line(&l, dir.path(), &prefix).unwrap();
        assert!(d
            .message
            .contains("assignment to expression with array type"));
        assert_eq!(&d.text[d.range.clone()], "= o->name;");
        assert!(d.notes[0].contains("d/x.c:3"), "{:?}", d.notes);
        assert!(compiler_line("make: Entering directory", dir.path(), &prefix).is_none());
    }

    #[test]
    fn modpost_messages_are_reported() {
        assert_eq!(
            modpost_line("ERROR: modpost: \"fgft_txn_call\" [OUT/x.ko] undefined!").as_deref(),
            Some("\"fgft_txn_call\" [OUT/x.ko] undefined!")
        );
        assert!(modpost_line("WARNING: modpost: section mismatch").is_some());
        assert!(modpost_line("  CC [M]  x.o").is_none());
    }
}
