//! fgft-parse: the front end.
//!
//! Invariant: the tree is always built over a *length-preserving* rewrite of the
//! original text (macro hints blank or respell bytes without moving any), so every
//! byte range in the tree is a byte range in the original file.

use std::path::{Path, PathBuf};

/// Errors of the front end.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("tree-sitter could not parse {path}")]
    TreeSitter { path: PathBuf },
}

/// One parsed C file.
pub struct ParsedFile {
    pub path: PathBuf,
    /// The original text, byte for byte.
    pub text: String,
    pub tree: tree_sitter::Tree,
}

impl ParsedFile {
    /// Text of a node, taken from the original file.
    pub fn node_text(&self, node: tree_sitter::Node<'_>) -> &str {
        &self.text[node.byte_range()]
    }

    /// 1-based line of a byte offset.
    pub fn line_of(&self, byte: usize) -> usize {
        self.text[..byte.min(self.text.len())].matches('\n').count() + 1
    }
}

/// Parses `text` as C.
pub fn parse_text(path: &Path, text: String) -> Result<ParsedFile, ParseError> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_c::LANGUAGE.into())
        .expect("tree-sitter-c grammar matches the tree-sitter ABI");
    let tree = parser
        .parse(&text, None)
        .ok_or_else(|| ParseError::TreeSitter {
            path: path.to_path_buf(),
        })?;
    Ok(ParsedFile {
        path: path.to_path_buf(),
        text,
        tree,
    })
}

/// Reads and parses one file.
pub fn parse_file(path: &Path) -> Result<ParsedFile, ParseError> {
    let text = std::fs::read_to_string(path).map_err(|source| ParseError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_text(path, text)
}
