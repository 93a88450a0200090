//! The hand-written hints of the corpus sidecars are the oracle of what the
//! kernel's contracts and inference find (issue: "with their hint sections
//! deleted, inference must find the same hints or safe supersets").
//!
//! Each corpus driver is split against the kernel's headers twice: with its
//! annotations, and with `--no-hints`.  Every hand hint of the first must be
//! met in the second by a derived hint on the same parameter or member:
//! - the same (lengths compared with the operands of a product in any
//!   order);
//! - a kernel contract of the slot (what the kernel itself allocates or
//!   passes, so never smaller than what the driver's own count says);
//! - `shared` for a hand `blob` of the same length (DMA-coherent memory is
//!   used in place rather than copied, by design).
//!
//! The hand hints no contract or inference finds are listed in `NOT_FOUND`,
//! each with why the split is still right without it; a list entry that
//! inference comes to find fails the test too, so the list stays true.

mod split_common;

use split_common::*;
use std::collections::BTreeMap;

/// (driver, hint target, why the driver builds and runs without it).
const NOT_FOUND: &[(&str, &str, &str)] = &[
    (
        "e1000",
        "struct e1000_adapter.pdev",
        "noderef of a kernel object: without it the members the closure reads through the pci_dev are copied",
    ),
    (
        "pegasus",
        "struct pegasus.usb",
        "noderef of a kernel object (the usb_device): its read members are copied instead",
    ),
    (
        "psmouse",
        "struct ps2dev.serio",
        "noderef of a kernel object (the serio port): its read members are copied instead",
    ),
    (
        "r8169",
        "struct rtl8169_private.pci_dev",
        "noderef of a kernel object: its read members are copied instead",
    ),
    (
        "r8169",
        "struct rtl8169_private.phydev",
        "noderef of a kernel object (the phy_device): its read members are copied instead",
    ),
    (
        "ens1370",
        "snd_ak4531_proc_read(buffer)",
        "noderef of the proc text buffer, which only snd_iprintf() (wrapped) writes",
    ),
    (
        "ens1370",
        "snd_ensoniq_proc_read(buffer)",
        "noderef of the proc text buffer, which only snd_iprintf() (wrapped) writes",
    ),
    (
        "ens1370",
        "snd_ensoniq_control_get(ucontrol)",
        "opaque of the control value: without it the members the closure touches are copied",
    ),
    (
        "ens1370",
        "snd_ensoniq_control_put(ucontrol)",
        "opaque of the control value: without it the members the closure touches are copied",
    ),
    (
        "ens1371",
        "snd_ensoniq_proc_read(buffer)",
        "noderef of the proc text buffer, which only snd_iprintf() (wrapped) writes",
    ),
    (
        "ens1371",
        "snd_ens1373_spdif_info(uinfo)",
        "opaque of the control info: without it the members the closure touches are copied",
    ),
    (
        "ens1371",
        "snd_es1371_spdif_get(ucontrol)",
        "opaque of the control value: without it the members the closure touches are copied",
    ),
    (
        "ens1371",
        "snd_es1371_spdif_put(ucontrol)",
        "opaque of the control value: without it the members the closure touches are copied",
    ),
    (
        "fgft_ne2k",
        "struct fgft_ne2k.pdev",
        "noderef of a kernel object: its read members are copied instead",
    ),
    (
        "fgft_ne2k",
        "chip_id_show(dev)",
        "container pci_dev.dev, still needed: without it the attribute's device is reached through dev_get_drvdata(dev), and in the campaign a silent corrupt-field fault of fifo_threshold_store then commits and breaks the device, where with it the same fault aborts (results/campaign-nohints.md)",
    ),
    (
        "fgft_ne2k",
        "fifo_threshold_show(dev)",
        "container pci_dev.dev, still needed (as chip_id_show's)",
    ),
    (
        "fgft_ne2k",
        "fifo_threshold_store(dev)",
        "container pci_dev.dev, still needed (as chip_id_show's)",
    ),
    (
        "fgft_ne2k",
        "prom_show(dev)",
        "container pci_dev.dev, still needed (as chip_id_show's)",
    ),
    (
        "fgft_ne2k",
        "ring_overflows_show(dev)",
        "container pci_dev.dev, still needed (as chip_id_show's)",
    ),
    (
        "fgft_ne2k",
        "tx_timeouts_show(dev)",
        "container pci_dev.dev, still needed (as chip_id_show's)",
    ),
];

