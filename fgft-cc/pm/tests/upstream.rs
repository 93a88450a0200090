//! Derived checkpoint/restore for upstream drivers from linux-source-6.12,
//! appended to a scratch copy and built with Kbuild against the 6.12 headers.
//! Only fgft's decisions are snapshotted, never upstream text.

use fgft_base::kbuild::Make;
use fgft_pm::{derive, PmCallbacks, Rules};
use std::path::{Path, PathBuf};
use std::process::Command;

fn env_var(name: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/setup.sh"
        ))
        .arg("--print-env")
        .output()
        .expect("setup.sh runs");
    assert!(
        out.status.success(),
        "setup.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("export {name}=")))
        .unwrap_or_else(|| panic!("setup.sh does not print {name}"));
    PathBuf::from(line)
}

fn case(
    dir: &str,
    files: &[&str],
    pm_file: &str,
    suspend: &str,
    resume: &str,
    module: &str,
    objs: &str,
) -> String {
    let src = env_var("SRC612").join(dir);
    let kdir = env_var("KDIR");
    let parsed: Vec<_> = files
        .iter()
        .map(|f| fgft_parse::parse_file(&src.join(f)).unwrap())
        .collect();
    let cb = PmCallbacks {
        suspend: suspend.into(),
        resume: resume.into(),
        pci_bus: true,
        key_to_dev: Some("((struct net_device *)key)->dev.parent".into()),
    };
    let d = derive(&parsed, &cb, &Rules::default_rules(), module).unwrap();
    assert_eq!(parsed[d.file].path.file_name().unwrap(), pm_file);

    // Scratch build: every file copied, the derived C appended to the PM file.
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pm-{module}"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, work.join(p.file_name().unwrap())).unwrap();
        }
    }
    let pm = work.join(pm_file);
    let mut text = std::fs::read_to_string(&pm).unwrap();
    text.push_str("\n#include <fgft/runtime.h>\n");
    // The generated main header declares the flush (called at module exit).
    text.push_str(&format!("void {}(void);\n", d.flush_fn));
    text.push_str(&d.c);
    // Keep the derived ops referenced, as the generated main module does.
    text.push_str(&format!(
        "\nconst struct fgft_dev_ops *fgft_dev_ops_{module}_ref(void);\nconst struct fgft_dev_ops *fgft_dev_ops_{module}_ref(void)\n{{\n\treturn &fgft_dev_ops_{module};\n}}\n"
    ));
    std::fs::write(&pm, text).unwrap();
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../runtime-kmod/include");
    std::fs::write(
        work.join("Kbuild"),
        format!(
            "obj-m += fgftpm_{module}.o\nfgftpm_{module}-y := {objs}\nccflags-y += -I{}\n",
            inc.canonicalize().unwrap().display()
        ),
    )
    .unwrap();
    let out = Make::new(&kdir, &work)
        .var("KBUILD_MODPOST_WARN", "1")
        .target("modules")
        .run()
        .unwrap();
    let log = out.combined();
    assert!(out.success(), "build failed:\n{log}");
    let compile_warnings: Vec<_> = log
        .lines()
        .filter(|l| {
            l.contains("warning:") || l.contains("WARNING:") && !l.contains("modpost: \"fgft_")
        })
        .collect();
    assert!(compile_warnings.is_empty(), "warnings:\n{log}");
    let copies: Vec<String> =
        d.c.lines()
            .filter_map(|l| l.strip_prefix("/* fgft: filtered copy of "))
            .map(|l| format!("copy {}", l.trim_end_matches(" */")))
            .collect();
    let head = format!(
        "checkpoint: {}\nrestore: {}\n{}\n",
        if d.pci { "pci config" } else { "none" },
        d.restore_fn,
        copies.join("\n")
    );
    head + &d
        .decisions
        .iter()
        .map(|x| format!("{} {}:{} {}", x.action, x.function, x.line, x.call))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn e1000_checkpoint_and_restore_build() {
    let plan = case(
        "drivers/net/ethernet/intel/e1000",
        &[
            "e1000_main.c",
            "e1000_hw.c",
            "e1000_ethtool.c",
            "e1000_param.c",
        ],
        "e1000_main.c",
        "e1000_suspend",
        "e1000_resume",
        "e1000",
        "e1000_main.o e1000_hw.o e1000_ethtool.o e1000_param.o",
    );
    assert!(plan.contains("dropped __e1000_shutdown") || plan.contains("pci_disable_device"));
    insta::assert_snapshot!(plan);
}

#[test]
fn rtl8139_checkpoint_and_restore_build() {
    let plan = case(
        "drivers/net/ethernet/realtek",
        &["8139too.c"],
        "8139too.c",
        "rtl8139_suspend",
        "rtl8139_resume",
        "8139too",
        "8139too.o",
    );
    insta::assert_snapshot!(plan);
}
