//! fgft-pm: a device checkpoint and restore derived from the driver's own PM
//! code, as the FGFT paper did.
//!
//! - Checkpoint: the state-saving part of suspend without the power transition,
//!   the wake-up set-up, the IRQ free and the device disable. For a PCI driver
//!   that is its config space, kept in a reusable saved state by the runtime
//!   (`fgft_pci_checkpoint`); anything more comes from an annotation.
//! - Restore: the PCI config space first, then the suspend half and the resume
//!   half replayed without the calls the rule table drops (power transitions,
//!   wake-up, device enable/disable), so rings and DMA are reset and
//!   re-initialized exactly where resume does it. Driver functions that reach a
//!   dropped call are copied (`fgft_pm_<name>`) and filtered the same way.
//!
//! Invariants: the generated C is appended to the file that defines the PM
//! callbacks (it calls that file's static functions); every dropped statement
//! is replaced by a comment that names it; the decision list is deterministic.

use fgft_base::edit::Edits;
use fgft_parse::ParsedFile;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::ops::Range;
use tree_sitter::Node;

/// The default rule table; users extend it with their own file.
pub const DEFAULT_RULES: &str = include_str!("../../tables/pm-rules.toml");

#[derive(Debug, thiserror::Error)]
pub enum PmError {
    #[error("pm rules {origin}: {msg}")]
    Rules { origin: String, msg: String },
    #[error("{file}:{line}: PM callback `{name}` is not defined in the driver's files")]
    Missing {
        file: String,
        line: usize,
        name: String,
    },
    #[error("{file}:{line}: cannot derive a device key from `{name}`'s first parameter `{param}` (supported: struct device *, struct pci_dev *, struct usb_interface *)")]
    Signature {
        file: String,
        line: usize,
        name: String,
        param: String,
    },
    #[error("the driver has no suspend/resume PM code: annotate a checkpoint and a restore function (FGFT_CHECKPOINT/FGFT_RESTORE or [checkpoint] in the sidecar)")]
    NoPm,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    restore: RestoreRules,
    checkpoint: CheckpointRules,
    #[serde(default)]
    keys: BTreeMap<String, String>,
    #[serde(default, rename = "key-via")]
    key_via: BTreeMap<String, KeyVia>,
}

