//! Campaigns spread over machines: `--shard I/N` runs a deterministic share
//! of a driver's variants, `--merge` combines the shards' results into one
//! driver report.
//!
//! Invariant: the shares of 1/N .. N/N are disjoint and cover the variant
//! list (variant at position p goes to shard p mod N + 1), so merging every
//! shard gives each variant's result exactly once, in variant order.  The
//! restart baseline and throughput are measured by shard 1 only.

use crate::report::DriverReport;
use crate::CampaignError;
use std::path::Path;

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` (1 <= I <= N).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("shard `{s}`: expected I/N, as in 2/3"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| format!("shard `{s}`: `{i}` is not a number"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("shard `{s}`: `{n}` is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!(
                "shard `{s}`: I must be between 1 and N (N at least 1)"
            ));
        }
        Ok(Shard { index, count })
    }

    /// Whether the item at `position` (0-based) of the variant list is this
    /// shard's.
    pub fn keeps(&self, position: usize) -> bool {
        position % self.count == self.index - 1
    }

    /// This shard's share of `items`, in order.
    pub fn select<T: Clone>(&self, items: &[T]) -> Vec<T> {
        items
            .iter()
            .enumerate()
            .filter(|(p, _)| self.keeps(*p))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Whether this shard measures what is per driver, not per variant (the
    /// restart baseline, throughput).
    pub fn measures_driver(&self) -> bool {
        self.index == 1
    }
}

/// One driver's report from the reports of its shards: the native and fgft
/// results of all of them in variant order, the boots added up, the
/// restart baseline and throughput of the shard that measured them.  The
/// shards must be of the same driver and seed, and no variant may come
/// twice.  Each part comes with the file it was read from, for messages.
pub fn merge(
    parts: Vec<(std::path::PathBuf, DriverReport)>,
) -> Result<DriverReport, CampaignError> {
    let mut it = parts.into_iter();
    let Some((first_path, mut out)) = it.next() else {
        return Err(CampaignError::Msg("merge: no results given".into()));
    };
    let mut seen_native: std::collections::BTreeSet<u32> =
        out.native.iter().map(|r| r.id).collect();
    let mut seen_fgft: std::collections::BTreeSet<u32> = out.fgft.iter().map(|r| r.id).collect();
    for (path, r) in it {
        let mismatch = |what: &str, a: &dyn std::fmt::Display, b: &dyn std::fmt::Display| {
            CampaignError::Config {
                path: path.clone(),
                msg: format!(
                    "{what} {b} differs from {a} of {} (shards of one campaign share driver and seed)",
                    first_path.display()
                ),
            }
        };
        if r.driver != out.driver {
            return Err(mismatch("driver", &out.driver, &r.driver));
        }
        if r.seed != out.seed {
            return Err(mismatch("seed", &out.seed, &r.seed));
        }
        for n in r.native {
            if !seen_native.insert(n.id) {
                return Err(twice(&path, &out.driver, n.id));
            }
            out.native.push(n);
        }
        for f in r.fgft {
            if !seen_fgft.insert(f.id) {
                return Err(twice(&path, &out.driver, f.id));
            }
            out.fgft.push(f);
        }
        out.fgft_boots += r.fgft_boots;
        out.restart_ns.extend(r.restart_ns);
        if out.throughput.is_none() {
            out.throughput = r.throughput;
        }
    }
    out.native.sort_by_key(|r| r.id);
    out.fgft.sort_by_key(|r| r.id);
    Ok(out)
}

fn twice(path: &Path, driver: &str, id: u32) -> CampaignError {
    CampaignError::Config {
        path: path.to_path_buf(),
        msg: format!(
            "{driver}: variant {id} is in two of the merged results (a shard given twice?)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_list_once() {
        let items: Vec<u32> = (1..=17).collect();
        let mut all: Vec<u32> = Vec::new();
        for i in 1..=3 {
            all.extend(Shard { index: i, count: 3 }.select(&items));
        }
        all.sort();
        assert_eq!(all, items);
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "2", "a/3", "1/b"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    /// A campaign's real results (results/campaign/e1000.json), cut into
    /// three shards as the runs would be, merge back into the same report.
    #[test]
    fn merged_shards_render_as_the_whole() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/campaign/e1000.json");
        let whole: DriverReport =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(whole.fgft.len() > 10 && whole.native.len() > 10);
        let mut parts = Vec::new();
        for i in 1..=3 {
            let s = Shard { index: i, count: 3 };
            let mut r = whole.clone();
            r.native = s.select(&whole.native);
            r.fgft = s.select(&whole.fgft);
            // The boots add up (each real shard boots at least once).
            r.fgft_boots = if i == 1 { whole.fgft_boots } else { 0 };
            if !s.measures_driver() {
                r.restart_ns.clear();
                r.throughput = None;
            }
            parts.push((std::path::PathBuf::from(format!("shard{i}")), r));
        }
        // In any order.
        parts.reverse();
        let merged = merge(parts.clone()).unwrap();
        assert_eq!(
            crate::report::render(&[merged], "cmd"),
            crate::report::render(&[whole], "cmd")
        );
        // A shard given twice is refused, naming the variant.
        let mut twice = parts.clone();
        twice.push(parts[0].clone());
        let e = merge(twice).unwrap_err().to_string();
        assert!(e.contains("is in two of the merged results"), "{e}");
        let mut other = parts;
        other[1].1.seed += 1;
        assert!(merge(other).unwrap_err().to_string().contains("seed"));
    }
}
