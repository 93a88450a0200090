//! Throughput: frames/s through the stock driver against the fgft build, in
//! the same boot, alternating so that drift in the emulator hits both.

use crate::config::Config;
use crate::fgft::FgftModules;
use crate::CampaignError;
use fgft_vm::{Env, VmSpec};
use std::time::Duration;

/// Frames/s per round, stock and fgft.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Throughput {
    pub stock: Vec<f64>,
    pub fgft: Vec<f64>,
    /// The build that isolates the I/O path too (empty when not measured).
    #[serde(default)]
    pub io: Vec<f64>,
}

impl Throughput {
    fn median(v: &[f64]) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        s.get(s.len() / 2).copied().unwrap_or(0.0)
    }
    /// Median fgft frames/s over median stock frames/s.
    pub fn ratio(&self) -> f64 {
        self.ratio_of(&self.fgft)
    }

    /// The I/O-path build against stock, when measured.
    pub fn io_ratio(&self) -> Option<f64> {
        (!self.io.is_empty()).then(|| self.ratio_of(&self.io))
    }

    fn ratio_of(&self, v: &[f64]) -> f64 {
        let s = Self::median(&self.stock);
        if s > 0.0 {
            Self::median(v) / s
        } else {
            0.0
        }
    }
}

/// The guest script: `rounds` times, stock module then fgft build, each
/// measured for `secs` seconds of traffic from the first port to the second.
/// Where module `m` lands in the guest: `/lib/fgft/<dir><file name>`. The
/// I/O-path build's modules have the same file names as the other fgft
/// build's, so they live in `io/`.
fn guest_path(dir: &str, m: &std::path::Path) -> String {
    format!(
        "/lib/fgft/{dir}{}",
        m.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

fn io_guest_path(m: &std::path::Path) -> String {
    guest_path("io/", m)
}

/// The guest script: per round, the stock driver, the fgft build and (when
/// given) the I/O-path build, each loaded alone and measured the same way.
pub fn script(
    cfg: &Config,
    stock: &std::path::Path,
    mods: &FgftModules,
    io: Option<&FgftModules>,
    rounds: usize,
    secs: u32,
) -> String {
    let d = &cfg.driver;
    let guest = |m: &std::path::Path| guest_path("", m);
    let mut builds: Vec<(&str, Vec<String>)> =
        vec![("fgft", mods.modules[1..].iter().map(|m| guest(m)).collect())];
    if let Some(io) = io {
        builds.push((
            "fgft-io",
            io.modules[1..].iter().map(|m| io_guest_path(m)).collect(),
        ));
    }
    let mut s = String::new();
    s.push_str(&format!("insmod {} || exit 3\n", guest(&mods.modules[0])));
    s.push_str(&cfg.load_deps());
    let measure = format!("fgft-pkt -d {secs} -w 5000 eth0 eth1");
    for r in 0..rounds {
        s.push_str(&format!(
            "insmod {ko} || exit 4\nsleep 1\n{setup}\necho FGFT-MARK tp-begin kind=stock round={r}\n{measure}\nrmmod {m}\n",
            ko = guest(stock),
            m = cfg.sysfs_module(),
            setup = d.setup
        ));
        for (kind, files) in &builds {
            for f in files {
                s.push_str(&format!("insmod {f} || exit 5\n"));
            }
            s.push_str(&format!(
                "sleep 1\n{setup}\necho FGFT-MARK tp-begin kind={kind} round={r}\n{measure}\n",
                setup = d.setup
            ));
            for f in files.iter().rev() {
                let name = f.rsplit('/').next().unwrap_or(f).trim_end_matches(".ko");
                s.push_str(&format!("rmmod {name}\n"));
            }
        }
    }
    s
}

pub fn measure(
    env: &Env,
    cfg: &Config,
    stock: &std::path::Path,
    mods: &FgftModules,
    io: Option<&FgftModules>,
    rounds: usize,
    secs: u32,
) -> Result<Throughput, CampaignError> {
    let mut spec = VmSpec::new(&format!("campaign-{}-throughput", cfg.driver.name));
    spec.modules = mods.modules.clone();
    spec.modules.push(stock.to_path_buf());
    spec.qemu_args = cfg.driver.qemu.clone();
    if let Some(io) = io {
        for m in &io.modules[1..] {
            spec.files.push((m.clone(), io_guest_path(m)));
        }
    }
    spec.stock_modules = cfg.driver.deps.clone();
    spec.timeout = Duration::from_secs(60 + rounds as u64 * (3 * secs as u64 + 30));
    spec.script = script(cfg, stock, mods, io, rounds, secs);
    spec.add_tool(env, "fgft-pkt")?;
    let out = fgft_vm::run(env, &spec)?;
    // Each tp-begin marker is followed by the pkt marker of its run.
    let mut tp = Throughput {
        stock: Vec::new(),
        fgft: Vec::new(),
        io: Vec::new(),
    };
    let mut kind: Option<String> = None;
    for m in &out.markers {
        match m.name.as_str() {
            "tp-begin" => kind = m.get("kind").map(str::to_string),
            "pkt" => {
                if let (Some(k), Some(fps)) = (kind.take(), m.parse::<f64>("fps")) {
                    match k.as_str() {
                        "stock" => tp.stock.push(fps),
                        "fgft-io" => tp.io.push(fps),
                        _ => tp.fgft.push(fps),
                    }
                }
            }
            _ => {}
        }
    }
    let io_want = if io.is_some() { rounds } else { 0 };
    if tp.stock.len() != rounds || tp.fgft.len() != rounds || tp.io.len() != io_want {
        return Err(CampaignError::Msg(format!(
            "throughput: {} stock, {} fgft and {} I/O-path measurements of {rounds}\n{}",
            tp.stock.len(),
            tp.fgft.len(),
            tp.io.len(),
            out.summary()
        )));
    }
    Ok(tp)
}
