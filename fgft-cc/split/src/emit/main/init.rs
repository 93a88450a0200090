//! Module init and exit: the generated init registers the isolated entry
//! points (and fills the SFI module's address table) before the driver's
//! own init; the exit unregisters them after the driver's exit.

use super::{bind_lists, module_hooks, stem, Ctx, Hook, MainFiles};
use fgft_facts::program::FileId;
use std::fmt::Write as _;

/// Hooks module init/exit; returns the file that holds them.
pub(super) fn hook_init(cx: &mut Ctx<'_, '_>, mf: &mut MainFiles) -> Option<FileId> {
    if let Some(pairs) = joint_hooks(cx) {
        let fid = hook_joint(cx, mf, &pairs);
        registration(cx, &mut mf.tails[fid]);
        return Some(fid);
    }
    let (inits, exits) = module_hooks(cx);
    let (init, exit) = (inits.last().cloned(), exits.last().cloned());
    let Some(init) = init else {
        let e = cx.plan.entries.first()?;
        let f = cx.src.prog.fns[e.def].file;
        // A library module (ath6kl_core: its bus modules create the
        // devices) has neither: the generated code gets its own.
        if exit.is_none() {
            let fid = e.home.unwrap_or(f);
            own_init(cx, &mut mf.tails[fid]);
            registration(cx, &mut mf.tails[fid]);
            return Some(fid);
        }
        let msg = format!(
            "no module_init (or module_*_driver) found in {}: fgft-cc needs one to register \
             the isolated entry points",
            cx.plan.module
        );
        cx.error(f, 0..0, msg);
        return None;
    };
    let fid = init.0;
    if init.2 == "module_init" {
        hook_module_init(cx, mf, &init, exit.as_ref());
    } else {
        hook_driver_macro(cx, mf, &init);
    }
    registration(cx, &mut mf.tails[fid]);
    Some(fid)
}

/// Several upstream modules built into one (fs/fat's fat.ko and vfat.ko):
/// each has its own `module_init(f)` (and `module_exit(g)` in the same
/// file), in source order.  None when the driver has at most one init, or
/// an init that is not `module_init`.
fn joint_hooks(cx: &Ctx<'_, '_>) -> Option<Vec<(Hook, Option<Hook>)>> {
    let (inits, exits) = module_hooks(cx);
    if inits.len() < 2 || inits.iter().any(|h| h.2 != "module_init") {
        return None;
    }
    Some(
        inits
            .into_iter()
            .map(|i| {
                let e = exits.iter().find(|e| e.0 == i.0).cloned();
                (i, e)
            })
            .collect(),
    )
}

/// The prototypes of [`hook_joint`]'s trampolines, for the main header.
pub(super) fn joint_decls(cx: &Ctx<'_, '_>) -> Vec<String> {
    let d = &cx.plan.driver;
    let mut out = Vec::new();
    for (k, (_, exit)) in joint_hooks(cx).into_iter().flatten().enumerate() {
        out.push(format!("int __init fgft_init_{d}_{}(void);", k + 1));
        if exit.is_some() {
            out.push(format!("void fgft_exit_{d}_{}(void);", k + 1));
        }
    }
    out
}

