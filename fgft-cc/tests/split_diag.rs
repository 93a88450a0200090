//! Diagnostics of `fgft-cc split`: every problem is a located error (file,
//! line, snippet, a note that says how to fix it) with exit code 1, never a
//! panic, and nothing is written when there is one.  OUT is never
//! overwritten without --force, and never inside an input.

mod split_common;

use split_common::*;
use std::path::Path;

const DRIVER: &str = r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/ethtool.h>

struct demo_priv {
	u32 msg;
	u8 *table;
	int n;
};

static void demo_get_drvinfo(struct net_device *dev,
			     struct ethtool_drvinfo *info)
{
	struct demo_priv *p = netdev_priv(dev);

	info->n_stats = p->msg;
	mystery_kernel_call(dev);
}

static void demo_get_regs(struct net_device *dev, struct ethtool_regs *regs,
			  void *buf)
{
	u32 *out = buf;
	struct demo_priv *p = netdev_priv(dev);

	out[3] = p->table[p->n];
}

static const struct ethtool_ops demo_ethtool_ops = {
	.get_drvinfo = demo_get_drvinfo,
	.get_regs = demo_get_regs,
};

static int __init demo_init(void)
{
	return demo_ethtool_ops.get_drvinfo ? 0 : -EINVAL;
}
module_init(demo_init);
MODULE_LICENSE("GPL");
"#;

fn write_driver(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("demo.c");
    std::fs::write(&src, DRIVER).unwrap();
    src
}

fn run(args: &[&str]) -> (i32, String) {
    let (code, _out, err) = split(args);
    assert!(!err.contains("panicked"), "fgft-cc panicked:\n{err}");
    (code, err)
}

#[test]
fn unknown_kernel_function_and_missing_hints_are_located() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--isolate",
        "demo_get_*",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    // The unknown kernel function, at its call, with the fix.
    assert!(
        err.contains("kernel function `mystery_kernel_call` is called from the closure of isolated `demo_get_drvinfo`"),
        "{err}"
    );
    assert!(err.contains("demo.c:18:"), "{err}");
    assert!(
        err.contains("[kernel-api] pure = [\"mystery_kernel_call\"]"),
        "{err}"
    );
    // The get_regs buffer is sized by the kernel's contract
    // (contracts.toml): no hint is asked for.
    assert!(!err.contains("parameter `buf`"), "{err}");
    // The pointer member indexed through.
    assert!(
        err.contains("member `table` of `struct demo_priv` is a pointer used as an array"),
        "{err}"
    );
    assert!(
        err.contains("struct = \"demo_priv\", field = \"table\""),
        "{err}"
    );
    assert!(
        !out.exists(),
        "nothing may be written when there are errors"
    );
}

/// A buffer parameter of a slot that no contract describes: the error
/// names the hint that fixes it.
#[test]
fn a_buffer_without_contract_names_the_hint() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("port.c");
    std::fs::write(
        &src,
        r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/netdevice.h>

static int port_name(struct net_device *dev, char *buf, size_t len)
{
	buf[1] = 'p';
	return 0;
}

static const struct net_device_ops port_ops = {
	.ndo_get_phys_port_name = port_name,
};

static int __init port_init(void)
{
	return port_ops.ndo_get_phys_port_name ? 0 : -EINVAL;
}
module_init(port_init);
MODULE_LICENSE("GPL");
"#,
    )
    .unwrap();
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--isolate",
        "port_name",
        "--no-checkpoint",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("parameter `buf` of isolated `port_name` is used as a buffer"),
        "{err}"
    );
    assert!(err.contains("port.c:7:"), "{err}");
    assert!(
        err.contains("[[hint]] function = \"port_name\", param = \"buf\", kind = \"blob\""),
        "{err}"
    );
}

#[test]
fn hints_and_pure_annotations_fix_them() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let side = t.path().join("demo.toml");
    std::fs::write(
        &side,
        r#"
[[hint]]
function = "demo_get_regs"
param = "buf"
kind = "blob"
len = "regs->len"

[[hint]]
struct = "demo_priv"
field = "table"
kind = "blob"
len = "n"

[kernel-api]
pure = ["mystery_kernel_call"]
"#,
    )
    .unwrap();
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--annotations",
        side.to_str().unwrap(),
        "--isolate",
        "demo_get_*",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap();
    assert!(
        plan.contains("param buf: blob of regs->len bytes, copied out"),
        "{plan}"
    );
    assert!(plan.contains("table in Blob { len: \"o->n\""), "{plan}");
    let main = std::fs::read_to_string(out.join("main/demo.c")).unwrap();
    assert!(main.contains(".get_regs = fgft_stub_demo_get_regs,"));
    assert!(main.contains("module_init(fgft_init_demo);"));

    // --no-hints: the sidecar's hints are left out; the contract sizes
    // `buf` (get_regs: regs->len), the member is refused again, naming
    // the hint; the pure declaration stays.
    let out2 = t.path().join("out2");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--annotations",
        side.to_str().unwrap(),
        "--isolate",
        "demo_get_*",
        "--no-hints",
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("member `table` of `struct demo_priv` is a pointer used as an array"),
        "{err}"
    );
    assert!(!err.contains("mystery_kernel_call"), "{err}");
    assert!(!err.contains("parameter `buf`"), "{err}");
    assert!(!out2.exists());
}

#[test]
fn unmatched_isolate_pattern_is_an_error() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--isolate",
        "no_such_function",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("isolate pattern `no_such_function` matches no function"),
        "{err}"
    );
}

