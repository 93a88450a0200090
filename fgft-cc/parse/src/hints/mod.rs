//! The macro-hint table and the length-preserving rewrite it drives.
//!
//! The table (`fgft-cc/tables/macro-hints.toml`, embedded, plus user extension
//! files) names kernel macros that tree-sitter-c cannot parse as written.  The
//! rewrite respells them in place: bytes are blanked or replaced by other ASCII
//! bytes, nothing moves, and newlines are never touched, so byte offsets, lines
//! and columns of the rewritten text are those of the original.

mod hash;
mod lex;
mod rewrite;
mod table;
#[cfg(test)]
mod tests;
mod words;

pub use hash::*;
use lex::*;
use rewrite::*;
pub use table::*;
use words::*;