/// `hint TARGET: HOW (SOURCE, ...)` lines of a plan.txt (folds joined):
/// target -> [(how, source)].
fn hints(plan: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut lines: Vec<String> = Vec::new();
    for l in plan.lines() {
        match lines.last_mut() {
            Some(last) if l.starts_with("      ") => {
                last.push(' ');
                last.push_str(l.trim());
            }
            _ => lines.push(l.to_string()),
        }
    }
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for l in lines {
        let Some(rest) = l.trim_start().strip_prefix("hint ") else {
            continue;
        };
        let Some((target, tail)) = rest.split_once(": ") else {
            continue;
        };
        let Some(open) = tail.rfind(" (") else {
            continue;
        };
        let how = tail[..open].to_string();
        let src = tail[open + 2..].trim_end_matches(')');
        let src = src.split(", ").next().unwrap_or(src).to_string();
        out.entry(target.to_string()).or_default().push((how, src));
    }
    out
}

/// A length with blanks dropped and the operands of a top-level product
/// sorted (`sizeof(x) * n` is `n * sizeof(x)`).
fn canon(len: &str) -> String {
    let mut depth = 0;
    let mut parts = Vec::new();
    let mut cur = String::new();
    for c in len.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if c == '*' && depth == 0 {
            parts.push(std::mem::take(&mut cur));
            continue;
        }
        if !c.is_whitespace() {
            cur.push(c);
        }
    }
    parts.push(cur);
    if parts.iter().any(|p| p.is_empty()) {
        return len.split_whitespace().collect();
    }
    parts.sort();
    parts.join("*")
}

/// `blob of L bytes` -> L; `shared, L bytes, rw` -> L.
fn blob_len(how: &str) -> Option<&str> {
    how.strip_prefix("blob of ")
        .and_then(|r| r.strip_suffix(" bytes"))
}

fn shared_len(how: &str) -> Option<&str> {
    let r = how.strip_prefix("shared, ")?;
    let end = r.rfind(" bytes, ")?;
    Some(&r[..end])
}

#[test]
fn inference_and_contracts_find_the_corpus_hand_hints() {
    let env = env();
    let t = tempfile::tempdir().unwrap();
    let kdir = env.kdir.display().to_string();
    let mut missing: Vec<String> = Vec::new();
    let mut found_listed: Vec<String> = Vec::new();
    let mut checked = 0;
    for d in all_drivers() {
        // A driver whose annotations hold no hint has nothing to check.
        let hinted = d.annotations.iter().any(|a| {
            let side = std::fs::read_to_string(root().join(a)).unwrap_or_default();
            side.contains("[[hint]]") || !d.upstream
        });
        if !hinted {
            continue;
        }
        let tree = env.src612.as_path();
        let with = t.path().join(format!("{}-hints", d.name));
        let without = t.path().join(format!("{}-nohints", d.name));
        split_driver(&d, Some(tree), &with, &["--kdir", &kdir]);
        let (code, err) =
            try_split_driver(&d, Some(tree), &without, &["--kdir", &kdir, "--no-hints"]);
        assert_eq!(
            code, 0,
            "{} does not split without its hints:\n{err}",
            d.name
        );
        let hand = hints(&std::fs::read_to_string(with.join("plan.txt")).unwrap());
        let derived = hints(&std::fs::read_to_string(without.join("plan.txt")).unwrap());
        for (target, hs) in &hand {
            for (how, src) in hs.iter().filter(|(_, s)| s == "annotation") {
                checked += 1;
                let got = derived.get(target).cloned().unwrap_or_default();
                let met = got.iter().any(|(g, gsrc)| {
                    g == how
                        || gsrc.starts_with("contract ")
                        || match (blob_len(how), blob_len(g).or(shared_len(g))) {
                            (Some(a), Some(b)) => canon(a) == canon(b),
                            _ => false,
                        }
                });
                let listed = NOT_FOUND
                    .iter()
                    .any(|(n, tg, _)| *n == d.name && tg == target);
                match (met, listed) {
                    (false, false) => missing.push(format!(
                        "{}: {target}: hand {how:?}, derived {got:?}",
                        d.name
                    )),
                    (true, true) => found_listed.push(format!("{}: {target}", d.name)),
                    _ => {}
                }
                let _ = src;
            }
        }
    }
    assert!(checked > 40, "only {checked} hand hints checked");
    assert!(
        missing.is_empty(),
        "hand hints neither derived nor listed in NOT_FOUND:\n{}",
        missing.join("\n")
    );
    assert!(
        found_listed.is_empty(),
        "NOT_FOUND lists hints that are derived now (drop them from the list):\n{}",
        found_listed.join("\n")
    );
}

#[test]
fn lengths_compare_as_products() {
    assert_eq!(canon("sizeof(u64) * n"), canon("n * sizeof(u64)"));
    assert_ne!(canon("a * b + c"), canon("c + a * b"));
    assert_eq!(blob_len("blob of size bytes"), Some("size"));
    assert_eq!(shared_len("shared, size bytes, rw"), Some("size"));
}
