//! Entry-point patterns: a function name or a glob over names
//! (`e1000_get_*`), or a slot pattern `struct.field` where either side may
//! be a glob (`ethtool_ops.*`, `net_device_ops.ndo_get_stats64`): every
//! function stored in a matching slot.

use fgft_base::ident;
use globset::{GlobBuilder, GlobMatcher};
use serde::{Serialize, Serializer};

use crate::{AnnotError, Loc};

/// A function name (`e1000_get_regs`) or a glob (`e1000_get_*`,
/// `rtl8169_[gs]et_*`, `{foo,bar}_show`), or a slot pattern
/// (`ethtool_ops.*`), with where it was written.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    matcher: GlobMatcher,
    literal: bool,
    /// A `struct.field` pattern, matched against the slots a function is
    /// stored in.
    slot: bool,
    /// Where the pattern was written.
    pub loc: Loc,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.loc == other.loc
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Characters a function glob may hold besides identifier characters.
const GLOB_META: &[char] = &['*', '?', '[', ']', '!', '^', '{', '}', ',', '-', '.'];

impl Pattern {
    /// Checks and compiles `text`.
    pub fn new(text: &str, loc: Loc) -> Result<Pattern, AnnotError> {
        let bad = |msg: String| AnnotError::BadPattern {
            loc: loc.clone(),
            pattern: text.to_string(),
            msg,
        };
        if text.is_empty() {
            return Err(bad("empty pattern".into()));
        }
        if let Some(c) = text
            .chars()
            .find(|&c| !(ident::is_char(c) || GLOB_META.contains(&c)))
        {
            return Err(bad(format!(
                "`{}` cannot appear in a C function name or a glob",
                c.escape_default()
            )));
        }
        let literal = !text.contains(['*', '?', '[', '{']);
        let slot = text.contains('.');
        if slot {
            let parts: Vec<&str> = text.split('.').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                return Err(bad(
                    "a slot pattern is `struct.field` (`ethtool_ops.*`), with one `.`".into(),
                ));
            }
            if literal && !parts.iter().all(|p| ident::is_ident(p)) {
                return Err(bad(
                    "not a `struct.field` of C identifiers and not a glob".into()
                ));
            }
        } else if literal && !ident::is_ident(text) {
            return Err(bad("not a C identifier and not a glob".into()));
        }
        let glob = GlobBuilder::new(text)
            .literal_separator(true)
            .build()
            .map_err(|e| bad(e.kind().to_string()))?;
        Ok(Pattern {
            text: text.to_string(),
            matcher: glob.compile_matcher(),
            literal,
            slot,
            loc,
        })
    }

    /// A pattern given as `--isolate TEXT` on the command line.
    pub fn from_cli(text: &str) -> Result<Pattern, AnnotError> {
        Pattern::new(
            text,
            Loc::file_start(std::path::Path::new("<command line>")),
        )
    }

    /// A pattern of isolation profile `profile` (`profiles.toml`); its
    /// location names the profile.
    pub fn from_profile(text: &str, profile: &str) -> Result<Pattern, AnnotError> {
        Pattern::new(
            text,
            Loc::file_start(std::path::Path::new(&format!("<profile {profile}>"))),
        )
    }

    /// True for a pattern of an isolation profile.
    pub fn is_profile(&self) -> bool {
        self.loc.file.to_string_lossy().starts_with("<profile ")
    }

    /// The pattern as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// True when the pattern is a plain function name.
    pub fn is_literal(&self) -> bool {
        self.literal && !self.slot
    }

    /// True when the pattern selects by slot (`struct.field`).
    pub fn is_slot(&self) -> bool {
        self.slot
    }

    /// Does the function `name`, stored in `slots` (`struct.field`), match?
    pub fn matches_entry(&self, name: &str, slots: &[String]) -> bool {
        if self.slot {
            slots.iter().any(|s| self.glob_match(s))
        } else {
            self.glob_match(name)
        }
    }

    /// Does the function `name` match?  (A slot pattern matches no bare
    /// name.)
    pub fn matches(&self, name: &str) -> bool {
        !self.slot && self.glob_match(name)
    }

    fn glob_match(&self, text: &str) -> bool {
        if self.literal {
            self.text == text
        } else {
            self.matcher.is_match(text)
        }
    }
}