#[test]
fn out_is_never_overwritten_or_inside_an_input() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let side = t.path().join("demo.toml");
    std::fs::write(&side, "[kernel-api]\npure = [\"mystery_kernel_call\"]\n").unwrap();
    let out = t.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let base = [
        src.to_str().unwrap(),
        "--annotations",
        side.to_str().unwrap(),
        "--isolate",
        "demo_get_drvinfo",
        "-o",
    ];
    let mut args: Vec<&str> = base.to_vec();
    args.push(out.to_str().unwrap());
    let (code, err) = run(&args);
    assert_eq!(code, 1);
    assert!(err.contains("is not a directory fgft wrote"), "{err}");
    // --force does not replace a directory fgft did not write.
    args.push("--force");
    let (code, err) = run(&args);
    assert_eq!(code, 1);
    assert!(
        err.contains("--force replaces only fgft's own output"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
    // An earlier output of fgft's: kept without --force, replaced with it.
    let ours = t.path().join("ours");
    let mut args: Vec<&str> = base.to_vec();
    args.push(ours.to_str().unwrap());
    let (code, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let (code, err) = run(&args);
    assert_eq!(code, 1);
    assert!(err.contains("is not empty (use --force"), "{err}");
    args.push("--force");
    let (code, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert!(ours.join("Kbuild").is_file() && ours.join(".fgft-manifest").is_file());
    // Never inside the tree the sources come from.
    let tree = t.path().join("tree");
    std::fs::create_dir_all(tree.join("drivers")).unwrap();
    let inside = tree.join("drivers/out");
    let mut a2: Vec<&str> = base.to_vec();
    a2.push(inside.to_str().unwrap());
    a2.push("--tree");
    a2.push(tree.to_str().unwrap());
    let (code, err) = run(&a2);
    assert_eq!(code, 1);
    assert!(err.contains("lies inside input directory"), "{err}");
    assert!(!inside.exists());
}

#[test]
fn bad_table_extension_is_located() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let tables = t.path().join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    std::fs::write(
        tables.join("compensations.toml"),
        "[api.mystery_kernel_call]\neffect = \"teleport\"\nproto = \"void mystery_kernel_call(struct net_device *dev)\"\n",
    )
    .unwrap();
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--isolate",
        "demo_get_drvinfo",
        "--tables",
        tables.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown effect `teleport`"), "{err}");
    assert!(err.contains("compensations.toml:2:"), "{err}");
}

#[test]
fn table_extension_adds_a_wrapped_function() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let tables = t.path().join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    std::fs::write(
        tables.join("compensations.toml"),
        "[api.mystery_kernel_call]\neffect = \"state\"\nproto = \"void mystery_kernel_call(struct net_device *dev)\"\nheader = \"linux/netdevice.h\"\nundo = \"mystery_kernel_call(dev)\"\n",
    )
    .unwrap();
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--isolate",
        "demo_get_drvinfo",
        "--tables",
        tables.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let rt = std::fs::read_to_string(out.join("sfi/fgft_demo_sfi_rt.c")).unwrap();
    assert!(
        rt.contains("void fgft_w_mystery_kernel_call(struct net_device *dev)"),
        "{rt}"
    );
    assert!(
        rt.contains("dev = fgft_kobj_in(txn, (const void *)dev);"),
        "{rt}"
    );
    assert!(
        rt.contains("fgft_undo_push(txn, fgft_undo_mystery_kernel_call"),
        "{rt}"
    );
    let h = std::fs::read_to_string(out.join("sfi/fgft_demo_sfi.h")).unwrap();
    assert!(h.contains("#define mystery_kernel_call(...) fgft_w_mystery_kernel_call(__VA_ARGS__)"));
}

/// The sidecar that makes DRIVER split, plus `extra`.
fn fixing_sidecar(dir: &Path, extra: &str) -> std::path::PathBuf {
    let side = dir.join("demo.toml");
    std::fs::write(
        &side,
        format!(
            r#"
[[hint]]
function = "demo_get_regs"
param = "buf"
kind = "blob"
len = "regs->len"

[[hint]]
struct = "demo_priv"
field = "table"
kind = "blob"
len = "n"

[kernel-api]
pure = ["mystery_kernel_call"]
{extra}"#
        ),
    )
    .unwrap();
    side
}

#[test]
fn device_checkpoint_diagnostics() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("demo.c");
    // A restore function of the driver's own (not a PM callback).
    std::fs::write(
        &src,
        format!("{DRIVER}\nstatic void demo_reset(struct demo_priv *p)\n{{\n\tp->n = 0;\n}}\n"),
    )
    .unwrap();
    let split_with = |extra: &str, flags: &[&str], out: &str| {
        let side = fixing_sidecar(t.path(), extra);
        let out = t.path().join(out);
        let mut args = vec![
            src.to_str().unwrap().to_string(),
            "--annotations".into(),
            side.to_str().unwrap().to_string(),
            "--isolate".into(),
            "demo_get_*".into(),
            "-o".into(),
            out.to_str().unwrap().to_string(),
        ];
        args.extend(flags.iter().map(|s| s.to_string()));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = run(&argv);
        let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap_or_default();
        (code, err, plan, out)
    };

    // No PM code, no annotation: a located warning; the split still works.
    let (code, err, plan, _) = split_with("", &[], "a");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: demo has no suspend/resume PM code"),
        "{err}"
    );
    assert!(
        err.contains("demo.c:12:"),
        "at the first entry point: {err}"
    );
    assert!(
        err.contains("[checkpoint] none = true, or --no-checkpoint"),
        "{err}"
    );
    assert!(
        plan.contains("device checkpoint: none (the driver has no PM code and no annotation)"),
        "{plan}"
    );
    assert!(plan.contains("device ops: none"), "{plan}");

    // Silenced by the flag and by the sidecar.
    let (code, err, plan, _) = split_with("", &["--no-checkpoint"], "b");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("PM code"), "{err}");
    assert!(
        plan.contains("device checkpoint: none (--no-checkpoint)"),
        "{plan}"
    );
    let (code, err, plan, _) = split_with("[checkpoint]\nnone = true\n", &[], "c");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("PM code"), "{err}");
    assert!(plan.contains("[checkpoint] none = true ("), "{plan}");

    // An annotated restore whose parameter the key (a net_device) does not
    // convert to: a warning naming the fix.
    let (code, err, plan, _) = split_with("[checkpoint]\nrestore = \"demo_reset\"\n", &[], "d");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("device key `dev` (struct net_device *) of isolated demo_get_drvinfo, demo_get_regs has no known way to the struct demo_priv *"),
        "{err}"
    );
    assert!(err.contains("key-to-dev = "), "{err}");
    assert!(plan.contains("demo_get_regs: key dev unknown"), "{plan}");

    // With the conversion: one ops, registered by every stub.
    let (code, err, plan, out) = split_with(
        "[checkpoint]\nrestore = \"demo_reset\"\nkey-to-dev = \"(struct demo_priv *)netdev_priv((struct net_device *)key)\"\n",
        &[],
        "e",
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("device key"), "{err}");
    assert!(
        plan.contains("  restore: demo_reset (annotated restore demo_reset (")
            && plan.contains("demo.c:42))"),
        "{plan}"
    );
    assert!(plan.contains("device ops: fgft_dev_ops_demo"), "{plan}");
    // The driver file and its generated code (stubs, copies, glue).
    let main = std::fs::read_to_string(out.join("main/demo.c")).unwrap()
        + &std::fs::read_to_string(out.join("main/fgft_stubs_demo.c")).unwrap();
    assert!(
        main.contains("err = fgft_dev_ensure((void *)dev, &fgft_dev_ops_demo);"),
        "{main}"
    );
    // The converted key is a local named and typed as the restore's own
    // parameter.
    assert!(
        main.contains(
            "\tstruct demo_priv *p =\n\t\t\t(struct demo_priv *)netdev_priv((struct net_device *)key);\n\n\tdemo_reset(p);"
        ),
        "{main}"
    );
    assert!(main.contains("\t.checkpoint = NULL,\n\t.restore = fgft_restore_demo,"));
    assert!(main.contains("fgft_dev_unregister_ops(&fgft_dev_ops_demo);"));

    // A restore the driver does not define: an error at the sidecar line.
    let (code, err, _, _) = split_with("[checkpoint]\nrestore = \"demo_nope\"\n", &[], "f");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("restore function `demo_nope` is not defined in the driver's source files"),
        "{err}"
    );
    assert!(err.contains("demo.toml:17:11"), "{err}");
    assert!(!err.contains("PM code"), "{err}");
}

