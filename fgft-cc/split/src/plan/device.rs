//! Device checkpoints: which functions save and restore the device state
//! around each isolated entry point, and how each entry's transaction key
//! (its first pointer parameter) reaches them.
//!
//! The functions come from the driver's own PM code (dev_pm_ops
//! suspend/resume, SIMPLE_DEV_PM_OPS-style macros, or the legacy
//! pci_driver/usb_driver .suspend/.resume), turned into a checkpoint and a
//! restore by fgft-pm, or from annotations (FGFT_CHECKPOINT/FGFT_RESTORE,
//! `[checkpoint]`), which override either.  Each distinct key conversion
//! (`[keys]` of pm-rules.toml for known key types, or `key-to-dev`
//! annotations) gets one `struct fgft_dev_ops`; every stub registers its key
//! with it (`fgft_dev_ensure`) before its transaction begins.

use super::{FileRole, Inputs, Plan};
use crate::diag::Located;
use fgft_facts::ctype::CType;
use fgft_facts::program::FileId;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One `struct fgft_dev_ops` of the main module.
#[derive(Debug, Clone)]
pub struct DevOps {
    pub name: String,
    /// C expression over `key` given to the checkpoint and restore.
    pub key_expr: String,
    /// Where the conversion comes from (for the plan).
    pub why: String,
    /// The entry points whose stubs use it.
    pub entries: Vec<String>,
}

/// The device-checkpoint part of the plan.
#[derive(Debug, Clone, Default)]
pub struct DevicePlan {
    /// Lines for plan.txt (decisions included).
    pub summary: Vec<String>,
    pub ops: Vec<DevOps>,
    /// Filtered copies of the driver's PM functions (driver text), for the
    /// file that defines them.
    pub copies: Option<(FileId, String)>,
    /// Generated C appended to each main-module file.
    pub glue: BTreeMap<FileId, String>,
    /// Declarations for the main module's shared header.
    pub decls: Vec<String>,
    /// Called by the module's exit before the driver's own exit: runs the
    /// restores deferred from atomic context while the devices are bound.
    pub flush: Option<String>,
}

/// Where the PM callbacks were found.
struct PmFound {
    suspend: String,
    resume: String,
    /// `dev_pm_ops` or the legacy bus struct.
    how: String,
    file: FileId,
    line: usize,
}

fn line_range(text: &str, line: usize) -> std::ops::Range<usize> {
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return start..start + l.trim_end().len();
        }
        start += l.len();
    }
    0..0
}

/// The suspend/resume pair of the driver, from its slots.
fn find_pm(inp: &Inputs<'_>) -> Option<PmFound> {
    let defined = |f: &str| {
        inp.prog
            .def(f)
            .is_some_and(|d| inp.files[d.file].role != FileRole::Header)
    };
    // (struct, file, var) -> (suspend, resume, line)
    type Pair = (Option<String>, Option<String>, usize);
    let mut groups: BTreeMap<(u8, FileId, String, String), Pair> = BTreeMap::new();
    for (fid, r) in inp.roots {
        let rank = match r.struct_name.as_str() {
            "dev_pm_ops" => 0,
            "pci_driver" | "usb_driver" => 1,
            _ => continue,
        };
        if r.field != "suspend" && r.field != "resume" {
            continue;
        }
        let g = groups
            .entry((rank, *fid, r.var.clone(), r.struct_name.clone()))
            .or_insert((None, None, r.line));
        g.2 = g.2.min(r.line);
        if r.field == "suspend" {
            g.0 = Some(r.function.clone());
        } else {
            g.1 = Some(r.function.clone());
        }
    }
    groups
        .into_iter()
        .find_map(|((_, fid, _, st), (s, r, line))| match (s, r) {
            (Some(s), Some(r)) if defined(&s) && defined(&r) => Some(PmFound {
                suspend: s,
                resume: r,
                how: if st == "dev_pm_ops" {
                    "dev_pm_ops suspend/resume".into()
                } else {
                    format!("legacy {st} .suspend/.resume")
                },
                file: fid,
                line,
            }),
            _ => None,
        })
}