/// Several modules' inits in one module: each `module_init(f)` becomes a
/// trampoline `fgft_init_D_K` (its `module_exit(g)`, `fgft_exit_D_K`), and
/// one init, in the file of the last, registers the isolated entry points
/// and runs them in order, running the exits of those that succeeded if
/// one fails; one exit runs the exits in the other order.  The file of the
/// generated init.
fn hook_joint(cx: &mut Ctx<'_, '_>, mf: &mut MainFiles, pairs: &[(Hook, Option<Hook>)]) -> FileId {
    let d = cx.plan.driver.clone();
    let header = format!("#include \"fgft_{d}_main.h\"\n\n");
    for (k, ((fid, item, _, arg), exit)) in pairs.iter().enumerate() {
        let k = k + 1;
        let mut t = header.clone();
        let _ = writeln!(
            t,
            "/* fgft: {arg}, run by the module's one init (fgft_init_{d}) */"
        );
        let _ = writeln!(t, "int __init fgft_init_{d}_{k}(void)");
        let _ = writeln!(t, "{{\n\treturn {arg}();\n}}");
        mf.edits[*fid].replace(item.clone(), fgft_stubs::tidy(&t));
        if let Some((efid, eitem, _, earg)) = exit {
            let mut t = String::new();
            if efid != fid || eitem.start < item.start {
                t.push_str(&header);
            }
            let _ = writeln!(
                t,
                "/* fgft: {earg}, run by the module's one exit (fgft_exit_{d}) */"
            );
            let _ = writeln!(t, "void fgft_exit_{d}_{k}(void)");
            let _ = writeln!(t, "{{\n\t{earg}();\n}}");
            mf.edits[*efid].replace(eitem.clone(), fgft_stubs::tidy(&t));
        }
    }
    let n = pairs.len();
    let has_exit = |k: usize| pairs[k - 1].1.is_some();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\n/* fgft: registers the isolated entry points, then runs the inits of the {n} modules built into {}, in order */",
        cx.plan.module
    );
    let _ = writeln!(t, "static int __init fgft_init_{d}(void)");
    let _ = writeln!(t, "{{\n\tint err = fgft_register_{d}();\n");
    t.push_str("\tif (err)\n\t\treturn err;\n");
    for k in 1..=n {
        let _ = writeln!(t, "\terr = fgft_init_{d}_{k}();");
        let _ = writeln!(t, "\tif (err)\n\t\tgoto undo{k};");
    }
    t.push_str("\treturn 0;\n");
    for k in (1..=n).rev() {
        let _ = writeln!(t, "undo{k}:");
        if k > 1 && has_exit(k - 1) {
            let _ = writeln!(t, "\tfgft_exit_{d}_{}();", k - 1);
        }
    }
    let _ = writeln!(t, "\tfgft_unregister_{d}();\n\treturn err;\n}}\n");
    let _ = writeln!(
        t,
        "/* fgft: runs the exits of the modules built into {} in the other order, then unregisters the isolated entry points */",
        cx.plan.module
    );
    let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
    let _ = write!(t, "{{\n{}", flush(cx));
    for k in (1..=n).rev().filter(|k| has_exit(*k)) {
        let _ = writeln!(t, "\tfgft_exit_{d}_{k}();");
    }
    let _ = writeln!(t, "\tfgft_unregister_{d}();\n}}\n");
    let _ = writeln!(t, "module_init(fgft_init_{d});");
    let _ = writeln!(t, "module_exit(fgft_exit_{d});");
    let fid = pairs[n - 1].0 .0;
    mf.tails[fid].push_str(&t);
    fid
}

/// A module with no init and no exit of its own: an init that registers
/// the isolated entry points and an exit that unregisters them, in the
/// generated code (which the registration functions follow).
fn own_init(cx: &Ctx<'_, '_>, t: &mut String) {
    let d = &cx.plan.driver;
    let flush = flush(cx);
    let _ = writeln!(t, "\nint fgft_register_{d}(void);");
    let _ = writeln!(t, "void fgft_unregister_{d}(void);");
    let _ = writeln!(
        t,
        "\n/* fgft: {} has no module init: registers the isolated entry points */",
        cx.plan.module
    );
    let _ = writeln!(t, "static int __init fgft_init_{d}(void)");
    let _ = writeln!(t, "{{\n\treturn fgft_register_{d}();\n}}\n");
    let _ = writeln!(
        t,
        "/* fgft: {} has no module exit: unregisters the isolated entry points */",
        cx.plan.module
    );
    let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
    let _ = writeln!(t, "{{\n{flush}\tfgft_unregister_{d}();\n}}\n");
    let _ = writeln!(t, "module_init(fgft_init_{d});");
    let _ = writeln!(t, "module_exit(fgft_exit_{d});");
}