/// A `shared` hint: the member is used in place (granted, never copied or
/// written back), and the plan says so.
#[test]
fn shared_hint_grants_in_place() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let side = t.path().join("demo.toml");
    std::fs::write(
        &side,
        r#"
[[hint]]
function = "demo_get_regs"
param = "buf"
kind = "shared"
len = "regs->len"

[[hint]]
struct = "demo_priv"
field = "table"
kind = "shared"
len = "n"
rights = "r"

[kernel-api]
pure = ["mystery_kernel_call"]
"#,
    )
    .unwrap();
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--annotations",
        side.to_str().unwrap(),
        "--isolate",
        "demo_get_*",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap();
    assert!(
        plan.contains("param buf: shared, regs->len bytes used in place, granted RW, not undone"),
        "{plan}"
    );
    assert!(
        plan.contains("table in Shared { len: \"o->n\", rights: R }"),
        "{plan}"
    );
    // The driver file and its generated code (stubs, copies, glue).
    let main = std::fs::read_to_string(out.join("main/demo.c")).unwrap()
        + &std::fs::read_to_string(out.join("main/fgft_stubs_demo.c")).unwrap();
    for needle in [
        "\tc->table = o->table;\n\tret = fgft_grant_shared(txn, o->table, o->n, FGFT_R);",
        "err = fgft_grant_shared(txn, buf, regs->len, FGFT_RW);",
    ] {
        assert!(main.contains(needle), "missing `{needle}` in:\n{main}");
    }
    // Never copied, written back or translated.
    assert!(!main.contains("(void **)&a.buf"), "{main}");
    assert!(!main.contains("fgft_blob_out(txn, (void *)buf"), "{main}");
    assert!(!main.contains("o->table = c->table"), "{main}");
}