/// A device-level function: its name, the file that defines it, how it is
/// called, and where it comes from.
struct DevFn {
    name: String,
    file: FileId,
    /// Returns void (an annotated checkpoint may).
    void: bool,
    /// The type of its parameter (what the key conversion must give).
    param: CType,
    /// The name of that parameter (the key-level wrapper's local).
    param_name: String,
    origin: String,
}

fn struct_device_ptr() -> CType {
    CType::ptr(CType::Record("struct device".into()))
}

/// A device checkpoint or restore chosen for the driver.
type Chosen = (Option<DevFn>, Option<DevFn>);

/// Plans the device checkpoints; sets each entry's `dev_ops`.  A driver
/// with none registers no device, so its transactions begin with no key
/// (the runtime would look each one up in vain).
pub fn plan(inp: &Inputs<'_>, plan: &mut Plan) {
    if plan.entries.is_empty() {
        return;
    }
    plan_ops(inp, plan);
    if plan.device.ops.is_empty() {
        for e in plan.entries.iter_mut() {
            e.spec.dev_key = "NULL".into();
        }
    }
}

fn plan_ops(inp: &Inputs<'_>, plan: &mut Plan) {
    let mut dp = DevicePlan::default();
    if inp.no_checkpoint || inp.ann.no_checkpoint.is_some() {
        let why = match &inp.ann.no_checkpoint {
            Some(l) if !inp.no_checkpoint => format!("[checkpoint] none = true ({l})"),
            _ => "--no-checkpoint".into(),
        };
        dp.summary.push(format!("device checkpoint: none ({why})"));
        plan.device = dp;
        return;
    }
    let (ckpt, rest) = choose_functions(inp, plan, &mut dp);
    if ckpt.is_none() && rest.is_none() {
        plan.device = dp;
        return;
    }
    let Some(want) = wanted_param(inp, &ckpt, &rest, &mut dp, &mut plan.diags) else {
        plan.device = dp;
        return;
    };
    let by_expr = key_conversions(inp, plan, &want, &mut dp);
    for e in plan.entries.iter_mut() {
        e.spec.dev_ops = by_expr
            .iter()
            .find(|o| o.entries.contains(&e.spec.name))
            .map(|o| o.name.clone());
    }
    for o in &by_expr {
        ops_glue(o, &ckpt, &rest, &mut dp);
    }
    dp.ops = by_expr;
    plan.device = dp;
}

/// An annotated checkpoint or restore function (`what`), if the driver
/// defines it; an error at the annotation if not.
fn annotated(
    inp: &Inputs<'_>,
    r: &Option<fgft_annotations::FnRef>,
    what: &str,
    diags: &mut Vec<Located>,
) -> Option<DevFn> {
    let prog = inp.prog;
    let r = r.as_ref()?;
    match prog.def(&r.name) {
        Some(f) if inp.files[f.file].role != FileRole::Header => Some(DevFn {
            name: r.name.clone(),
            file: f.file,
            void: f.ret_text.trim() == "void",
            param: f
                .params
                .first()
                .map(|p| prog.resolve(&p.ty))
                .unwrap_or(CType::Unknown),
            param_name: f
                .params
                .first()
                .map(|p| p.name.clone())
                .filter(|n| !n.is_empty() && n != "key")
                .unwrap_or_else(|| "dev".into()),
            origin: format!(
                "annotated {what} {} ({})",
                r.name,
                super::shown_origin(inp, f.file, f.line)
            ),
        }),
        _ => {
            diags.push(Located {
                path: r.loc.file.clone(),
                text: std::fs::read_to_string(&r.loc.file).unwrap_or_default(),
                range: r.loc.start..r.loc.end,
                message: format!(
                    "{what} function `{}` is not defined in the driver's source files",
                    r.name
                ),
                label: "not defined".into(),
                notes: vec![],
                warning: false,
            });
            None
        }
    }
}

