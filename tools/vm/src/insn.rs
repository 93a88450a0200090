//! Guest instructions counted by QEMU, per symbol, between marks of the
//! scenario: a profile under TCG that sees what a sampling profiler cannot
//! (code that runs with interrupts off, where the guest's `perf` sees
//! nothing), and whose counts repeat from run to run.
//!
//! [`InsnProfile::attach`] loads the plugin `tools/vm/plugin/fgft-insn.c`
//! into QEMU (built here as a shared object, cached like the guest
//! programs), installs the guest tool `fgft-insnmark` and attaches a raw
//! virtio disk (serial `fgftsyms`) for the guest's symbols. In the script,
//! [`InsnProfile::mark`] ends a span: the plugin writes the instructions
//! each translation block's start address executed since the previous mark,
//! and the guest copies `/proc/kallsyms` into the disk's slot for that mark,
//! so that the modules loaded at the time name their code. After the run,
//! [`InsnProfile::read`] gives each span's instructions by symbol.
//!
//! Instructions are not time: QEMU's device emulation and idle cpus count
//! none. Guest user space counts as one symbol, `[user]`.

use crate::{Env, VmError, VmSpec};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

/// The disk's serial, by which the guest finds it.
const SYMS_SERIAL: &str = "fgftsyms";
/// MiB of the disk per mark (a 6.12 kernel's `/proc/kallsyms` is about 9).
const SLOT_MB: u64 = 32;
/// Flags of the plugin's build.
const PLUGIN_FLAGS: &[&str] = &[
    "-shared",
    "-fPIC",
    "-O2",
    "-Wall",
    "-Wextra",
    "-std=gnu11",
    "-pthread",
    "-fvisibility=hidden",
];

/// Instructions between two marks, by symbol (`name` or `name [module]`;
/// `[user]` for user space, `[unknown]` for code no symbol covers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Span {
    /// The mark that ends the span (1, 2, ... in the order the script made
    /// them; 0 for what ran after the last mark).
    pub mark: u32,
    pub by_symbol: BTreeMap<String, u64>,
}

impl Span {
    /// All instructions of the span.
    pub fn total(&self) -> u64 {
        self.by_symbol.values().sum()
    }
}

/// The plugin and the symbols disk of one boot.
#[derive(Debug, Clone)]
pub struct InsnProfile {
    counts: PathBuf,
    syms: PathBuf,
    marks: usize,
}

impl InsnProfile {
    /// Adds to `spec` the plugin (its counts go to `<target>/vm-logs/<name>.insn`),
    /// a symbols disk with room for `marks` marks, the guest tool and
    /// `virtio_blk`.
    pub fn attach(env: &Env, spec: &mut VmSpec, marks: usize) -> Result<Self, VmError> {
        let src = env.repo_root.join("tools/vm/plugin/fgft-insn.c");
        let plugin = crate::guest::build_c(env, &src, PLUGIN_FLAGS)?;
        let dir = env.target_dir.join("vm-logs");
        fs::create_dir_all(&dir).map_err(|e| VmError::io(&dir, e))?;
        let counts = dir.join(format!("{}.insn", spec.name));
        let syms = dir.join(format!("{}.syms", spec.name));
        let f = fs::File::create(&syms).map_err(|e| VmError::io(&syms, e))?;
        f.set_len(SLOT_MB * 1024 * 1024 * marks.max(1) as u64)
            .map_err(|e| VmError::io(&syms, e))?;
        spec.add_tool(env, "fgft-insnmark")?;
        if !spec.stock_modules.iter().any(|m| m == "virtio_blk") {
            spec.stock_modules.push("virtio_blk".into());
        }
        spec.qemu_args.extend([
            "-plugin".to_string(),
            format!("{},out={}", plugin.display(), counts.display()),
            "-drive".to_string(),
            format!(
                "file={},format=raw,if=none,id={SYMS_SERIAL}",
                syms.display()
            ),
            "-device".to_string(),
            format!("virtio-blk-pci,drive={SYMS_SERIAL},serial={SYMS_SERIAL}"),
        ]);
        Ok(InsnProfile {
            counts,
            syms,
            marks,
        })
    }

