//! Byte-range edits over a file's original text: the shared applier of
//! [`fgft_base::edit`] (bytes outside the edited ranges are copied
//! unchanged, so macros, comments and `#ifdef`s stay byte-identical).

pub use fgft_base::edit::{whole_lines, Edit, Edits};
pub use fgft_base::Overlap;
