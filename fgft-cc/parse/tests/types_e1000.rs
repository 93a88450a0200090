//! Types of the upstream e1000 unit, preprocessed by Kbuild against the 6.12
//! headers and read with lang-c; and the tree-sitter fallback with its
//! warning.  Needs the set-up step (headers and linux-source-6.12).

use fgft_parse::types::{unit_types, TypesSource};
use std::path::PathBuf;

fn kdir() -> PathBuf {
    if let Some(k) = std::env::var_os("KDIR") {
        return PathBuf::from(k);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir("/usr/src")
        .expect("/usr/src")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.starts_with("linux-headers-6.12.")
                && n.ends_with("-amd64")
                && !n.ends_with("-rt-amd64")
        })
        .collect();
    v.sort();
    v.pop().expect("linux-headers-6.12 (run scripts/setup.sh)")
}

fn src612() -> PathBuf {
    let p = std::env::var_os("SRC612")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/fgft/linux-6.12"))
        })
        .expect("SRC612 or HOME");
    assert!(
        p.is_dir(),
        "linux-source-6.12 missing at {} (run scripts/setup.sh)",
        p.display()
    );
    p
}

#[test]
fn e1000_unit_types_from_lang_c() {
    let file = src612().join("drivers/net/ethernet/intel/e1000/e1000_main.c");
    let before = std::fs::read_dir(file.parent().unwrap()).unwrap().count();
    let (t, warning) = unit_types(&kdir(), &file).expect("types");
    assert!(warning.is_none(), "{}", warning.unwrap());
    assert_eq!(t.source, TypesSource::LangC);
    // The user's tree is not written.
    assert_eq!(
        std::fs::read_dir(file.parent().unwrap()).unwrap().count(),
        before
    );

    let a = &t.structs["e1000_adapter"];
    assert!(
        a.file.ends_with("drivers/net/ethernet/intel/e1000/e1000.h"),
        "{}",
        a.file
    );
    let f = |s: &str, n: &str| {
        t.structs[s]
            .fields
            .iter()
            .find(|x| x.name == n)
            .unwrap_or_else(|| panic!("{s}.{n}"))
            .clone()
    };
    let netdev = f("e1000_adapter", "netdev");
    assert!(
        netdev.pointer && netdev.ty == "struct net_device *",
        "{netdev:?}"
    );
    let wd = f("e1000_adapter", "watchdog_task");
    assert!(!wd.pointer && wd.ty == "struct delayed_work", "{wd:?}");
    let open = f("net_device_ops", "ndo_open");
    assert!(open.function_pointer, "{open:?}");
    let mac = f("e1000_hw", "mac_addr");
    assert!(mac.array && !mac.pointer, "{mac:?}");
    assert!(t.typedefs.contains_key("u32"));
    assert!(t.prototypes["e1000_open"].defined);
    assert!(!t.prototypes["register_netdev"].defined);
    assert_eq!(
        t.prototypes["register_netdev"].params,
        ["struct net_device *dev"]
    );
}

#[test]
fn lang_c_failure_falls_back_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("odd.c");
    // Preprocesses fine; lang-c cannot parse the expression statement at
    // file scope.
    std::fs::write(
        &file,
        "struct odd_priv { int *p; char name[8]; };\nint odd_probe(int x) { return x; }\nodd odd odd;\n",
    )
    .unwrap();
    let (t, warning) = unit_types(&kdir(), &file).expect("fallback");
    let w = warning.expect("a warning, never silent");
    assert!(
        w.message.contains("tree-sitter") && w.message.contains("lang-c"),
        "{w}"
    );
    assert_eq!(t.source, TypesSource::TreeSitter);
    assert!(t.structs["odd_priv"].fields[0].pointer);
    assert!(t.prototypes["odd_probe"].defined);
}