/// A parameter type that is not a device key but leads to one
/// (`[key-via]`): `key` over `$` (the parameter) gives a pointer to
/// `type`, a type of `[keys]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyVia {
    pub key: String,
    #[serde(rename = "type")]
    pub ty: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RestoreRules {
    drop: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckpointRules {
    pci_markers: Vec<String>,
}

/// The rule table, compiled.
pub struct Rules {
    drop: GlobSet,
    drop_names: Vec<String>,
    pci_markers: BTreeSet<String>,
    keys: BTreeMap<String, String>,
    key_via: BTreeMap<String, KeyVia>,
}

impl Rules {
    /// Parses rule files in order; later files add to earlier ones.
    pub fn parse(files: &[(&str, &str)]) -> Result<Rules, PmError> {
        let mut drop_names = Vec::new();
        let mut pci_markers = BTreeSet::new();
        let mut keys = BTreeMap::new();
        let mut key_via = BTreeMap::new();
        for (origin, text) in files {
            let f: RulesFile = toml::from_str(text).map_err(|e| PmError::Rules {
                origin: origin.to_string(),
                msg: e.to_string(),
            })?;
            drop_names.extend(f.restore.drop);
            pci_markers.extend(f.checkpoint.pci_markers);
            keys.extend(f.keys);
            key_via.extend(f.key_via);
        }
        let mut b = GlobSetBuilder::new();
        for d in &drop_names {
            b.add(Glob::new(d).map_err(|e| PmError::Rules {
                origin: "drop".into(),
                msg: e.to_string(),
            })?);
        }
        let drop = b.build().map_err(|e| PmError::Rules {
            origin: "drop".into(),
            msg: e.to_string(),
        })?;
        Ok(Rules {
            drop,
            drop_names,
            pci_markers,
            keys,
            key_via,
        })
    }

    pub fn default_rules() -> Rules {
        Rules::parse(&[("tables/pm-rules.toml", DEFAULT_RULES)])
            .expect("the built-in pm rules parse")
    }

    fn drops(&self, name: &str) -> bool {
        self.drop.is_match(name)
    }

    /// The `[keys]` conversion of a device key whose type is a pointer to
    /// `record` (`struct net_device`): a C expression over `key` giving the
    /// `struct device *`.
    pub fn key_to_dev(&self, record: &str) -> Option<&str> {
        self.keys.get(record.trim()).map(String::as_str)
    }

    /// The `[key-via]` way from a parameter of type `struct X *` (a frame,
    /// a NAPI context) to a device key.
    pub fn key_via(&self, record: &str) -> Option<&KeyVia> {
        self.key_via.get(record.trim())
    }

    /// Number of drop patterns (for reports).
    pub fn drop_count(&self) -> usize {
        self.drop_names.len()
    }
}

/// The PM callbacks of a driver, as the slot facts found them.
#[derive(Debug, Clone)]
pub struct PmCallbacks {
    pub suspend: String,
    pub resume: String,
    /// The callbacks belong to a pci_driver (its dev_pm_ops or legacy hooks).
    pub pci_bus: bool,
    /// C expression turning the transaction's device key `key` (a `void *`)
    /// into the `struct device *` the PM code works on.  With it, the
    /// derived C also has key-level `fgft_checkpoint_<prefix>(void *key)`,
    /// `fgft_restore_<prefix>(void *key)` and `fgft_dev_ops_<prefix>`;
    /// without it, only the device-level functions (the caller converts).
    pub key_to_dev: Option<String>,
}

/// One decision, for the plan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Decision {
    pub function: String,
    pub line: usize,
    pub call: String,
    pub action: &'static str,
}

/// Result of a derivation.
pub struct Derived {
    /// Index of the file the C must be appended to.
    pub file: usize,
    /// C text to append (kernel style, origins named): `copies` then `glue`.
    pub c: String,
    /// The filtered copies of the driver's PM functions (driver text).
    pub copies: String,
    /// What fgft writes itself: the device-level checkpoint and restore
    /// (and, with a `key_to_dev`, the key-level ones and their ops).
    pub glue: String,
    /// The checkpoint for `fgft_dev_ops` (`int (void *key)` with a
    /// `key_to_dev`, else the device-level one); None when the PM code saves
    /// no PCI state (the restore replays suspend/resume on its own).
    pub checkpoint_fn: Option<String>,
    pub restore_fn: String,
    /// `static int fn(struct device *dev)` (PCI only).
    pub dev_checkpoint_fn: Option<String>,
    /// `static void fn(struct device *dev)`: restores at once in process
    /// context, from a work item in atomic context.
    pub dev_restore_fn: String,
    /// `void fn(void)`: runs pending deferred restores; call it before the
    /// driver unregisters.
    pub flush_fn: String,
    /// True when the checkpoint saves PCI config space.
    pub pci: bool,
    pub decisions: Vec<Decision>,
}

struct FnDef<'a> {
    file: usize,
    node: Node<'a>,
    name_range: Range<usize>,
}

fn calls<'a>(n: Node<'a>, out: &mut Vec<Node<'a>>) {
    if n.kind() == "call_expression" {
        out.push(n);
    }
    let mut cur = n.walk();
    for c in n.named_children(&mut cur) {
        calls(c, out);
    }
}

fn callee<'a>(file: &'a ParsedFile, call: Node<'_>) -> Option<&'a str> {
    let f = call.child_by_field_name("function")?;
    (f.kind() == "identifier").then(|| file.node_text(f))
}

fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("*/", "* /")
}