/// The checkpoint and restore: annotated ones win, the others are derived
/// from the PM code.  Every decision goes to the summary.
fn choose_functions(inp: &Inputs<'_>, plan: &mut Plan, dp: &mut DevicePlan) -> Chosen {
    let ann_ckpt = annotated(inp, &inp.ann.checkpoint, "checkpoint", &mut plan.diags);
    let ann_rest = annotated(inp, &inp.ann.restore, "restore", &mut plan.diags);
    let pm = find_pm(inp);
    let (mut der_ckpt, mut der_rest) = (None, None);
    if let (Some(pm), true) = (&pm, ann_ckpt.is_none() || ann_rest.is_none()) {
        (der_ckpt, der_rest) = derive(inp, plan, pm, dp, ann_ckpt.is_none(), ann_rest.is_none());
    }
    let ckpt = ann_ckpt.or(der_ckpt);
    let rest = ann_rest.or(der_rest);
    if ckpt.is_none() && rest.is_none() {
        if pm.is_none() && inp.ann.checkpoint.is_none() && inp.ann.restore.is_none() {
            no_pm_warning(inp, plan);
            dp.summary.push(
                "device checkpoint: none (the driver has no PM code and no annotation)".into(),
            );
        } else if pm.is_none() {
            dp.summary
                .push("device checkpoint: none (the annotated functions are not defined)".into());
        } else {
            dp.summary
                .push("device checkpoint: none (derivation failed; see the warning)".into());
        }
        return (None, None);
    }
    if dp.summary.is_empty() {
        dp.summary
            .push("device checkpoint: from the annotations".to_string());
    }
    if let Some(c) = &ckpt {
        dp.summary
            .push(format!("  checkpoint: {} ({})", c.name, c.origin));
    } else {
        dp.summary
            .push("  checkpoint: none (the restore stands alone)".to_string());
    }
    if let Some(r) = &rest {
        dp.summary
            .push(format!("  restore: {} ({})", r.name, r.origin));
    } else {
        dp.summary.push("  restore: none".to_string());
    }
    (ckpt, rest)
}

/// A checkpoint and a restore derived from the PM callbacks by fgft-pm
/// (`need_ckpt`/`need_rest`: the ones not annotated).
fn derive(
    inp: &Inputs<'_>,
    plan: &mut Plan,
    pm: &PmFound,
    dp: &mut DevicePlan,
    need_ckpt: bool,
    need_rest: bool,
) -> Chosen {
    let prog = inp.prog;
    let d = plan.driver.clone();
    let mut der_ckpt: Option<DevFn> = None;
    let mut der_rest: Option<DevFn> = None;
    let pci_bus = inp.roots.iter().any(|(_, r)| r.struct_name == "pci_driver");
    let cb = fgft_pm::PmCallbacks {
        suspend: pm.suspend.clone(),
        resume: pm.resume.clone(),
        pci_bus,
        key_to_dev: None,
    };
    let at = |name: &str| {
        prog.def(name)
            .map(|f| format!("{name} ({})", super::shown_origin(inp, f.file, f.line)))
            .unwrap_or_else(|| name.to_string())
    };
    dp.summary.push(format!(
        "device checkpoint: derived from {} ({}): {}, {}",
        pm.how,
        super::shown_origin(inp, pm.file, pm.line),
        at(&pm.suspend),
        at(&pm.resume)
    ));
    match fgft_pm::derive(&prog.files, &cb, inp.pm_rules, &d) {
        Ok(der) => {
            if let Some(c) = &der.dev_checkpoint_fn {
                der_ckpt = Some(DevFn {
                    name: c.clone(),
                    file: der.file,
                    void: false,
                    param: struct_device_ptr(),
                    param_name: "dev".into(),
                    origin: format!("the PCI config space {} saves", pm.suspend),
                });
            }
            der_rest = Some(DevFn {
                name: der.dev_restore_fn.clone(),
                file: der.file,
                void: true,
                param: struct_device_ptr(),
                param_name: "dev".into(),
                origin: format!(
                    "{}filtered {} then {}",
                    if der.pci {
                        "PCI config space, then "
                    } else {
                        ""
                    },
                    pm.suspend,
                    pm.resume
                ),
            });
            for x in &der.decisions {
                dp.summary.push(format!(
                    "  pm: {} {}:{} {}",
                    x.action, x.function, x.line, x.call
                ));
            }
            let used_rest = need_rest;
            let used_ckpt = need_ckpt && der_ckpt.is_some();
            if used_rest || used_ckpt {
                dp.copies = Some((der.file, der.copies.clone()));
                dp.glue.entry(der.file).or_default().push_str(&der.glue);
                dp.decls.push(format!("void {}(void);", der.flush_fn));
                dp.flush = Some(der.flush_fn.clone());
            }
        }
        Err(e) => {
            let f = prog.def(&pm.suspend);
            plan.diags.push(Located {
                path: inp.files[pm.file].shown.clone(),
                text: prog.files[pm.file].text.clone(),
                range: f
                    .filter(|f| f.file == pm.file)
                    .map(|f| f.name_range.clone())
                    .unwrap_or_else(|| line_range(&prog.files[pm.file].text, pm.line)),
                message: format!("no device checkpoint derived from the PM code: {e}"),
                label: "PM callback".into(),
                notes: vec![
                    "annotate a checkpoint and a restore (FGFT_CHECKPOINT/FGFT_RESTORE or [checkpoint] in the sidecar)".into(),
                ],
                warning: true,
            });
        }
    }
    (der_ckpt, der_rest)
}