/// `\tFLUSH();\n` when device restores deferred from atomic context must
/// run while the devices are still bound.
fn flush(cx: &Ctx<'_, '_>) -> String {
    cx.plan
        .device
        .flush
        .as_ref()
        .map(|f| format!("\t{f}();\n"))
        .unwrap_or_default()
}

/// `module_init(f)`: a generated init registers, then runs `f`;
/// `module_exit(g)` likewise, in the other order.
fn hook_module_init(cx: &Ctx<'_, '_>, mf: &mut MainFiles, init: &Hook, exit: Option<&Hook>) {
    let d = &cx.plan.driver;
    let (fid, item, _, arg) = init;
    let header = format!("#include \"fgft_{d}_main.h\"\n\n");
    let mut t = header.clone();
    let _ = writeln!(
        t,
        "/* fgft: registers the isolated entry points, then runs {arg} */"
    );
    let _ = writeln!(t, "static int __init fgft_init_{d}(void)");
    let _ = writeln!(t, "{{\n\tint err = fgft_register_{d}();\n");
    t.push_str("\tif (err)\n\t\treturn err;\n");
    let _ = writeln!(t, "\terr = {arg}();");
    let _ = writeln!(t, "\tif (err)\n\t\tfgft_unregister_{d}();");
    t.push_str("\treturn err;\n}\n\n");
    mf.edits[*fid].insert(item.start, fgft_stubs::tidy(&t));
    replace_arg(cx, mf, *fid, item, &format!("fgft_init_{d}"));
    let flush = flush(cx);
    match exit {
        Some((efid, eitem, _, earg)) => {
            let mut t = String::new();
            // The exit hook may stand first (`module_exit(ipw_exit);
            // module_init(ipw_init);`): it includes the header then.
            if efid != fid || eitem.start < item.start {
                t.push_str(&header);
            }
            let _ = writeln!(
                t,
                "/* fgft: runs {earg}, then unregisters the isolated entry points */"
            );
            let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
            let _ = writeln!(t, "{{\n{flush}\t{earg}();\n\tfgft_unregister_{d}();\n}}\n");
            mf.edits[*efid].insert(eitem.start, fgft_stubs::tidy(&t));
            replace_arg(cx, mf, *efid, eitem, &format!("fgft_exit_{d}"));
        }
        None => {
            let mut t = String::new();
            let _ = writeln!(t, "\n/* fgft: unregisters the isolated entry points */");
            let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
            let _ = writeln!(t, "{{\n{flush}\tfgft_unregister_{d}();\n}}\n");
            let _ = writeln!(t, "module_exit(fgft_exit_{d});");
            mf.edits[*fid].insert(item.end, fgft_stubs::tidy(&t));
        }
    }
}

/// Replaces the argument of the macro use `item` by `with`.
fn replace_arg(
    cx: &Ctx<'_, '_>,
    mf: &mut MainFiles,
    fid: FileId,
    item: &std::ops::Range<usize>,
    with: &str,
) {
    let text = &cx.src.prog.files[fid].text[item.clone()];
    if let (Some(a), Some(b)) = (text.find('('), text.rfind(')')) {
        mf.edits[fid].replace(item.start + a + 1..item.start + b, with.to_string());
    }
}