    /// The script's lines for mark `n` (1, 2, ... in order; at most the
    /// `marks` of [`InsnProfile::attach`]): the mark, the guest's symbols
    /// into the mark's slot of the disk, and a second mark, so that copying
    /// the symbols counts in no span. (The plugin sees two marks, 2n - 1 and
    /// 2n; [`InsnProfile::read`] drops the span between them.)
    pub fn mark(n: usize) -> String {
        let seek = (n.max(1) as u64 - 1) * SLOT_MB;
        format!(
            "fgft-insnmark\n\
             echo 0 > /proc/sys/kernel/kptr_restrict\n\
             modprobe virtio_blk 2>/dev/null\n\
             fgft_syms=\n\
             for b in /sys/block/vd*; do \
             [ \"$(cat $b/serial 2>/dev/null)\" = {SYMS_SERIAL} ] && fgft_syms=/dev/${{b##*/}}; done\n\
             [ -n \"$fgft_syms\" ] && cat /proc/kallsyms | \
             dd of=$fgft_syms bs=1M seek={seek} conv=notrunc,fsync 2>/dev/null\n\
             fgft-insnmark\n"
        )
    }

    /// The spans of the run, in mark order (the span before mark 1, the
    /// boot, included).
    pub fn read(&self) -> Result<Vec<Span>, VmError> {
        let text = fs::read_to_string(&self.counts).map_err(|e| VmError::io(&self.counts, e))?;
        let raw = parse_counts(&text).map_err(|reason| VmError::Spec {
            name: self.counts.display().to_string(),
            reason,
        })?;
        let disk = fs::read(&self.syms).map_err(|e| VmError::io(&self.syms, e))?;
        let mut out = Vec::new();
        for (plugin_mark, counts) in raw {
            // The plugin's even marks end the copies of the symbols.
            if plugin_mark != 0 && plugin_mark % 2 == 0 {
                continue;
            }
            let mark = plugin_mark.div_ceil(2);
            // The symbols of the mark's own slot; the last slot written for
            // what ran after the last mark.
            let slot = if mark == 0 { self.marks } else { mark as usize };
            let syms = (1..=slot.min(self.marks))
                .rev()
                .map(|s| symbols_in(&disk, s))
                .find(|s| !s.is_empty())
                .unwrap_or_default();
            out.push(Span {
                mark,
                by_symbol: attribute(&counts, &syms),
            });
        }
        Ok(out)
    }
}

/// Two counts by symbol compared function by function ([`function_of`]),
/// each scaled (by 1 / frames or 1 / operations, say): `(function, a, b)`
/// for every function either counts, the largest change first (then by
/// name).
pub fn compare_by_function(
    (a, a_scale): (&BTreeMap<String, u64>, f64),
    (b, b_scale): (&BTreeMap<String, u64>, f64),
) -> Vec<(String, f64, f64)> {
    let mut by: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for (k, n) in a {
        by.entry(function_of(k)).or_default().0 += *n as f64 * a_scale;
    }
    for (k, n) in b {
        by.entry(function_of(k)).or_default().1 += *n as f64 * b_scale;
    }
    let mut rows: Vec<(String, f64, f64)> = by
        .into_iter()
        .map(|(k, (x, y))| (k.to_string(), x, y))
        .collect();
    rows.sort_by(|p, q| {
        (q.2 - q.1)
            .abs()
            .total_cmp(&(p.2 - p.1).abs())
            .then(p.0.cmp(&q.0))
    });
    rows
}

/// One mark of the plugin's output: its number, and (start address,
/// instructions) pairs.
type RawSpan = (u32, Vec<(u64, u64)>);

/// The driver function a symbol is code of, so that a function's SFI copy
/// and its native code compare as one: without the module (`name [mod]`),
/// the SFI prefix (`fgft_sfi_`) and GCC's clone suffixes (`.part.0`,
/// `.constprop.0`, `.isra.0`, ...).
pub fn function_of(symbol: &str) -> &str {
    let s = symbol.split(' ').next().unwrap_or(symbol);
    let s = s.strip_prefix("fgft_sfi_").unwrap_or(s);
    s.split('.').next().unwrap_or(s)
}

/// The plugin's output, mark by mark.
fn parse_counts(text: &str) -> Result<Vec<RawSpan>, String> {
    let mut out: Vec<RawSpan> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if let Some(n) = l.strip_prefix("mark ") {
            let n = n
                .trim()
                .parse()
                .map_err(|_| format!("line {}: bad mark `{l}`", i + 1))?;
            out.push((n, Vec::new()));
            continue;
        }
        let (a, c) = l
            .split_once(' ')
            .ok_or_else(|| format!("line {}: `{l}` is no count", i + 1))?;
        let a = u64::from_str_radix(a, 16).map_err(|_| format!("line {}: bad address", i + 1))?;
        let c = c
            .trim()
            .parse()
            .map_err(|_| format!("line {}: bad count", i + 1))?;
        let Some(last) = out.last_mut() else {
            return Err(format!("line {}: a count before any mark", i + 1));
        };
        last.1.push((a, c));
    }
    Ok(out)
}

