//! Slots: every driver function the kernel calls through a function pointer.
//!
//! The slot kinds are data (`fgft-cc/tables/slots.toml`, embedded, plus user
//! extension files found through `FGFT_TABLES` or `--tables`).  A function is a
//! root when it is stored in a slot by:
//! - a designated or positional initializer of a slot structure (also nested:
//!   `.driver = { .shutdown = f }`, and arrays of them);
//! - an assignment `x.f = fn` / `p->f = fn` whose left side resolves to a slot
//!   structure (through parameters, locals, globals, struct fields of the file
//!   and its local headers, typedefs), or whose field belongs to one slot
//!   structure only;
//! - a table macro (`SIMPLE_DEV_PM_OPS`, `SET_SYSTEM_SLEEP_PM_OPS`,
//!   `DEVICE_ATTR_RW`, `module_init`, ...);
//! - a registering call (`timer_setup`, `INIT_WORK`, `netif_napi_add`,
//!   `request_irq`, ...).

use serde::Serialize;
use std::path::{Path, PathBuf};

/// File name of the table (built-in and extension files).
pub const TABLE_NAME: &str = "slots.toml";

/// One function stored in a kernel slot.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Root {
    pub function: String,
    /// The slot structure (`net_device_ops`, `dev_pm_ops`, ...).
    pub struct_name: String,
    /// The field, dotted for embedded structures (`driver.shutdown`).
    pub field: String,
    pub file: PathBuf,
    /// 1-based line where the function is stored.
    pub line: usize,
    /// The variable (or left-hand side) holding the slot structure; empty when
    /// there is none (`module_init`, registering calls).
    pub var: String,
    /// Slot category from the table (`net`, `ethtool`, `pm`, ...).
    pub kind: String,
}

impl Ord for Root {
    /// File, line, function, structure, field, variable: the output order.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (
            &self.file,
            self.line,
            &self.function,
            &self.struct_name,
            &self.field,
            &self.var,
        )
            .cmp(&(
                &o.file,
                o.line,
                &o.function,
                &o.struct_name,
                &o.field,
                &o.var,
            ))
    }
}

impl PartialOrd for Root {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Root {
    /// `function struct.field file:line`, with `file` shown relative to `base`.
    pub fn display_line(&self, base: Option<&Path>) -> String {
        let f = base
            .and_then(|b| self.file.strip_prefix(b).ok())
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(&self.file);
        format!(
            "{} {}.{} {}:{}",
            self.function,
            self.struct_name,
            self.field,
            f.display(),
            self.line
        )
    }
}

mod facts;
mod finder;
mod prefilter;
mod scan;
mod table;
#[cfg(test)]
mod tests;

pub use facts::*;
pub use finder::*;
use prefilter::*;
pub use scan::*;
pub use table::*;
