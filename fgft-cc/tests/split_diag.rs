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
    // The buffer parameter used as an array, naming the hint that fixes it.
    assert!(
        err.contains("parameter `buf` of isolated `demo_get_regs` is used as a buffer"),
        "{err}"
    );
    assert!(
        err.contains("[[hint]] function = \"demo_get_regs\", param = \"buf\", kind = \"blob\""),
        "{err}"
    );
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
    assert!(err.contains("is not empty (use --force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
    // --force replaces it.
    args.push("--force");
    let (code, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.join("Kbuild").is_file() && !out.join("keep.txt").exists());
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
    assert!(err.contains("overlaps input"), "{err}");
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
        rt.contains("dev = fgft_sfi_demo_kobj((const void *)dev);"),
        "{rt}"
    );
    assert!(
        rt.contains("fgft_undo_push(txn, fgft_undo_mystery_kernel_call"),
        "{rt}"
    );
    let h = std::fs::read_to_string(out.join("sfi/fgft_demo_sfi.h")).unwrap();
    assert!(h.contains("#define mystery_kernel_call(...) fgft_w_mystery_kernel_call(__VA_ARGS__)"));
}