/// Derives checkpoint and restore. `prefix` names the generated functions
/// (usually the module name).
pub fn derive(
    files: &[ParsedFile],
    cb: &PmCallbacks,
    rules: &Rules,
    prefix: &str,
) -> Result<Derived, PmError> {
    let mut defs: BTreeMap<String, FnDef<'_>> = BTreeMap::new();
    for (fi, f) in files.iter().enumerate() {
        let root = f.tree.root_node();
        let mut cur = root.walk();
        for def in root.named_children(&mut cur) {
            if def.kind() != "function_definition" {
                continue;
            }
            if let Some(n) = fgft_parse::function_name_node(def) {
                defs.entry(f.node_text(n).to_string()).or_insert(FnDef {
                    file: fi,
                    node: def,
                    name_range: n.byte_range(),
                });
            }
        }
    }
    let missing = |name: &str| PmError::Missing {
        file: files
            .first()
            .map(|f| f.path.display().to_string())
            .unwrap_or_default(),
        line: 1,
        name: name.to_string(),
    };
    let sus = defs.get(&cb.suspend).ok_or_else(|| missing(&cb.suspend))?;
    defs.get(&cb.resume).ok_or_else(|| missing(&cb.resume))?;

    // Driver functions reachable from the PM callbacks, and which of them
    // reach a dropped call (fixed point).
    let mut reach: BTreeSet<String> = BTreeSet::new();
    let mut work = vec![cb.suspend.clone(), cb.resume.clone()];
    while let Some(n) = work.pop() {
        if !reach.insert(n.clone()) {
            continue;
        }
        let d = &defs[&n];
        let mut cs = Vec::new();
        calls(d.node, &mut cs);
        for c in cs {
            if let Some(name) = callee(&files[d.file], c) {
                if defs.contains_key(name) && !reach.contains(name) {
                    work.push(name.to_string());
                }
            }
        }
    }
    let mut filtered: BTreeSet<String> = BTreeSet::new();
    filtered.insert(cb.suspend.clone());
    filtered.insert(cb.resume.clone());
    loop {
        let before = filtered.len();
        for n in &reach {
            if filtered.contains(n) {
                continue;
            }
            let d = &defs[n];
            let mut cs = Vec::new();
            calls(d.node, &mut cs);
            let hit = cs.iter().any(|c| {
                callee(&files[d.file], *c)
                    .map(|name| rules.drops(name) || filtered.contains(name))
                    .unwrap_or(false)
            });
            if hit {
                filtered.insert(n.clone());
            }
        }
        if filtered.len() == before {
            break;
        }
    }

    // The key is always the struct device *; the first parameter of suspend
    // tells how to get from it to what the callbacks take.
    let sfile = &files[sus.file];
    let params = sus
        .node
        .child_by_field_name("declarator")
        .and_then(|d| d.child_by_field_name("parameters"))
        .map(|p| sfile.node_text(p).to_string())
        .unwrap_or_default();
    let first = params
        .trim_start_matches('(')
        .split(',')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let squash: String = first.split_whitespace().collect::<Vec<_>>().join(" ");
    let (arg, legacy, is_pci_dev) = if squash.starts_with("struct device *") {
        ("dev".to_string(), false, false)
    } else if squash.starts_with("struct pci_dev *") {
        ("to_pci_dev(dev)".to_string(), true, true)
    } else if squash.starts_with("struct usb_interface *") {
        ("to_usb_interface(dev)".to_string(), true, false)
    } else {
        return Err(PmError::Signature {
            file: sfile.path.display().to_string(),
            line: sfile.line_of(sus.node.start_byte()),
            name: cb.suspend.clone(),
            param: first,
        });
    };

    // PCI when the PM path names PCI helpers (or takes a pci_dev).
    let mut pci = is_pci_dev || cb.pci_bus;
    for n in &reach {
        let d = &defs[n];
        let mut cs = Vec::new();
        calls(d.node, &mut cs);
        if cs.iter().any(|c| {
            callee(&files[d.file], *c)
                .map(|name| rules.pci_markers.contains(name))
                .unwrap_or(false)
        }) {
            pci = true;
        }
    }

    let mut decisions = Vec::new();
    let mut c = String::new();
    let sfile_name = sfile
        .path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rdef = &defs[&cb.resume];
    let _ = writeln!(
        c,
        "\n/*\n * fgft: device checkpoint and restore derived by fgft-cc from {} ({}:{})\n * and {} ({}:{}); rules: tables/pm-rules.toml.\n */",
        cb.suspend,
        sfile_name,
        sfile.line_of(sus.node.start_byte()),
        cb.resume,
        files[rdef.file]
            .path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        files[rdef.file].line_of(rdef.node.start_byte())
    );
    // Copies, callees first (reverse topological by a DFS over `filtered`).
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    fn dfs(
        n: &str,
        defs: &BTreeMap<String, FnDef<'_>>,
        files: &[ParsedFile],
        filtered: &BTreeSet<String>,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<String>,
    ) {
        if !seen.insert(n.to_string()) {
            return;
        }
        let d = &defs[n];
        let mut cs = Vec::new();
        calls(d.node, &mut cs);
        for call in cs {
            if let Some(name) = callee(&files[d.file], call) {
                if filtered.contains(name) {
                    dfs(name, defs, files, filtered, seen, order);
                }
            }
        }
        order.push(n.to_string());
    }
    dfs(&cb.suspend, &defs, files, &filtered, &mut seen, &mut order);
    dfs(&cb.resume, &defs, files, &filtered, &mut seen, &mut order);
    // Only what lives with the suspend code is copied, so only calls to
    // those are renamed (mana's suspend calls mana_remove() of another
    // unit: the original is called).
    let copied: BTreeSet<String> = filtered
        .iter()
        .filter(|n| defs[n.as_str()].file == sus.file)
        .cloned()
        .collect();
    for n in &order {
        let d = &defs[n];
        if d.file != sus.file {
            // A filtered copy must live with the suspend code; a callee in
            // another file is called unfiltered and reported.
            decisions.push(Decision {
                function: n.clone(),
                line: files[d.file].line_of(d.node.start_byte()),
                call: n.clone(),
                action: "unfiltered (other file)",
            });
            continue;
        }
        c.push('\n');
        c.push_str(&copy_filtered(
            &files[d.file],
            d,
            n,
            rules,
            &copied,
            &mut decisions,
        ));
    }
    let copies = std::mem::take(&mut c);
    let glue = device_glue(
        cb,
        prefix,
        pci,
        legacy,
        &arg,
        &origins(files, sus, rdef, cb),
    );
    let dev_checkpoint_fn = pci.then(|| format!("fgft_checkpoint_dev_{prefix}"));
    let dev_restore_fn = format!("fgft_restore_dev_{prefix}");
    let flush_fn = format!("fgft_pm_flush_{prefix}");
    let mut ops = String::new();
    let (checkpoint_fn, restore_fn) = match &cb.key_to_dev {
        Some(key_dev) => {
            let ckpt = format!("fgft_checkpoint_{prefix}");
            let rest = format!("fgft_restore_{prefix}");
            let _ = write!(
                ops,
                "\n/* fgft: device restore for the transaction's key */\n\
static void {rest}(void *key)\n{{\n\t{dev_restore_fn}({key_dev});\n}}\n"
            );
            if let Some(dc) = &dev_checkpoint_fn {
                let _ = write!(
                    ops,
                    "\n/* fgft: device checkpoint for the transaction's key */\n\
static int {ckpt}(void *key)\n{{\n\treturn {dc}({key_dev});\n}}\n"
                );
            }
            let _ = write!(
                ops,
                "\nstatic const struct fgft_dev_ops fgft_dev_ops_{prefix} = {{\n\t.checkpoint = {},\n\t.restore = {rest},\n}};\n",
                if dev_checkpoint_fn.is_some() { ckpt.as_str() } else { "NULL" }
            );
            (dev_checkpoint_fn.as_ref().map(|_| ckpt.clone()), rest)
        }
        None => (dev_checkpoint_fn.clone(), dev_restore_fn.clone()),
    };
    decisions.sort();
    decisions.dedup();
    Ok(Derived {
        file: sus.file,
        c: format!("{copies}{glue}{ops}"),
        copies,
        glue: format!("{glue}{ops}"),
        checkpoint_fn,
        restore_fn,
        dev_checkpoint_fn,
        dev_restore_fn,
        flush_fn,
        pci,
        decisions,
    })
}