/// A hint whose struct, member, function or parameter the driver does not
/// have, or a shared hint without its length, is a located error.
#[test]
fn bad_hint_targets_are_located() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let cases: &[(&str, &str)] = &[
        (
            "[[hint]]\nstruct = \"demo_priv\"\nfield = \"tabel\"\nkind = \"shared\"\nlen = \"n\"\n",
            "shared hint: struct demo_priv has no member `tabel`",
        ),
        (
            "[[hint]]\nstruct = \"demo_private\"\nfield = \"table\"\nkind = \"noderef\"\n",
            "noderef hint: struct demo_private is neither defined nor used by the driver's sources",
        ),
        (
            "[[hint]]\nfunction = \"demo_get_regs\"\nparam = \"buffer\"\nkind = \"shared\"\nlen = \"4\"\n",
            "shared hint: function `demo_get_regs` has no parameter `buffer`",
        ),
        (
            "[[hint]]\nfunction = \"demo_get_reg\"\nparam = \"buf\"\nkind = \"blob\"\nlen = \"4\"\n",
            "blob hint: function `demo_get_reg` is not defined in the driver's sources",
        ),
        (
            "[[hint]]\nstruct = \"demo_priv\"\nfield = \"table\"\nkind = \"shared\"\n",
            "missing key `len`",
        ),
    ];
    for (i, (hint, needle)) in cases.iter().enumerate() {
        let side = t.path().join(format!("bad{i}.toml"));
        std::fs::write(&side, format!("# line 1\n\n{hint}")).unwrap();
        let out = t.path().join(format!("out{i}"));
        let (code, err) = run(&[
            src.to_str().unwrap(),
            "--annotations",
            side.to_str().unwrap(),
            "--isolate",
            "demo_get_*",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{hint}\n{err}");
        assert!(
            err.contains(needle),
            "{hint}\nexpected `{needle}` in:\n{err}"
        );
        assert!(
            err.contains(&format!("bad{i}.toml:3:")),
            "located at the [[hint]]:\n{err}"
        );
        assert!(!out.exists());
    }
}

/// Diagnostics written to a file or a pipe carry no colour escapes unless
/// `--color always` asks for them (and `--color never` wins over a
/// terminal); NO_COLOR is not needed.
#[test]
fn diagnostics_are_coloured_only_when_asked_or_on_a_terminal() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let err_of = |color: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fgft-cc"));
        if let Some(c) = color {
            cmd.args(["--color", c]);
        }
        let out = cmd
            .args(["split", src.to_str().unwrap(), "--isolate", "demo_get_*"])
            .args(["-o", t.path().join("out").to_str().unwrap()])
            .env_remove("NO_COLOR")
            .env_remove("FGFT_TABLES")
            .env("TERM", "xterm-256color")
            .output()
            .expect("run fgft-cc");
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let plain = err_of(None);
    assert!(plain.contains("mystery_kernel_call"), "{plain}");
    assert!(
        !plain.contains('\u{1b}'),
        "escape codes in a piped log:\n{plain}"
    );
    assert!(!err_of(Some("never")).contains('\u{1b}'));
    assert!(err_of(Some("always")).contains('\u{1b}'));
}

/// `--isolate struct.field` selects the functions stored in matching slots;
/// a slot pattern nothing fills, or a malformed one, is an error.
#[test]
fn isolate_by_slot() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let side = t.path().join("demo.toml");
    std::fs::write(
        &side,
        "[kernel-api]\npure = [\"mystery_kernel_call\"]\n\n[[hint]]\nstruct = \"demo_priv\"\nfield = \"table\"\nkind = \"blob\"\nlen = \"n\"\n\n[[hint]]\nfunction = \"demo_get_regs\"\nparam = \"buf\"\nkind = \"blob\"\nlen = \"regs->len\"\n",
    )
    .unwrap();
    let plan_of = |pat: &str| {
        let out = t
            .path()
            .join(format!("out-{}", pat.replace(['*', '.'], "_")));
        let (code, err) = run(&[
            src.to_str().unwrap(),
            "--annotations",
            side.to_str().unwrap(),
            "--isolate",
            pat,
            "-o",
            out.to_str().unwrap(),
        ]);
        let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap_or_default();
        (code, err, plan)
    };
    let (code, err, plan) = plan_of("ethtool_ops.*");
    assert_eq!(code, 0, "{err}");
    assert!(plan.contains("entries: 2"), "{plan}");
    assert!(plan.contains("entry demo_get_drvinfo") && plan.contains("entry demo_get_regs"));
    let (code, err, plan) = plan_of("ethtool_ops.get_regs");
    assert_eq!(code, 0, "{err}");
    assert!(
        plan.contains("entries: 1") && plan.contains("entry demo_get_regs"),
        "{plan}"
    );
    // A profile: slots of the table this driver does not fill are a
    // warning, the others are isolated.
    let (code, err, plan) = plan_of("ethtool_ops.get_[lr]*");
    assert_eq!(code, 0, "{err}");
    assert!(plan.contains("entries: 1"), "{plan}");
    let t2 = t.path().join("two");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--annotations",
        side.to_str().unwrap(),
        "--isolate",
        "ethtool_ops.*",
        "--isolate",
        "net_device_ops.ndo_get_stats64",
        "-o",
        t2.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "warning: isolate pattern `net_device_ops.ndo_get_stats64` matches no slot a function"
        ),
        "{err}"
    );
    // A slot of no table struct: an error.
    let (code, err, _) = plan_of("ethtool_opz.*");
    assert_eq!(code, 1);
    assert!(
        err.contains("isolate pattern `ethtool_opz.*` matches no slot of the slot table"),
        "{err}"
    );
    let (code, err, _) = plan_of("ethtool_ops.get.regs");
    assert_eq!(code, 1);
    assert!(err.contains("struct.field"), "{err}");
}

/// A malformed contracts table is a located error at its line; an unknown
/// profile lists the known ones.
#[test]
fn bad_contract_and_unknown_profile_are_errors() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let tables = t.path().join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    std::fs::write(
        tables.join("contracts.toml"),
        "[[param]]\nslot = \"ethtool_ops.get_regs\"\nparam = 3\nkind = \"bolb\"\nlen = \"1\"\n",
    )
    .unwrap();
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--isolate",
        "demo_get_regs",
        "--tables",
        tables.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unknown kind `bolb`"), "{err}");
    assert!(err.contains("contracts.toml:2:"), "{err}");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--profile",
        "mgmt",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unknown isolation profile `mgmt`"), "{err}");
    assert!(err.contains("management"), "{err}");
    assert!(!out.exists());
}

