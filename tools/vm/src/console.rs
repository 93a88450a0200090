//! Serial console parsing: markers, oopses, panics, the scenario's exit.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// A `FGFT-MARK <name> k=v k=v ...` console line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub name: String,
    /// Fields in the order-independent form; a bare word `w` becomes `w=""`.
    pub fields: BTreeMap<String, String>,
}

impl Marker {
    /// The value of field `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }

    /// The value of field `key` parsed as `T` (None if absent or unparsable).
    pub fn parse<T: FromStr>(&self, key: &str) -> Option<T> {
        self.get(key).and_then(|v| v.parse().ok())
    }
}

impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FGFT-MARK {}", self.name)?;
        for (k, v) in &self.fields {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

/// One rule of the oops count: the first rule whose `contains` occurs in a
/// console line decides whether that line counts as one oops. A line that
/// matches no rule does not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OopsRule {
    pub contains: &'static str,
    pub counts: bool,
    pub why: &'static str,
}

/// What counts as an oops, in order (first match wins).
///
/// With these rules each x86 die() counts once: a NULL dereference prints
/// `BUG: kernel NULL pointer dereference` (not counted) then the header
/// `Oops: Oops: 0000 [#1] ...` (counted); a general protection fault, a divide
/// error and `BUG()` print one header line each
/// (`Oops: general protection fault ...`, `Oops: divide error: 0000 [#1]`,
/// `Oops: invalid opcode: 0000 [#1]` after `kernel BUG at f.c:12!`).
/// Other `BUG:` reports (scheduling while atomic, sleeping function called
/// from invalid context, soft lockup, bad page state) count one each.
/// `WARNING:` (WARN_ON) does not count; see [`Outcome::warnings`]. A panic is
/// reported by [`Outcome::panicked`], not counted.
pub const OOPS_RULES: &[OopsRule] = &[
    OopsRule {
        contains: "traps: ",
        counts: false,
        why: "a user-space fault report (show_unhandled_signals), not a kernel oops",
    },
    OopsRule {
        contains: " segfault at ",
        counts: false,
        why: "a user-space segfault report",
    },
    OopsRule {
        contains: "BUG: kernel NULL pointer dereference",
        counts: false,
        why: "page-fault preamble; the die header that follows is counted",
    },
    OopsRule {
        contains: "BUG: unable to handle",
        counts: false,
        why: "page-fault preamble; the die header that follows is counted",
    },
    OopsRule {
        contains: "Oops:",
        counts: true,
        why: "die header of 6.x kernels (`Oops: <what>: <err> [#n]`)",
    },
    OopsRule {
        contains: " [#",
        counts: true,
        why: "die header of older kernels (`divide error: 0000 [#1] SMP`)",
    },
    OopsRule {
        contains: "general protection fault",
        counts: true,
        why: "general protection fault in the kernel",
    },
    OopsRule {
        contains: "divide error:",
        counts: true,
        why: "divide error in the kernel",
    },
    OopsRule {
        contains: "BUG:",
        counts: true,
        why: "other kernel bug reports",
    },
];

const MARK: &str = "FGFT-MARK ";
const EXIT: &str = "FGFT-EXIT ";
const PANIC: &str = "Kernel panic - not syncing";
const WARNING: &str = "WARNING: CPU:";

/// What a VM run produced.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The whole serial console, `\r` removed.
    pub console: String,
    /// Every marker, in console order.
    pub markers: Vec<Marker>,
    /// Console lines counted as oopses by [`OOPS_RULES`].
    pub oopses: usize,
    /// A `Kernel panic - not syncing` line was seen.
    pub panicked: bool,
    /// The run hit [`crate::VmSpec::timeout`] and QEMU was killed.
    pub timed_out: bool,
    /// The scenario script's exit status from `FGFT-EXIT <status>` (the last
    /// one), None if it never got there.
    pub exit_status: Option<i32>,
    /// Wall time from QEMU start to its exit (or kill).
    pub duration: Duration,
    /// The lines counted in `oopses`.
    pub oops_lines: Vec<String>,
    /// `WARNING: CPU:` lines (WARN_ON and friends); not oopses.
    pub warnings: usize,
    /// Where the console log was saved.
    pub log_path: PathBuf,
    /// The vCPU threads pinned to host CPUs ([`crate::VmSpec::pin_vcpus`]),
    /// one line each: `CPU 1/TCG (tid 1234) -> host CPU 1`.
    pub pinned: Vec<String>,
}

