//! runtime-kmod/include/fgft/va.h compiled with the host gcc and run: the
//! variadic-argument probes of generated SFI headers.

use std::path::Path;
use std::process::Command;

#[test]
fn variadic_pointer_arguments_are_probed_once_each() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("fgft-va-probe-{}", std::process::id()));
    let st = Command::new("gcc")
        .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("../include"))
        .arg(root.join("csrc/va_probe.c"))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("gcc runs");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let run = Command::new(&out).output().expect("test program runs");
    std::fs::remove_file(&out).ok();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{text}");
    assert!(text.contains("probes=2 i=1"), "{text}");
}
