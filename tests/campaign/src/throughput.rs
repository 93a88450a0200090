//! Throughput: frames/s through the stock driver against the fgft build, in
//! the same boot, alternating so that drift in the emulator hits both.

use crate::config::Config;
use crate::fgft::FgftModules;
use crate::CampaignError;
use fgft_vm::{Env, VmSpec};
use std::time::Duration;

/// Frames/s per round, stock and fgft.
#[derive(Debug, Clone)]
pub struct Throughput {
    pub stock: Vec<f64>,
    pub fgft: Vec<f64>,
}

impl Throughput {
    fn median(v: &[f64]) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        s.get(s.len() / 2).copied().unwrap_or(0.0)
    }
    /// Median fgft frames/s over median stock frames/s.
    pub fn ratio(&self) -> f64 {
        let s = Self::median(&self.stock);
        if s > 0.0 {
            Self::median(&self.fgft) / s
        } else {
            0.0
        }
    }
}

/// The guest script: `rounds` times, stock module then fgft build, each
/// measured for `secs` seconds of traffic from the first port to the second.
pub fn script(cfg: &Config, mods: &FgftModules, rounds: usize, secs: u32) -> String {
    let d = &cfg.driver;
    let names: Vec<String> = mods
        .modules
        .iter()
        .map(|m| {
            m.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let mut s = String::new();
    // The runtime stays loaded; the driver modules alternate.
    s.push_str(&format!("insmod /lib/fgft/{} || exit 3\n", names[0]));
    let measure = format!("fgft-pkt -d {secs} -w 5000 eth0 eth1");
    for r in 0..rounds {
        s.push_str(&format!(
            "modprobe {m} || exit 4\nsleep 1\n{setup}\necho FGFT-MARK tp-begin kind=stock round={r}\n{measure}\nrmmod {m}\n",
            m = d.module,
            setup = d.setup
        ));
        for n in &names[1..] {
            s.push_str(&format!("insmod /lib/fgft/{n} || exit 5\n"));
        }
        s.push_str(&format!(
            "sleep 1\n{setup}\necho FGFT-MARK tp-begin kind=fgft round={r}\n{measure}\n",
            setup = d.setup
        ));
        for n in names[1..].iter().rev() {
            s.push_str(&format!("rmmod {}\n", n.trim_end_matches(".ko")));
        }
    }
    s
}

/// Boots once and measures.
pub fn measure(
    env: &Env,
    cfg: &Config,
    mods: &FgftModules,
    rounds: usize,
    secs: u32,
) -> Result<Throughput, CampaignError> {
    let mut spec = VmSpec::new(&format!("campaign-{}-throughput", cfg.driver.name));
    spec.modules = mods.modules.clone();
    spec.stock_modules = vec![cfg.driver.module.clone()];
    spec.qemu_args = cfg.driver.qemu.clone();
    spec.timeout = Duration::from_secs(60 + rounds as u64 * (2 * secs as u64 + 20));
    spec.script = script(cfg, mods, rounds, secs);
    spec.add_tool(env, "fgft-pkt")?;
    let out = fgft_vm::run(env, &spec)?;
    // Each tp-begin marker is followed by the pkt marker of its run.
    let mut tp = Throughput {
        stock: Vec::new(),
        fgft: Vec::new(),
    };
    let mut kind: Option<String> = None;
    for m in &out.markers {
        match m.name.as_str() {
            "tp-begin" => kind = m.get("kind").map(str::to_string),
            "pkt" => {
                if let (Some(k), Some(fps)) = (kind.take(), m.parse::<f64>("fps")) {
                    if k == "stock" {
                        tp.stock.push(fps);
                    } else {
                        tp.fgft.push(fps);
                    }
                }
            }
            _ => {}
        }
    }
    if tp.stock.len() != rounds || tp.fgft.len() != rounds {
        return Err(CampaignError::Msg(format!(
            "throughput: {} stock and {} fgft measurements of {rounds}\n{}",
            tp.stock.len(),
            tp.fgft.len(),
            out.summary()
        )));
    }
    Ok(tp)
}
