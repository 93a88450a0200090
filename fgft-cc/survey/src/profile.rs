//! Survey verdicts per isolation profile (`fgft-cc survey --profile NAME`).
//!
//! Job: say, for each module with entry points, whether `fgft-cc split`
//! with that profile (`profiles.toml`) and no sidecar accepts it, and if
//! not what it asks for first, by running split's own analysis (the
//! library, up to the plan; nothing is built or written).  With the kernel
//! build directory the analysis reads the kernel's headers, as `split
//! --kdir` does.  A module is "ready" for a profile exactly when that split
//! is accepted; `split --check` is what builds it.
//!
//! Invariants: the verdict depends only on the module's files, the tables,
//! the profile and the kernel build directory; modules are analysed in
//! parallel and reported in the survey's order.

use crate::report::{Survey, UnitKind};
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One module's verdict for one profile.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProfileVerdict {
    /// Split with the profile and no sidecar is accepted.
    pub ready: bool,
    /// Errors of the refusal (0 when ready).
    pub errors: usize,
    /// The first error's message, when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

/// What a profile pass needs.
pub struct ProfileOptions<'a> {
    pub profile: &'a str,
    pub kdir: Option<PathBuf>,
    pub tables: &'a fgft_split::Tables,
}

/// The verdict for one module of `tree` (its `files`, relative to it).
pub fn verdict(
    tree: &Path,
    name: &str,
    files: &[String],
    o: &ProfileOptions<'_>,
) -> ProfileVerdict {
    let opts = fgft_split::Options {
        sources: files.iter().map(|f| tree.join(f)).collect(),
        profile: Some(o.profile.to_string()),
        module: Some(name.rsplit('/').next().unwrap_or(name).to_string()),
        kdir: o.kdir.clone(),
        ..Default::default()
    };
    match std::panic::catch_unwind(|| fgft_split::compute_with(&opts, o.tables)) {
        Ok(Ok(_)) => ProfileVerdict {
            ready: true,
            errors: 0,
            first: None,
        },
        Ok(Err(fgft_split::Error::Located(d))) => {
            let errs: Vec<_> = d.iter().filter(|d| !d.warning).collect();
            ProfileVerdict {
                ready: false,
                errors: errs.len(),
                first: errs.first().map(|d| d.message.clone()),
            }
        }
        Ok(Err(e)) => ProfileVerdict {
            ready: false,
            errors: 1,
            first: Some(e.to_string()),
        },
        Err(_) => ProfileVerdict {
            ready: false,
            errors: 1,
            first: Some("split panicked (a bug in fgft)".into()),
        },
    }
}

/// Adds the profile's verdict to every C module of `survey` (a survey of
/// `tree`) that has entry points.
pub fn add_verdicts(tree: &Path, survey: &mut Survey, o: &ProfileOptions<'_>) {
    let verdicts: Vec<Option<ProfileVerdict>> = survey
        .modules
        .par_iter()
        .map(|m| {
            (matches!(m.kind, UnitKind::Module) && !m.rust && m.entry_count() > 0)
                .then(|| verdict(tree, &m.name, &m.files, o))
        })
        .collect();
    for (m, v) in survey.modules.iter_mut().zip(verdicts) {
        if let Some(v) = v {
            m.profiles.insert(o.profile.to_string(), v);
        }
    }
}