/// Parses a console transcript (`timed_out`, `duration` and `log_path` are
/// left at their defaults).
pub fn parse_console(console: &str) -> Outcome {
    let console = console.replace('\r', "");
    let mut out = Outcome::default();
    for line in console.lines() {
        let mut rest = line;
        while let Some(at) = rest.find(MARK) {
            rest = &rest[at + MARK.len()..];
            let end = rest.find(MARK).unwrap_or(rest.len());
            if let Some(m) = parse_marker(&rest[..end]) {
                out.markers.push(m);
            }
            rest = &rest[end..];
        }
        if let Some(at) = line.find(EXIT) {
            let word = line[at + EXIT.len()..].split_whitespace().next();
            if let Some(st) = word.and_then(|w| w.parse().ok()) {
                out.exit_status = Some(st);
            }
        }
        if line.contains(PANIC) {
            out.panicked = true;
        }
        if line.contains(WARNING) {
            out.warnings += 1;
        }
        if let Some(rule) = OOPS_RULES.iter().find(|r| line.contains(r.contains)) {
            if rule.counts {
                out.oopses += 1;
                out.oops_lines.push(line.to_string());
            }
        }
    }
    out.console = console;
    out
}

fn parse_marker(text: &str) -> Option<Marker> {
    let mut words = text.split_whitespace();
    let name = words.next()?;
    if name.contains('=') {
        return None;
    }
    let fields = words
        .map(|w| match w.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (w.to_string(), String::new()),
        })
        .collect();
    Some(Marker {
        name: name.to_string(),
        fields,
    })
}

impl Outcome {
    /// The first marker called `name`.
    pub fn marker(&self, name: &str) -> Option<&Marker> {
        self.markers.iter().find(|m| m.name == name)
    }

    /// Every marker called `name`, in order.
    pub fn markers_named(&self, name: &str) -> Vec<&Marker> {
        self.markers.iter().filter(|m| m.name == name).collect()
    }

    /// Exit status 0, no oops, no panic, no time-out.
    pub fn is_clean(&self) -> bool {
        self.exit_status == Some(0) && self.oopses == 0 && !self.panicked && !self.timed_out
    }