/// The text symbols of `/proc/kallsyms` in slot `slot` (1-based) of the
/// disk, sorted by address: (address, `name` or `name [module]`).
fn symbols_in(disk: &[u8], slot: usize) -> Vec<(u64, String)> {
    let start = (slot - 1) * (SLOT_MB as usize) * 1024 * 1024;
    let Some(bytes) = disk.get(start..(start + SLOT_MB as usize * 1024 * 1024).min(disk.len()))
    else {
        return Vec::new();
    };
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    parse_kallsyms(&String::from_utf8_lossy(&bytes[..end]))
}

/// Text symbols (`t`, `T`, `w`, `W`) of a kallsyms listing, sorted by
/// address; a zero address (kptr_restrict) is left out.
fn parse_kallsyms(text: &str) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let addr = u64::from_str_radix(w.next()?, 16).ok()?;
            let kind = w.next()?;
            let name = w.next()?;
            if addr == 0 || !matches!(kind, "t" | "T" | "w" | "W") {
                return None;
            }
            Some(match w.next() {
                Some(m) => (addr, format!("{name} {m}")),
                None => (addr, name.to_string()),
            })
        })
        .collect();
    v.sort();
    v
}

/// Sums each start address's instructions under the symbol that covers it
/// (the last at or below it).
fn attribute(counts: &[(u64, u64)], syms: &[(u64, String)]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for &(addr, n) in counts {
        let name = if addr == 0 {
            "[user]"
        } else {
            match syms.partition_point(|(a, _)| *a <= addr) {
                0 => "[unknown]",
                i => syms[i - 1].1.as_str(),
            }
        };
        *out.entry(name.to_string()).or_insert(0) += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_go_to_the_symbol_at_or_below_them() {
        let syms = parse_kallsyms(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t helper\n\
             ffffffff81000200 D some_data\n\
             ffffffffc0001000 t fgft_sfi_poll\t[e1000_sfi]\n\
             0000000000000000 T hidden\n",
        );
        assert_eq!(syms.len(), 3);
        let counts = parse_counts(
            "mark 1\nffffffff81000000 5\nffffffff81000104 7\n0 11\n\
             mark 2\nffffffffc0001010 3\nffffffffc0001000 2\nffffffff80000000 1\n",
        )
        .unwrap();
        assert_eq!(counts.len(), 2);
        let a = attribute(&counts[0].1, &syms);
        assert_eq!(a.get("_stext"), Some(&5));
        assert_eq!(a.get("helper"), Some(&7));
        assert_eq!(a.get("[user]"), Some(&11));
        let b = attribute(&counts[1].1, &syms);
        assert_eq!(b.get("fgft_sfi_poll [e1000_sfi]"), Some(&5));
        assert_eq!(b.get("[unknown]"), Some(&1));
    }

    #[test]
    fn a_function_and_its_sfi_copy_are_one() {
        assert_eq!(
            function_of("fgft_sfi_fat_parse_long.part.0 [vfat_sfi]"),
            "fat_parse_long"
        );
        assert_eq!(function_of("fat_parse_long [vfat]"), "fat_parse_long");
        assert_eq!(function_of("vsnprintf"), "vsnprintf");
        assert_eq!(function_of("[user]"), "[user]");
    }

    #[test]
    fn functions_compare_scaled_largest_change_first() {
        let m = |v: &[(&str, u64)]| -> BTreeMap<String, u64> {
            v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
        };
        let stock = m(&[("fat_scan [vfat]", 100), ("memcpy_orig", 40)]);
        let iso = m(&[
            ("fgft_sfi_fat_scan [vfat_sfi]", 300),
            ("memcpy_orig", 40),
            ("grant_new [fgft_rt]", 50),
        ]);
        let rows = compare_by_function((&stock, 0.5), (&iso, 0.25));
        let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(names, ["fat_scan", "grant_new", "memcpy_orig"]);
        assert_eq!((rows[0].1, rows[0].2), (50.0, 75.0));
        assert_eq!((rows[2].1, rows[2].2), (20.0, 10.0));
    }

    #[test]
    fn malformed_counts_are_refused() {
        assert!(parse_counts("ffff 1\n").is_err());
        assert!(parse_counts("mark x\n").is_err());
        assert!(parse_counts("mark 1\nzz 1\n").is_err());
    }
}