/// A struct that only another translation unit defines cannot be copied by
/// a stub compiled in the entry's unit: the stub is compiled in the unit
/// that defines it (a trampoline to the original stays in the entry's
/// unit).  When no unit sees every record the stub copies, a located error
/// names where each definition is, not output that does not build.
#[test]
fn a_record_of_another_unit_moves_the_stub_or_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let core = t.path().join("two-core.c");
    let eth = t.path().join("two-ethtool.c");
    let more = t.path().join("two-more.c");
    let core_text = |with_more: bool| {
        format!(
            r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/netdevice.h>

struct two_more;

struct two_priv {{
	u32 flags;
	struct two_more *more;
}};

u32 two_more_val(struct two_more *m);

u32 two_flags(struct net_device *dev)
{{
	struct two_priv *p = netdev_priv(dev);

	return p->flags{};
}}

static int __init two_init(void)
{{
	return 0;
}}
module_init(two_init);
MODULE_LICENSE("GPL");
"#,
            if with_more {
                " + two_more_val(p->more)"
            } else {
                ""
            }
        )
    };
    std::fs::write(&core, core_text(false)).unwrap();
    std::fs::write(
        &eth,
        r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/netdevice.h>
#include <linux/ethtool.h>

u32 two_flags(struct net_device *dev);

static u32 two_get_priv_flags(struct net_device *dev)
{
	return two_flags(dev);
}

const struct ethtool_ops two_ethtool_ops = {
	.get_priv_flags = two_get_priv_flags,
};
"#,
    )
    .unwrap();
    std::fs::write(
        &more,
        r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/types.h>

struct two_more {
	u32 x;
};

u32 two_more_val(struct two_more *m)
{
	return m->x;
}
"#,
    )
    .unwrap();
    let split_two = |files: &[&std::path::Path], out: &std::path::Path| {
        let mut args: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
        args.extend([
            "--module",
            "two",
            "--isolate",
            "ethtool_ops.*",
            "--no-checkpoint",
            "-o",
            out.to_str().unwrap(),
        ]);
        run(&args)
    };

    // struct two_priv is two-core.c's: the stub is compiled there.
    let out = t.path().join("out");
    let (code, err) = split_two(&[&core, &eth], &out);
    assert_eq!(code, 0, "{err}");
    let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap();
    assert!(
        plan.contains("stub compiled in ") && plan.contains("two-core.c (its own unit cannot see"),
        "{plan}"
    );
    let core_code = std::fs::read_to_string(out.join("main/fgft_stubs_two-core.c")).unwrap();
    assert!(
        core_code.contains("\nu32 fgft_stub_two_get_priv_flags(struct net_device *dev)\n{"),
        "{core_code}"
    );
    assert!(
        core_code.contains("return fgft_orig_two_get_priv_flags(dev);"),
        "isolation off calls the original through its trampoline:\n{core_code}"
    );
    let eth_code = std::fs::read_to_string(out.join("main/fgft_stubs_two-ethtool.c")).unwrap();
    assert!(
        eth_code.contains(
            "u32 fgft_orig_two_get_priv_flags(struct net_device *dev)\n{\n\treturn two_get_priv_flags(dev);\n}"
        ),
        "{eth_code}"
    );
    assert!(!eth_code.contains("fgft_stub_two_get_priv_flags(struct net_device *dev)\n{"));
    let header = std::fs::read_to_string(out.join("main/fgft_two_main.h")).unwrap();
    assert!(
        header.contains("u32 fgft_stub_two_get_priv_flags(struct net_device *dev);")
            && header.contains("u32 fgft_orig_two_get_priv_flags(struct net_device *dev);"),
        "{header}"
    );
    let main_eth = std::fs::read_to_string(out.join("main/two-ethtool.c")).unwrap();
    assert!(
        main_eth.contains(".get_priv_flags = fgft_stub_two_get_priv_flags,")
            && !main_eth.contains("static u32 fgft_stub_two_get_priv_flags"),
        "the slot takes the stub, declared extern:\n{main_eth}"
    );

    // With struct two_more of two-more.c copied too, no unit sees both.
    std::fs::write(&core, core_text(true)).unwrap();
    let out = t.path().join("out2");
    let (code, err) = split_two(&[&core, &eth, &more], &out);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("isolated `two_get_priv_flags` needs a copy of struct two_priv"),
        "{err}"
    );
    assert!(
        err.contains("needs a copy of struct two_more")
            && err.contains("no unit sees every record"),
        "{err}"
    );
    assert!(err.contains("two-ethtool.c:7:"), "{err}");
    assert!(err.contains("two-core.c:7"), "{err}");
    assert!(err.contains("two-more.c:4"), "{err}");
    assert!(!out.exists());
}