/// `name (file:line)` of the suspend and resume callbacks.
fn origins(
    files: &[ParsedFile],
    sus: &FnDef<'_>,
    res: &FnDef<'_>,
    cb: &PmCallbacks,
) -> [String; 2] {
    let at = |d: &FnDef<'_>, name: &str| {
        let f = &files[d.file];
        format!(
            "{name} ({}:{})",
            f.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            f.line_of(d.node.start_byte())
        )
    };
    [at(sus, &cb.suspend), at(res, &cb.resume)]
}

/// The device-level functions: the checkpoint (PCI config space), the
/// restore (PCI config, then the filtered suspend and resume halves), run at
/// once in process context and from a work item in atomic context, and the
/// flush the module calls before its driver goes away.
fn device_glue(
    cb: &PmCallbacks,
    p: &str,
    pci: bool,
    legacy: bool,
    arg: &str,
    origin: &[String; 2],
) -> String {
    let mut c = String::new();
    let extra = if legacy { ", PMSG_SUSPEND" } else { "" };
    // One-line comments: fgft-cc wraps them to 80 columns.
    let _ = writeln!(
        c,
        "\n/* fgft: device restore derived from {} and {}: {}the suspend half, then the resume half, without power transitions; may sleep (process context only) */",
        origin[0],
        origin[1],
        if pci { "the PCI config space, then " } else { "" }
    );
    let _ = writeln!(
        c,
        "static void fgft_restore_now_{p}(struct device *dev)\n{{"
    );
    if pci {
        let _ = writeln!(c, "\tfgft_pci_restore(to_pci_dev(dev));");
    }
    let _ = writeln!(c, "\tfgft_pm_{}({arg}{extra});", cb.suspend);
    let _ = writeln!(c, "\tfgft_pm_{}({arg});\n}}", cb.resume);
    let _ = write!(
        c,
        r#"
/* fgft: a device restore asked for in atomic context, run by a work item */
struct fgft_pm_defer_{p} {{
	struct list_head node;
	struct device *dev;
}};

static LIST_HEAD(fgft_pm_deferred_{p});
static DEFINE_SPINLOCK(fgft_pm_lock_{p});

/* fgft: runs the deferred device restores of {p} */
static void fgft_pm_work_fn_{p}(struct work_struct *work)
{{
	struct fgft_pm_defer_{p} *d;
	unsigned long flags;

	for (;;) {{
		spin_lock_irqsave(&fgft_pm_lock_{p}, flags);
		d = list_first_entry_or_null(&fgft_pm_deferred_{p},
					     struct fgft_pm_defer_{p}, node);
		if (d)
			list_del(&d->node);
		spin_unlock_irqrestore(&fgft_pm_lock_{p}, flags);
		if (!d)
			break;
		fgft_restore_now_{p}(d->dev);
		put_device(d->dev);
		kfree(d);
	}}
}}

static DECLARE_WORK(fgft_pm_work_{p}, fgft_pm_work_fn_{p});

/*
 * fgft: device restore: at once in process context (fgft_may_restore_now()),
 * else deferred; a deferred restore of the same device that has not started
 * yet covers this one too
 */
static void fgft_restore_dev_{p}(struct device *dev)
{{
	struct fgft_pm_defer_{p} *d, *q;
	unsigned long flags;
	bool queued = false;

	if (fgft_may_restore_now()) {{
		fgft_restore_now_{p}(dev);
		return;
	}}
	/* On failure the allocator reports it, and this restore is lost. */
	d = kzalloc(sizeof(*d), GFP_ATOMIC);
	if (!d)
		return;
	spin_lock_irqsave(&fgft_pm_lock_{p}, flags);
	list_for_each_entry(q, &fgft_pm_deferred_{p}, node)
		queued |= q->dev == dev;
	if (!queued) {{
		d->dev = get_device(dev);
		list_add_tail(&d->node, &fgft_pm_deferred_{p});
	}}
	spin_unlock_irqrestore(&fgft_pm_lock_{p}, flags);
	if (queued) {{
		kfree(d);
		return;
	}}
	schedule_work(&fgft_pm_work_{p});
}}

/* fgft: runs pending deferred restores (before the driver goes away) */
void fgft_pm_flush_{p}(void)
{{
	flush_work(&fgft_pm_work_{p});
}}
"#
    );
    if pci {
        let _ = write!(
            c,
            r#"
/* fgft: device checkpoint: the PCI config space {sus} saves, kept by the runtime in a reusable saved state; in atomic context it cannot take a new one and keeps the last, and with none yet the transaction runs without (its restore then skips the config space) */
static int fgft_checkpoint_dev_{p}(struct device *dev)
{{
	int err = fgft_pci_checkpoint(to_pci_dev(dev));

	return err == -EAGAIN ? 0 : err;
}}
"#,
            sus = cb.suspend
        );
    }
    c
}