/// What the key conversion must give: the functions' parameter type
/// (`None`, with a warning, when the checkpoint and restore disagree).
fn wanted_param(
    inp: &Inputs<'_>,
    ckpt: &Option<DevFn>,
    rest: &Option<DevFn>,
    dp: &mut DevicePlan,
    diags: &mut Vec<Located>,
) -> Option<CType> {
    let prog = inp.prog;
    match (ckpt, rest) {
        (Some(c), Some(r)) if c.param != r.param => {
            let f = &prog.fns[prog.defs(&c.name).first().copied().unwrap_or(0)];
            diags.push(inp_diag_at(
                inp,
                f.file,
                f.name_range.clone(),
                format!(
                    "the device checkpoint `{}` takes {} but the restore `{}` takes {}: no device checkpoint",
                    c.name,
                    c.param.c_spelling(),
                    r.name,
                    r.param.c_spelling()
                ),
                vec!["annotate a checkpoint and a restore that take the same type".into()],
            ));
            dp.summary
                .push("  no device checkpoint: checkpoint and restore take different types".into());
            None
        }
        (Some(f), _) | (None, Some(f)) => Some(f.param.clone()),
        (None, None) => Some(CType::Unknown),
    }
}

/// Each entry's key conversion; one ops per distinct expression.  Entries
/// whose key has no known conversion get a warning (one per key type).
fn key_conversions(
    inp: &Inputs<'_>,
    plan: &mut Plan,
    want: &CType,
    dp: &mut DevicePlan,
) -> Vec<DevOps> {
    let prog = inp.prog;
    let d = plan.driver.clone();
    let want_dev = *want == struct_device_ptr();
    let mut by_expr: Vec<DevOps> = Vec::new();
    type Unknown = BTreeMap<(String, String), (FileId, std::ops::Range<usize>, Vec<String>)>;
    let mut unknown: Unknown = BTreeMap::new();
    let names: Vec<String> = plan.entries.iter().map(|e| e.spec.name.clone()).collect();
    for (k, name) in names.iter().enumerate() {
        let e = &plan.entries[k];
        let def = &prog.fns[e.def];
        if e.dev_key_param.is_empty() {
            dp.summary.push(format!(
                "  {name}: no pointer parameter to key the device: no device checkpoint"
            ));
            continue;
        }
        let kty = e.dev_key_ty.clone();
        let kname = if e.spec.dev_key == e.dev_key_param {
            e.dev_key_param.clone()
        } else {
            e.spec.dev_key.clone()
        };
        let tag = match &kty {
            CType::Ptr(t) => prog.resolve(t).record().map(str::to_string),
            _ => None,
        };
        let (expr, why) = if let Some(a) = inp.ann.key_to_dev_of(name) {
            (a.expr.clone(), format!("annotated at {}", a.loc))
        } else if kty == *want {
            ("key".to_string(), "the key itself".to_string())
        } else if let Some(x) = tag
            .as_deref()
            .filter(|_| want_dev)
            .and_then(|t| inp.pm_rules.key_to_dev(t))
        {
            (
                x.to_string(),
                format!(
                    "{} * (pm-rules.toml [keys])",
                    tag.as_deref().unwrap_or_default()
                ),
            )
        } else {
            let k = (kty.c_spelling(), kname.clone());
            unknown
                .entry(k)
                .or_insert_with(|| (def.file, def.name_range.clone(), Vec::new()))
                .2
                .push(name.clone());
            dp.summary.push(format!(
                "  {name}: key {kname} unknown: no device checkpoint"
            ));
            continue;
        };
        match by_expr.iter_mut().find(|o| o.key_expr == expr) {
            Some(o) => o.entries.push(name.clone()),
            None => {
                let n = by_expr.len();
                by_expr.push(DevOps {
                    name: if n == 0 {
                        format!("fgft_dev_ops_{d}")
                    } else {
                        format!("fgft_dev_ops_{d}_{n}")
                    },
                    key_expr: expr,
                    why,
                    entries: vec![name.clone()],
                });
            }
        }
    }
    for ((ty, pname), (file, range, entries)) in unknown {
        let shown = if entries.len() > 3 {
            format!(
                "{}, ... ({} entry points)",
                entries[..3].join(", "),
                entries.len()
            )
        } else {
            entries.join(", ")
        };
        let list = entries
            .iter()
            .map(|e| format!("\"{e}\""))
            .collect::<Vec<_>>()
            .join(", ");
        plan.diags.push(inp_diag_at(
            inp,
            file,
            range,
            format!(
                "device key `{pname}` ({ty}) of isolated {shown} has no known way to the {} the device checkpoint and restore take: these entry points run with no device checkpoint",
                want.c_spelling()
            ),
            vec![format!(
                "add to the sidecar: [[checkpoint.key]] entries = [{list}], key-to-dev = \"<C over key, a void * holding the {ty}>\" (or [checkpoint] key-to-dev for all)"
            )],
        ));
    }
    by_expr
}