/// Calls through pointers: a member's targets are what the driver stores in
/// it (positional initializer included), a parameter's are what the
/// closure's own callers pass (not what other callers pass), each call in
/// SFI code is dispatched; a member nothing is stored in is warned about,
/// at the call, and left as written.
#[test]
fn calls_through_pointers_are_resolved_and_dispatched() {
    const ICALL: &str = r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/ethtool.h>

struct ic_priv;

struct ic_ops {
	u32 (*read)(struct ic_priv *p, int reg);
	void (*poke)(struct ic_priv *p);
};

struct ic_priv {
	const struct ic_ops *ops;
	void (*never)(struct ic_priv *p);
	u32 regs[4];
};

static u32 ic_read_a(struct ic_priv *p, int reg)
{
	return p->regs[reg & 3];
}

static u32 ic_read_b(struct ic_priv *p, int reg)
{
	return p->regs[(reg + 1) & 3];
}

static void ic_poke(struct ic_priv *p)
{
	p->regs[0] = 1;
}

static const struct ic_ops ic_ops_a = { ic_read_a, ic_poke };
static const struct ic_ops ic_ops_b = { .read = ic_read_b, .poke = ic_poke };

static int ic_get(struct ic_priv *p) { return 1; }
static int ic_put(struct ic_priv *p) { return 2; }

static int ic_with(struct ic_priv *p, int (*fn)(struct ic_priv *p))
{
	return fn(p);
}

static u32 ic_get_link(struct net_device *dev)
{
	struct ic_priv *p = netdev_priv(dev);

	p->never(p);
	/* Casts to type names, as kernel helpers write them: no call. */
	return p->ops->read(p, 1) + ic_with(p, ic_get) + (u32)(__le32)(p->regs[2]);
}

static int ic_nway_reset(struct net_device *dev)
{
	struct ic_priv *p = netdev_priv(dev);

	return ic_with(p, ic_put);
}

static const struct ethtool_ops ic_ethtool_ops = {
	.get_link = ic_get_link,
	.nway_reset = ic_nway_reset,
};

static int __init ic_init(void)
{
	return ic_ethtool_ops.get_link && ic_ops_a.read && ic_ops_b.read ? 0 : -EINVAL;
}
module_init(ic_init);
MODULE_LICENSE("GPL");
"#;
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("ic.c");
    std::fs::write(&src, ICALL).unwrap();
    let out = t.path().join("out");
    let (code, err) = run(&[
        src.to_str().unwrap(),
        "--isolate",
        "ic_get_link",
        "--no-checkpoint",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // The member nothing is stored in: warned at the call, left as written.
    assert!(
        err.contains("call through a pointer (`p->never`)")
            && err.contains("fgft finds no function the driver stores"),
        "{err}"
    );
    assert!(err.contains("ic.c:"), "located: {err}");
    assert!(!err.contains("(u32)"), "a cast is no call: {err}");
    let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap();
    assert!(!plan.contains("(u32)"), "a cast is no call: {plan}");
    // Both ops tables' functions, the positional one included.
    assert!(
        plan.contains("dispatch set 0: ic_read_a ic_read_b"),
        "{plan}"
    );
    // Only what this closure's callers pass: ic_get, not ic_put.
    assert!(plan.contains(": ic_get\n"), "{plan}");
    assert!(!plan.contains("ic_put"), "{plan}");
    assert!(
        plan.contains("p->never in ic_get_link: not rewritten"),
        "{plan}"
    );
    let sfi = std::fs::read_to_string(out.join("sfi/ic.c")).unwrap();
    assert!(sfi.contains("FGFT_ICALL(0, p->ops->read)(p, 1)"), "{sfi}");
    assert!(sfi.contains("FGFT_ICALL(1, fn)(p)"), "{sfi}");
    assert!(sfi.contains("\tp->never(p);"), "{sfi}");
    let rt = std::fs::read_to_string(out.join("sfi/fgft_ic_sfi_rt.c")).unwrap();
    assert!(
        rt.contains("fgft_fail_cause(FGFT_CAUSE_ICALL);"),
        "the resolver aborts on anything else: {rt}"
    );
}

/// `--format sarif`: the diagnostics as a SARIF 2.1.0 log on stdout, read
/// back with types generated from the SARIF schema (serde-sarif); each
/// result at the line and column the text diagnostic names.
#[test]
fn diagnostics_as_sarif() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    let out = t.path().join("out");
    let args = [
        src.to_str().unwrap(),
        "--isolate",
        "demo_get_*",
        "-o",
        out.to_str().unwrap(),
        "--format",
        "sarif",
    ];
    let (code, stdout, err) = split(&args);
    assert_eq!(code, 1, "{err}");
    let log: serde_sarif::sarif::Sarif =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not SARIF 2.1.0: {e}\n{stdout}"));
    assert_eq!(
        serde_json::to_value(&log.version).unwrap(),
        serde_json::json!("2.1.0")
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "fgft-cc");
    let results = run["results"].as_array().unwrap();
    // As many results as the text output has errors and warnings.
    let text_count = err
        .lines()
        .filter(|l| l.starts_with("error: ") || l.starts_with("warning: "))
        .count();
    assert_eq!(results.len(), text_count, "{err}\n{stdout}");
    let unknown = results
        .iter()
        .find(|r| {
            r["message"]["text"]
                .as_str()
                .is_some_and(|m| m.contains("`mystery_kernel_call`"))
        })
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(unknown["level"], "error");
    assert_eq!(unknown["ruleId"], "fgft/unknown-kernel-function");
    let loc = &unknown["locations"][0]["physicalLocation"];
    assert!(
        loc["artifactLocation"]["uri"]
            .as_str()
            .is_some_and(|u| u.ends_with("demo.c")),
        "{loc}"
    );
    // demo.c:18:COL in the text output.
    let at = err
        .lines()
        .find(|l| l.contains("demo.c:18:"))
        .and_then(|l| l.rsplit("demo.c:18:").next())
        .and_then(|c| c.trim().parse::<u64>().ok())
        .expect("the text location");
    assert_eq!(loc["region"]["startLine"], 18, "{loc}");
    assert_eq!(loc["region"]["startColumn"], at, "{loc}");
    assert!(loc["region"]["snippet"]["text"]
        .as_str()
        .is_some_and(|s| s.contains("mystery_kernel_call")));
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules
        .iter()
        .any(|r| r["id"] == "fgft/unknown-kernel-function"));
    assert!(!out.exists());

    // No error: exit 0, the summary on stderr, stdout the log alone.
    let fine = t.path().join("fine.c");
    std::fs::write(&fine, DRIVER.replace("mystery_kernel_call(dev);", "")).unwrap();
    let out2 = t.path().join("out2");
    let (code, stdout, err) = split(&[
        fine.to_str().unwrap(),
        "--isolate",
        "demo_get_drvinfo",
        "-o",
        out2.to_str().unwrap(),
        "--format",
        "sarif",
    ]);
    assert_eq!(code, 0, "{err}");
    let log: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["level"] == "warning"));
    assert!(err.contains("fgft-cc split"), "{err}");
}

/// Splits driver `text` (written as `name`) isolating `isolate`, with no
/// checkpoint; plan.txt, and the same with its folds joined.
fn split_plan(name: &str, text: &str, isolate: &[&str]) -> (String, String) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join(name);
    std::fs::write(&src, text).unwrap();
    let out = t.path().join("out");
    let mut args = vec![src.to_str().unwrap().to_string()];
    for i in isolate {
        args.extend(["--isolate".to_string(), i.to_string()]);
    }
    args.extend(["--no-checkpoint", "-o", out.to_str().unwrap()].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap();
    // plan.txt folds long lines: compare with the folds joined.
    let flat = plan.split_whitespace().collect::<Vec<_>>().join(" ");
    (plan, flat)
}