fn copy_filtered(
    file: &ParsedFile,
    d: &FnDef<'_>,
    name: &str,
    rules: &Rules,
    filtered: &BTreeSet<String>,
    decisions: &mut Vec<Decision>,
) -> String {
    let def = d.node;
    let body = def
        .child_by_field_name("body")
        .expect("definition has a body");
    let mut edits: Vec<(Range<usize>, String)> =
        vec![(d.name_range.clone(), format!("fgft_pm_{name}"))];
    let mut cs = Vec::new();
    calls(body, &mut cs);
    let mut dropped: Vec<Range<usize>> = Vec::new();
    for call in cs {
        let Some(cal) = callee(file, call) else {
            continue;
        };
        let r = call.byte_range();
        if dropped.iter().any(|o| o.start <= r.start && r.end <= o.end) {
            continue;
        }
        let line = file.line_of(r.start);
        if rules.drops(cal) {
            let text = one_line(file.node_text(call));
            decisions.push(Decision {
                function: name.to_string(),
                line,
                call: cal.to_string(),
                action: "dropped",
            });
            let parent = call.parent();
            if parent.map(|p| p.kind()) == Some("expression_statement") {
                let p = parent.unwrap();
                edits.push((
                    p.byte_range(),
                    format!("do {{ }} while (0); /* fgft-pm: dropped {text} */"),
                ));
                dropped.push(p.byte_range());
            } else {
                edits.push((r.clone(), format!("0 /* fgft-pm: dropped {text} */")));
                dropped.push(r);
            }
        } else if filtered.contains(cal) {
            let f = call.child_by_field_name("function").unwrap();
            edits.push((f.byte_range(), format!("fgft_pm_{cal}")));
            decisions.push(Decision {
                function: name.to_string(),
                line,
                call: cal.to_string(),
                action: "filtered copy",
            });
        }
    }
    // Edits nested in a dropped range (renames inside dropped calls) go.
    edits.sort_by_key(|e| e.0.start);
    let mut clean = Edits::default();
    for (r, rep) in edits {
        if !clean.touches(&r) {
            clean.replace(r, rep);
        }
    }
    let start = def.start_byte();
    let mut out = String::new();
    let origin = format!(
        "/* fgft: filtered copy of {name} ({}:{}) */\n",
        file.path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        file.line_of(start)
    );
    out.push_str(&origin);
    let head = &file.text[start..body.start_byte()];
    if !head.split_whitespace().any(|w| w == "static") {
        out.push_str("static ");
    }
    let copy = clean
        .apply_within(&file.text, start..def.end_byte())
        .expect("edits of one definition, none overlapping");
    out.push_str(&copy);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests;