/// The argument a key-level wrapper passes to `f`: the key itself, or a
/// local named and typed as `f`'s parameter holding the converted key
/// (declared into `t`), so the call reads as one short line.
fn key_local(t: &mut String, expr: &str, f: &DevFn) -> String {
    if expr == "key" || f.param == CType::Unknown {
        return expr.to_string();
    }
    let ty = f.param.c_spelling();
    let sep = if ty.ends_with('*') { "" } else { " " };
    let _ = writeln!(t, "\t{ty}{sep}{} = {expr};\n", f.param_name);
    f.param_name.clone()
}

/// The key-level checkpoint and restore wrappers of one ops, and the ops.
fn ops_glue(o: &DevOps, ckpt: &Option<DevFn>, rest: &Option<DevFn>, dp: &mut DevicePlan) {
    let who = if o.entries.len() <= 3 {
        o.entries.join(", ")
    } else {
        format!("{} entry points", o.entries.len())
    };
    let suffix = o.name.trim_start_matches("fgft_dev_ops_").to_string();
    dp.summary.push(format!(
        "  ops {}: key -> {} ({}); entries: {}",
        o.name,
        o.key_expr,
        o.why,
        o.entries.join(" ")
    ));
    let ck_name = format!("fgft_checkpoint_{suffix}");
    let rs_name = format!("fgft_restore_{suffix}");
    if let Some(c) = &ckpt {
        let t = dp.glue.entry(c.file).or_default();
        let _ = writeln!(
            t,
            "\n/* fgft: device checkpoint of {} for the key of {who} (key: {}) */",
            c.name, o.why
        );
        let _ = writeln!(t, "int {ck_name}(void *key)\n{{");
        let arg = key_local(t, &o.key_expr, c);
        if c.void {
            let _ = writeln!(t, "\t{}({arg});\n\treturn 0;\n}}", c.name);
        } else {
            let _ = writeln!(t, "\treturn {}({arg});\n}}", c.name);
        }
        dp.decls.push(format!("int {ck_name}(void *key);"));
    }
    if let Some(r) = &rest {
        let t = dp.glue.entry(r.file).or_default();
        let _ = writeln!(
            t,
            "\n/* fgft: device restore by {} for the key of {who} (key: {}) */",
            r.name, o.why
        );
        let _ = writeln!(t, "void {rs_name}(void *key)\n{{");
        let arg = key_local(t, &o.key_expr, r);
        let _ = writeln!(t, "\t{}({arg});\n}}", r.name);
        dp.decls.push(format!("void {rs_name}(void *key);"));
    }
    let home = rest.as_ref().or(ckpt.as_ref()).map(|f| f.file).unwrap_or(0);
    let t = dp.glue.entry(home).or_default();
    let _ = writeln!(t, "\n/* fgft: device checkpoint callbacks of {who} */");
    let _ = writeln!(t, "const struct fgft_dev_ops {} = {{", o.name);
    let _ = writeln!(
        t,
        "\t.checkpoint = {},",
        if ckpt.is_some() {
            ck_name.as_str()
        } else {
            "NULL"
        }
    );
    let _ = writeln!(
        t,
        "\t.restore = {},\n}};",
        if rest.is_some() {
            rs_name.as_str()
        } else {
            "NULL"
        }
    );
    dp.decls
        .push(format!("extern const struct fgft_dev_ops {};", o.name));
}