    /// The last `n` console lines.
    pub fn tail(&self, n: usize) -> String {
        let lines: Vec<&str> = self.console.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// One line: exit status, oopses, panic, time-out, markers, duration.
    pub fn summary(&self) -> String {
        format!(
            "exit={} oopses={} warnings={} panicked={} timed_out={} markers={} duration={:.1}s log={}",
            self.exit_status
                .map_or_else(|| "none".to_string(), |s| s.to_string()),
            self.oopses,
            self.warnings,
            self.panicked,
            self.timed_out,
            self.markers.len(),
            self.duration.as_secs_f64(),
            self.log_path.display()
        )
    }
}

/// The summary, then the oops lines, then the last 80 console lines: meant
/// for assertion messages.
impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "VM outcome: {}", self.summary())?;
        for l in &self.oops_lines {
            writeln!(f, "  oops: {l}")?;
        }
        writeln!(f, "--- last 80 console lines ---")?;
        writeln!(f, "{}", self.tail(80))?;
        write!(f, "--- end of console ---")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_anywhere_in_a_line() {
        let out = parse_console(
            "[    1.234567] fgft_hello: FGFT-MARK hello x=1 y=two flag\r\n\
             FGFT-MARK ethtool op=drvinfo ret=0 errno=0 value=e1000\n\
             noise FGFT-MARK hello x=2\n\
             FGFT-MARK =bad\n\
             FGFT-MARK\n\
             [ 2.0] FGFT-MARK a k=1FGFT-MARK b k=2\n",
        );
        let names: Vec<&str> = out.markers.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["hello", "ethtool", "hello", "a", "b"]);
        let h = out.marker("hello").unwrap();
        assert_eq!(h.get("x"), Some("1"));
        assert_eq!(h.get("y"), Some("two"));
        assert_eq!(h.get("flag"), Some(""));
        assert_eq!(h.parse::<u32>("x"), Some(1));
        assert_eq!(h.parse::<u32>("y"), None);
        assert_eq!(out.markers_named("hello").len(), 2);
        assert_eq!(out.markers_named("hello")[1].get("x"), Some("2"));
        assert_eq!(out.marker("a").unwrap().get("k"), Some("1"));
        assert_eq!(out.marker("ethtool").unwrap().get("value"), Some("e1000"));
        assert!(out.marker("nope").is_none());
        assert_eq!(h.to_string(), "FGFT-MARK hello flag= x=1 y=two");
        assert!(!out.console.contains('\r'));
    }

    #[test]
    fn exit_status_is_the_last_one() {
        assert_eq!(parse_console("x\n").exit_status, None);
        assert_eq!(parse_console("FGFT-EXIT 0\n").exit_status, Some(0));
        assert_eq!(
            parse_console("FGFT-EXIT 1\n[ 3.1] FGFT-EXIT 137\n").exit_status,
            Some(137)
        );
        assert_eq!(parse_console("FGFT-EXIT abc\n").exit_status, None);
    }

    #[test]
    fn oopses_count_once_per_die() {
        // 6.12 NULL dereference: preamble + header = 1.
        let null = "\
[    5.1] BUG: kernel NULL pointer dereference, address: 0000000000000000
[    5.1] #PF: supervisor write access in kernel mode
[    5.1] Oops: Oops: 0002 [#1] PREEMPT SMP NOPTI
[    5.1] CPU: 0 UID: 0 PID: 70 Comm: insmod Tainted: G           OE      6.12.117
[    5.1] RIP: 0010:fgft_oops_init+0x11/0x30 [fgft_oops]
";
        let o = parse_console(null);
        assert_eq!(o.oopses, 1, "{:?}", o.oops_lines);
        assert!(!o.panicked);
        // GPF, divide error, BUG(): one header line each.
        let more = "\
Oops: general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#2] PREEMPT SMP NOPTI
Oops: divide error: 0000 [#3] PREEMPT SMP NOPTI
kernel BUG at drivers/x.c:12!
Oops: invalid opcode: 0000 [#4] PREEMPT SMP NOPTI
";
        assert_eq!(parse_console(more).oopses, 3);
        // 6.1-style headers without the Oops: prefix.
        let old = "\
general protection fault, probably for non-canonical address 0x1: 0000 [#1] SMP NOPTI
divide error: 0000 [#2] SMP NOPTI
invalid opcode: 0000 [#3] SMP NOPTI
";
        assert_eq!(parse_console(old).oopses, 3);
        // Other BUG: reports count; warnings and user faults do not.
        let misc = "\
BUG: scheduling while atomic: sh/1/0x00000002
------------[ cut here ]------------
WARNING: CPU: 0 PID: 1 at kernel/x.c:1 f+0x1/0x2
traps: fgft-pkt[80] general protection fault ip:401000 sp:7ffc error:0 in fgft-pkt
traps: a[81] trap divide error ip:401000 sp:7ffc error:0 in a
sh[82]: segfault at 0 ip 0000000000401000 sp 00007ffc error 4 in sh
";
        let o = parse_console(misc);
        assert_eq!(o.oopses, 1, "{:?}", o.oops_lines);
        assert_eq!(o.warnings, 1);
    }

    #[test]
    fn panic_is_detected() {
        let o = parse_console(
            "sysrq: Trigger a crash\nKernel panic - not syncing: sysrq triggered crash\n",
        );
        assert!(o.panicked);
        assert_eq!(o.oopses, 0);
        assert!(!o.is_clean());
        assert!(parse_console("FGFT-EXIT 0\n").is_clean());
    }

    #[test]
    fn display_shows_the_tail() {
        let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let o = parse_console(&text);
        let s = o.to_string();
        assert!(s.contains("line 199") && s.contains("line 120"));
        assert!(!s.contains("line 119\n"));
        assert!(s.starts_with("VM outcome: exit=none oopses=0"));
    }
}