#[test]
fn byte_offsets_into_a_parameter_copy_the_object_whole() {
    let (plan, flat) = split_plan(
        "offs.c",
        r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/ethtool.h>

struct offs_priv {
	u64 rx;
	u64 tx;
};

struct offs_attr {
	u32 a;
	u32 b;
};

/* Offsets from the net_device: its own statistics, then the private area. */
static size_t offs_at[2];

static void offs_stats(struct net_device *dev, struct ethtool_stats *s, u64 *data)
{
	int i;

	for (i = 0; i < 2; i++)
		data[i] = *(u64 *)((char *)dev + offs_at[i]);
}

static int offs_count(struct net_device *dev, int sset)
{
	struct offs_priv *p = netdev_priv(dev);

	return p->rx ? 2 : 0;
}

static u32 offs_field(struct offs_attr *attr, size_t off)
{
	return *(u32 *)((u8 *)attr + off);
}

static u32 offs_msglevel(struct net_device *dev)
{
	struct offs_attr a = { 1, 2 };

	return offs_field(&a, offsetof(struct offs_attr, b));
}

static const struct ethtool_ops offs_ethtool_ops = {
	.get_ethtool_stats = offs_stats,
	.get_sset_count = offs_count,
	.get_msglevel = offs_msglevel,
};

static int __init offs_init(void)
{
	offs_at[0] = offsetof(struct net_device, stats);
	offs_at[1] = sizeof(struct net_device) + offsetof(struct offs_priv, tx);
	return offs_ethtool_ops.get_sset_count ? 0 : -EINVAL;
}
module_init(offs_init);
MODULE_LICENSE("GPL");
"#,
        &["offs_stats", "offs_field"],
    );
    // A net_device with one private type: it and its private area.
    assert!(
        flat.contains("hint offs_stats(dev): blob of (size_t)((char *)netdev_priv(dev) - (char *)dev) + sizeof(struct offs_priv) bytes (inferred from byte offsets into the object, "),
        "{plan}"
    );
    // Any other record: the record.
    assert!(
        flat.contains("hint offs_field(attr): blob of sizeof(struct offs_attr) bytes (inferred from byte offsets into the object, "),
        "{plan}"
    );
}

#[test]
fn allocation_sites_size_pools_sums_counts_and_interior_members() {
    let (plan, flat) = split_plan(
        "allocs.c",
        r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/ethtool.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/slab.h>

struct al_a { u32 w[4]; };
struct al_b { u64 v; };

#define AL_QCNT(p) ((p)->nq)

struct al_priv {
	struct device *dev;
	struct dma_pool *pool;
	u32 *blk;
	dma_addr_t blk_dma;
	int nblk;
	struct al_a *as;
	struct al_b *bs;
	dma_addr_t ab_dma;
	int na;
	int nb;
	u32 *q;
	int num_q;
	int stalled_q;
	u64 *rings;
	int nq;
};

static int al_setup(struct al_priv *p, int n)
{
	size_t size;

	p->pool = dma_pool_create("al", p->dev, p->nblk * sizeof(u32), 4, 0);
	p->blk = dma_pool_zalloc(p->pool, GFP_KERNEL, &p->blk_dma);
	size = sizeof(struct al_a) * p->na;
	size += sizeof(struct al_b) * p->nb;
	p->as = dma_alloc_coherent(p->dev, size, &p->ab_dma, GFP_KERNEL);
	p->bs = (struct al_b *)(p->as + p->na);
	p->q = kcalloc(n, sizeof(*p->q), GFP_KERNEL);
	p->num_q = n;
	p->stalled_q = n;
	p->rings = kcalloc(AL_QCNT(p), sizeof(*p->rings), GFP_KERNEL);
	return 0;
}

static void al_stats(struct net_device *dev, struct ethtool_stats *s, u64 *data)
{
	struct al_priv *p = netdev_priv(dev);
	int i;

	for (i = 0; i < p->nblk; i++)
		data[0] += p->blk[i];
	for (i = 0; i < p->nb; i++)
		data[1] += p->bs[i].v + p->as[i].w[0];
	for (i = 0; i < p->num_q; i++)
		data[2] += p->q[i];
	for (i = 0; i < p->nq; i++)
		data[3] += p->rings[i];
}

static const struct ethtool_ops al_ethtool_ops = {
	.get_ethtool_stats = al_stats,
};

static int __init al_init(void)
{
	return al_ethtool_ops.get_ethtool_stats ? al_setup(NULL, 0) : -EINVAL;
}
module_init(al_init);
MODULE_LICENSE("GPL");
"#,
        &["al_stats"],
    );
    // A block of a pool: the size the pool was created with, device memory.
    assert!(
        flat.contains("hint struct al_priv.blk: shared, nblk * sizeof(u32) bytes, rw (inferred from dma_pool_zalloc"),
        "{plan}"
    );
    // `size = A; size += B;`, and a pointer into that memory by a count.
    assert!(
        flat.contains("hint struct al_priv.as: shared, (sizeof(struct al_a) * na) + (sizeof(struct al_b) * nb) bytes"),
        "{plan}"
    );
    assert!(
        flat.contains("hint struct al_priv.bs: shared, ((sizeof(struct al_a) * na) + (sizeof(struct al_b) * nb)) - (na) * sizeof(*as) bytes"),
        "{plan}"
    );
    // The count two members take: the one named as a count.
    assert!(
        flat.contains("hint struct al_priv.q: blob of num_q * sizeof(*q) bytes"),
        "{plan}"
    );
    // A driver macro in the length, expanded to the member it reads.
    assert!(
        flat.contains("hint struct al_priv.rings: blob of nq * sizeof(*rings) bytes"),
        "{plan}"
    );
}