/// `module_pci_driver(x)` and the like (module-init.toml): replaced by an
/// init and an exit that register the driver as the macro did.
fn hook_driver_macro(cx: &Ctx<'_, '_>, mf: &mut MainFiles, init: &Hook) {
    let d = &cx.plan.driver;
    let (fid, item, kind, arg) = init;
    let Some(m) = cx.opts.module_macros.get(kind) else {
        return;
    };
    let (reg, unreg) = (m.register_call(arg), m.unregister_call(arg));
    let flush = flush(cx);
    let mut t = format!("#include \"fgft_{d}_main.h\"\n\n");
    let _ = writeln!(
        t,
        "/* fgft: registers the isolated entry points, then the driver (was {kind}({arg})) */"
    );
    let _ = writeln!(t, "static int __init fgft_init_{d}(void)");
    let _ = writeln!(t, "{{\n\tint err = fgft_register_{d}();\n");
    t.push_str("\tif (err)\n\t\treturn err;\n");
    let _ = writeln!(t, "\terr = {reg};");
    let _ = writeln!(t, "\tif (err)\n\t\tfgft_unregister_{d}();");
    t.push_str("\treturn err;\n}\n\n");
    let _ = writeln!(
        t,
        "/* fgft: unregisters the driver, then the isolated entry points */"
    );
    let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
    let _ = writeln!(t, "{{\n{flush}\t{unreg};\n\tfgft_unregister_{d}();\n}}\n");
    let _ = writeln!(t, "module_init(fgft_init_{d});");
    let _ = write!(t, "module_exit(fgft_exit_{d});");
    mf.edits[*fid].replace(item.clone(), fgft_stubs::tidy(&t));
}

/// The registration functions, in the generated code of the init file.
fn registration(cx: &Ctx<'_, '_>, t: &mut String) {
    let (src, plan) = (cx.src, cx.plan);
    let d = &plan.driver;
    let _ = writeln!(
        t,
        "\n/* fgft: fills the SFI module's address table, registers the entries */"
    );
    let _ = writeln!(t, "int fgft_register_{d}(void)");
    t.push_str("{\n");
    if !plan.entries.is_empty() {
        t.push_str("\tint err;\n\n");
    }
    for f in bind_lists(plan).keys() {
        let _ = writeln!(t, "\tfgft_bind_{d}_{}();", stem(&src.files[*f].rel));
    }
    // Read-only globals are granted before any entry can run; a failure
    // revokes what was granted.
    let mapped = super::mapped_globals(plan);
    let m = mapped.len();
    for (k, g) in mapped.iter().enumerate() {
        let _ = writeln!(t, "\terr = fgft_global_map_{d}_{g}();");
        let _ = writeln!(t, "\tif (err)\n\t\tgoto unmap{k};");
    }
    let first_fail = if m > 0 {
        format!("unmap{m}")
    } else {
        "fail0".to_string()
    };
    for (i, e) in plan.entries.iter().enumerate() {
        let _ = writeln!(t, "\terr = fgft_entry_register(&{});", e.spec.ep_name());
        let target = if i == 0 {
            first_fail.clone()
        } else {
            format!("fail{i}")
        };
        let _ = writeln!(t, "\tif (err)\n\t\tgoto {target};");
    }
    t.push_str("\treturn 0;\n");
    for i in (1..plan.entries.len()).rev() {
        let _ = writeln!(t, "fail{i}:");
        let _ = writeln!(
            t,
            "\tfgft_entry_unregister(&{});",
            plan.entries[i - 1].spec.ep_name()
        );
    }
    for k in (1..=m).rev() {
        let _ = writeln!(t, "unmap{k}:");
        let _ = writeln!(t, "\tfgft_global_unmap_{d}_{}();", mapped[k - 1]);
    }
    if !plan.entries.is_empty() {
        let last = if m > 0 { "unmap0" } else { "fail0" };
        let _ = writeln!(t, "{last}:\n\treturn err;");
    }
    t.push_str("}\n");
    let _ = writeln!(t, "\n/* fgft: unregisters the entries */");
    let _ = writeln!(t, "void fgft_unregister_{d}(void)");
    t.push_str("{\n");
    for e in plan.entries.iter().rev() {
        let _ = writeln!(t, "\tfgft_entry_unregister(&{});", e.spec.ep_name());
    }
    for g in super::mapped_globals(plan).iter().rev() {
        let _ = writeln!(t, "\tfgft_global_unmap_{d}_{g}();");
    }
    for o in &plan.device.ops {
        let _ = writeln!(t, "\tfgft_dev_unregister_ops(&{});", o.name);
    }
    t.push_str("}\n");
}
