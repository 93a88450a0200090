//! Function-name patterns: a C identifier or a glob over identifiers.

use fgft_base::ident;
use globset::{GlobBuilder, GlobMatcher};
use serde::{Serialize, Serializer};

use crate::{AnnotError, Loc};

/// A function name (`e1000_get_regs`) or a glob (`e1000_get_*`,
/// `rtl8169_[gs]et_*`, `{foo,bar}_show`), with where it was written.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    matcher: GlobMatcher,
    literal: bool,
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
const GLOB_META: &[char] = &['*', '?', '[', ']', '!', '^', '{', '}', ',', '-'];

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
        if literal && !ident::is_ident(text) {
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

    /// The pattern as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// True when the pattern is a plain function name.
    pub fn is_literal(&self) -> bool {
        self.literal
    }

    /// Does the function `name` match?
    pub fn matches(&self, name: &str) -> bool {
        if self.literal {
            self.text == name
        } else {
            self.matcher.is_match(name)
        }
    }
}
