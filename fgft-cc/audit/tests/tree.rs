//! The audit on the real 6.12 tree (linux-source, unpacked by
//! scripts/setup.sh; its path in SRC612): a declaration that under-declares
//! what the kernel writes is found, at the kernel's line, and a correct one
//! is not.

use std::path::PathBuf;

fn tree() -> Option<PathBuf> {
    match std::env::var_os("SRC612") {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var_os("CI").is_some() => {
            panic!("SRC612 is not set: run under scripts/test.sh (setup.sh unpacks linux-source)")
        }
        None => {
            eprintln!("skipped: SRC612 is not set (scripts/setup.sh --print-env gives it)");
            None
        }
    }
}

#[test]
fn under_declared_writes_are_found_at_the_kernel_line() {
    let Some(tree) = tree() else { return };
    let dir = tempfile::tempdir().unwrap();
    // ethtool_puts() as the table had it before issue 48: the cursor
    // checked, the 32 bytes it copies to `*data` not.
    std::fs::write(
        dir.path().join("compensations.toml"),
        "[api.ethtool_puts]\neffect = \"pure\"\n\
         proto = \"void ethtool_puts(u8 **data, const char *str)\"\n\
         header = \"linux/ethtool.h\"\nargs.data = \"inout(sizeof(u8 *))\"\nargs.str = \"str\"\n",
    )
    .unwrap();
    let tables = fgft_split::Tables::load(&[dir.path().to_path_buf()]).unwrap();
    // The directories that define them and what they call (the whole tree
    // is the benchmark's, `fgft-cc tables audit`).
    let opts = fgft_audit::Options {
        tree: tree.clone(),
        depth: fgft_audit::DEFAULT_DEPTH,
        dirs: [
            "net/ethtool",
            "include/linux",
            "lib",
            "drivers/pci",
            "arch/x86/include",
        ]
        .map(PathBuf::from)
        .to_vec(),
        entries: ["ethtool_puts", "pci_read_config_word", "__ps2_command"]
            .map(String::from)
            .to_vec(),
    };
    let r = fgft_audit::run(&opts, &tables.api).unwrap();
    let text = fgft_audit::render(&r);
    let puts: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.entry == "ethtool_puts")
        .collect();
    assert_eq!(puts.len(), 1, "{text}");
    assert!(
        puts[0].message.contains("`data`") && puts[0].message.contains("reach"),
        "{text}"
    );
    let (file, line) = puts[0].at.clone().unwrap();
    let src = std::fs::read_to_string(tree.join(&file)).unwrap();
    let at = src.lines().nth(line - 1).unwrap_or_default();
    assert!(file.starts_with("net/ethtool"), "{}:{line}", file.display());
    assert!(!at.trim().is_empty(), "{}:{line} is blank", file.display());
    // Declared as it writes: pci_read_config_word()'s `out(sizeof(u16))`.
    assert!(
        r.findings.iter().all(|f| f.entry != "pci_read_config_word"),
        "{text}"
    );
    assert_eq!(r.analysed, 2, "{text}");
    // drivers/input is not read: __ps2_command has no definition here.
    assert!(
        r.findings
            .iter()
            .any(|f| f.entry == "__ps2_command" && f.message.contains("no C definition")),
        "{text}"
    );
}
