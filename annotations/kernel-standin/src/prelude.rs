//! `use kernel::prelude::*;` (the parts the stand-in has).

pub use crate::error::{code::*, Error, Result};
pub use macros::vtable;