fn inp_diag_at(
    inp: &Inputs<'_>,
    file: FileId,
    range: std::ops::Range<usize>,
    message: String,
    notes: Vec<String>,
) -> Located {
    inp.sources()
        .located(file, range, message, "device key", notes, true)
}

/// The driver has no PM code and no annotation: a warning at its driver
/// struct (or its first isolated entry point).
fn no_pm_warning(inp: &Inputs<'_>, plan: &mut Plan) {
    let prog = inp.prog;
    const BUSES: &[&str] = &[
        "pci_driver",
        "usb_driver",
        "serio_driver",
        "platform_driver",
        "i2c_driver",
        "spi_driver",
    ];
    let at = inp
        .roots
        .iter()
        .filter(|(_, r)| BUSES.contains(&r.struct_name.as_str()))
        .min_by_key(|(f, r)| (*f, r.line))
        .map(|(f, r)| {
            (
                *f,
                line_range(&prog.files[*f].text, r.line),
                format!("{} {}", r.struct_name, r.var),
            )
        })
        .or_else(|| {
            plan.entries.first().map(|e| {
                let f = &prog.fns[e.def];
                (f.file, f.name_range.clone(), format!("`{}`", f.name))
            })
        });
    let Some((file, range, what)) = at else {
        return;
    };
    plan.diags.push(Located {
        path: inp.files[file].shown.clone(),
        text: prog.files[file].text.clone(),
        range,
        message: format!(
            "{} has no suspend/resume PM code (dev_pm_ops, or pci_driver/usb_driver .suspend/.resume): its isolated entry points run with no device checkpoint, and an abort cannot restore the device",
            plan.module
        ),
        label: format!("{what}: no PM callbacks"),
        notes: vec![
            "name a checkpoint and a restore: FGFT_CHECKPOINT/FGFT_RESTORE, or [checkpoint] checkpoint/restore (and key-to-dev) in the sidecar".into(),
            "or say there is none: [checkpoint] none = true, or --no-checkpoint".into(),
        ],
        warning: true,
    });
}
