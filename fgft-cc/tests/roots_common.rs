//! Shared by the roots tests that read upstream drivers from linux-source-6.12
//! (unpacked by scripts/setup.sh; never copied into the repository).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The unpacked 6.12 source tree: `$SRC612`, else `$FGFT_CACHE/linux-6.12`,
/// else `~/.cache/fgft/linux-6.12`.  Missing is a failure, not a skip: the
/// README's test command runs the set-up step first.
pub fn src612() -> PathBuf {
    let p = std::env::var_os("SRC612")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("FGFT_CACHE").map(|c| PathBuf::from(c).join("linux-6.12")))
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/fgft/linux-6.12"))
        })
        .expect("SRC612 or HOME set");
    assert!(
        p.join("drivers/net/ethernet/intel/e1000/e1000_main.c")
            .is_file(),
        "linux-source-6.12 not found at {} (run scripts/setup.sh)",
        p.display()
    );
    p
}

/// The six corpus drivers of the FGFT paper: name and source files (relative
/// to the 6.12 tree).  ens1371.c includes ens1370.c.
pub const CORPUS: &[(&str, &[&str])] = &[
    ("8139too", &["drivers/net/ethernet/realtek/8139too.c"]),
    (
        "e1000",
        &[
            "drivers/net/ethernet/intel/e1000/e1000_main.c",
            "drivers/net/ethernet/intel/e1000/e1000_ethtool.c",
            "drivers/net/ethernet/intel/e1000/e1000_hw.c",
            "drivers/net/ethernet/intel/e1000/e1000_param.c",
        ],
    ),
    (
        "r8169",
        &[
            "drivers/net/ethernet/realtek/r8169_main.c",
            "drivers/net/ethernet/realtek/r8169_firmware.c",
            "drivers/net/ethernet/realtek/r8169_phy_config.c",
            "drivers/net/ethernet/realtek/r8169_leds.c",
        ],
    ),
    ("pegasus", &["drivers/net/usb/pegasus.c"]),
    ("ens1370", &["sound/pci/ens1370.c"]),
    ("ens1371", &["sound/pci/ens1371.c"]),
    (
        "psmouse",
        &[
            "drivers/input/mouse/psmouse-base.c",
            "drivers/input/mouse/synaptics.c",
            "drivers/input/mouse/focaltech.c",
            "drivers/input/mouse/alps.c",
            "drivers/input/mouse/byd.c",
            "drivers/input/mouse/elantech.c",
            "drivers/input/mouse/hgpk.c",
            "drivers/input/mouse/logips2pp.c",
            "drivers/input/mouse/lifebook.c",
            "drivers/input/mouse/sentelic.c",
            "drivers/input/mouse/trackpoint.c",
            "drivers/input/mouse/touchkit_ps2.c",
            "drivers/input/mouse/cypress_ps2.c",
            "drivers/input/mouse/vmmouse.c",
            "drivers/input/mouse/psmouse-smbus.c",
        ],
    ),
];

/// `fgft-cc roots FILES...` run in the 6.12 tree; stdout lines.
pub fn roots(files: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fgft-cc"));
    cmd.arg("roots")
        .args(files)
        .current_dir(src612())
        .env_remove("FGFT_TABLES");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run fgft-cc");
    assert!(
        out.status.success(),
        "fgft-cc roots {files:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_string)
        .collect()
}
