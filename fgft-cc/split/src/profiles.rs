//! `profiles.toml`: named sets of slots to isolate (`--profile management`).
//!
//! Invariants: every profile names at least one pattern, each a valid
//! isolate pattern; unknown keys and an unknown profile are located errors
//! (an unknown profile lists the known ones).

use crate::diag::Error;
use fgft_parse::tables::{self, TableDirs};
use std::collections::BTreeMap;

pub const TABLE_NAME: &str = "profiles.toml";
const BUILTIN: &str = include_str!("../../tables/profiles.toml");

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    profile: BTreeMap<String, Raw>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    slots: Vec<String>,
    #[allow(dead_code)]
    why: Option<String>,
}

/// Every profile, by name: its isolate patterns.
#[derive(Debug, Clone, Default)]
pub struct Profiles(BTreeMap<String, Vec<String>>);

impl Profiles {
    pub fn load(dirs: &TableDirs) -> Result<Profiles, Error> {
        let mut out = BTreeMap::new();
        for src in dirs.sources(BUILTIN, TABLE_NAME)? {
            let f: File = tables::parse_toml(&src, TABLE_NAME)?;
            for (name, raw) in f.profile {
                if raw.slots.is_empty() {
                    return Err(tables::table_error(
                        &src,
                        TABLE_NAME,
                        &format!("[profile.{name}]"),
                        format!("profile `{name}` names no slot"),
                    )
                    .into());
                }
                for s in &raw.slots {
                    if let Err(e) = fgft_annotations::Pattern::from_cli(s) {
                        return Err(tables::table_error(
                            &src,
                            TABLE_NAME,
                            s,
                            format!("profile `{name}`: {e}"),
                        )
                        .into());
                    }
                }
                out.insert(name, raw.slots);
            }
        }
        Ok(Profiles(out))
    }

    /// The patterns of profile `name`.
    pub fn get(&self, name: &str) -> Result<&[String], Error> {
        self.0.get(name).map(Vec::as_slice).ok_or_else(|| {
            crate::diag::arg_error(
                Some("--profile"),
                name,
                format!("unknown isolation profile `{name}`"),
                &format!(
                    "the profiles are: {} (profiles.toml; add one with --tables)",
                    self.0.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles() {
        let p = Profiles::load(&TableDirs::none()).unwrap();
        assert!(p
            .get("management")
            .unwrap()
            .iter()
            .any(|s| s == "ethtool_ops.*"));
        // A located error at the argument that lists the profiles.
        match p.get("managment").unwrap_err() {
            Error::Located(d) => {
                assert!(d[0].message.contains("`managment`"), "{d:?}");
                assert!(d[0].notes.iter().any(|n| n.contains("management")), "{d:?}");
            }
            e => panic!("expected a located error, got {e}"),
        }
    }
}
