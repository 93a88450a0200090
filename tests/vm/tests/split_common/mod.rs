//! Helpers of the VM tests of split drivers (split_wild, split_icall).

#![allow(dead_code)]

use fgft_vm::{Marker, Outcome};
use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The marker `name` with `tag=TAG`; the test fails with the console's
/// tail when there is none.
pub fn mark<'a>(out: &'a Outcome, name: &str, tag: &str) -> &'a Marker {
    out.markers_named(name)
        .into_iter()
        .find(|m| m.get("tag") == Some(tag))
        .unwrap_or_else(|| panic!("no marker {name} tag={tag}\n{out}\n{}", out.tail(80)))
}

/// Field `key` of a marker; the test fails when it is missing.
pub fn field<'a>(m: &'a Marker, key: &str) -> &'a str {
    m.get(key)
        .unwrap_or_else(|| panic!("marker {m} has no field {key}"))
}