#[test]
fn a_hint_off_the_contract_by_a_constant_is_a_located_warning() {
    // The kernel passes a store buffer with its NUL (`count + 1` bytes):
    // a hand hint of `count` bytes cuts it, so kstrtouint() reads past the
    // copy.  The hint still wins; the warning says so and where.
    let t = tempfile::tempdir().unwrap();
    let extra = t.path().join("extra.toml");
    std::fs::write(
        &extra,
        "[[hint]]\nfunction = \"capacity_store\"\nparam = \"buf\"\nkind = \"blob\"\nlen = \"count\"\n",
    )
    .unwrap();
    let side = root().join("corpus/drivers/fgft_char/fgft_char.toml");
    let out = t.path().join("out");
    let (code, err) = run(&[
        "--annotations",
        side.to_str().unwrap(),
        "--annotations",
        extra.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: the hint on `capacity_store(buf)` copies `count` bytes, but the kernel passes `count + 1` bytes to `device_attribute.store`"),
        "{err}"
    );
    assert!(err.contains("extra.toml:1:1"), "{err}");
    let plan = std::fs::read_to_string(out.join("plan.txt")).unwrap();
    assert!(
        plan.contains("hint capacity_store(buf): blob of count bytes (annotation"),
        "{plan}"
    );
    // Without the hint, no warning: the contract applies.
    let out2 = t.path().join("out2");
    let (code, err) = run(&[
        "--annotations",
        side.to_str().unwrap(),
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("but the kernel passes"), "{err}");
}

/// An in-place entry (an I/O-path slot) grants the target of a pointer
/// member only if its closure dereferences that member's value: a pointer
/// that is only stored, compared or handed to the kernel is a value there
/// (`Assign`), and its target's type is not walked.  A dereference
/// anywhere in the closure, even in a callee, makes it a pointer again.
#[test]
fn in_place_value_only_members_are_not_granted() {
    const XMIT: &str = r#"// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>

struct vdemo_stat {
	u64 frames;
};

struct vdemo {
	struct sk_buff *held;
	struct vdemo_stat *stat;
	unsigned int bytes;
};

static void vdemo_count(struct vdemo *p)
{
	p->stat->frames++;
	DEREF
}

static netdev_tx_t vdemo_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct vdemo *p = netdev_priv(dev);

	if (p->held)
		dev_kfree_skb_any(p->held);
	p->held = skb;
	vdemo_count(p);
	return NETDEV_TX_OK;
}

static const struct net_device_ops vdemo_ops = {
	.ndo_start_xmit = vdemo_xmit,
};

static int __init vdemo_init(void)
{
	return vdemo_ops.ndo_start_xmit ? 0 : -EINVAL;
}
module_init(vdemo_init);
MODULE_LICENSE("GPL");
"#;
    let t = tempfile::tempdir().unwrap();
    let plan_of = |deref: &str, name: &str| {
        let src = t.path().join(format!("{name}.c"));
        std::fs::write(&src, XMIT.replace("DEREF", deref)).unwrap();
        let out = t.path().join(name);
        let (code, err) = run(&[
            src.to_str().unwrap(),
            "--isolate",
            "vdemo_xmit",
            "--no-checkpoint",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        std::fs::read_to_string(out.join("plan.txt")).unwrap()
    };
    let member = |plan: &str, m: &str| {
        plan.lines()
            .skip_while(|l| !l.starts_with("  type struct vdemo "))
            .find(|l| l.trim_start().starts_with(&format!("{m} ")))
            .unwrap_or_else(|| panic!("no member {m} of struct vdemo in:\n{plan}"))
            .trim()
            .to_string()
    };

    // `held` only reaches dev_kfree_skb_any and a store: a value.
    let plan = plan_of("", "value");
    assert!(plan.contains("marshaling: in place"), "{plan}");
    assert_eq!(member(&plan, "held"), "held in/out Assign", "{plan}");
    assert!(member(&plan, "stat").contains("Ptr"), "{plan}");
    assert!(!plan.contains("type struct sk_buff"), "{plan}");

    // Read through in a callee: granted, and struct sk_buff walked.
    let plan = plan_of("p->bytes += p->held->len;", "deref");
    assert!(member(&plan, "held").contains("Ptr"), "{plan}");
    assert!(plan.contains("type struct sk_buff"), "{plan}");
}

/// `[isolate] unchecked-reads`: a pattern that names no function the
/// isolated entry points reach, and a function that stores through a
/// pointer, are located errors.
#[test]
fn unchecked_reads_must_name_closure_functions_that_only_read() {
    let t = tempfile::tempdir().unwrap();
    let src = write_driver(t.path());
    for (names, want) in [
        (
            "\"no_such_fn\"",
            "unchecked-reads pattern `no_such_fn` matches no function an isolated entry point reaches",
        ),
        (
            "\"demo_get_regs\"",
            "`demo_get_regs` stores through a pointer: its stores would go unchecked with its loads",
        ),
    ] {
        let side = t.path().join("demo.toml");
        std::fs::write(
            &side,
            format!(
                "[isolate]\nentry = [\"demo_get_regs\"]\nunchecked-reads = [{names}]\n\n[[hint]]\nfunction = \"demo_get_regs\"\nparam = \"buf\"\nkind = \"blob\"\nlen = \"regs->len\"\n\n[[hint]]\nstruct = \"demo_priv\"\nfield = \"table\"\nkind = \"blob\"\nlen = \"p->n + 1\"\n"
            ),
        )
        .unwrap();
        let out = t.path().join("out");
        let (code, err) = run(&[
            src.to_str().unwrap(),
            "--annotations",
            side.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(want), "{err}");
        assert!(err.contains("demo.toml:3"), "located at the pattern: {err}");
        assert!(!out.exists());
    }
}
