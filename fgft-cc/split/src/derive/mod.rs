//! Hints the driver does not write: the kernel's interface contracts
//! (`contracts.toml`) and what the driver's own code says (allocation
//! sites).
//!
//! Job: extend the driver's annotations with derived hints before the plan
//! is built, each tagged with its source (`HintSource`) and located at its
//! evidence, so that the plan treats them like the driver's own and
//! `plan.txt` names where each came from.
//!
//! Invariants: a derived hint never replaces one the driver wrote on the
//! same parameter or member; contracts come before inference (a kernel
//! structure's contract is not second-guessed); the order is deterministic.

pub mod contracts;
pub mod infer;

use crate::diag::Located;
use crate::plan::table::Table;
use crate::plan::DriverFile;
use fgft_annotations::{Annotations, Hint, HintKind, HintSource};
use fgft_facts::model::DriverFacts;
use fgft_facts::program::{FileId, Program};
use fgft_facts::slots::Root;

/// `ann` with the contracts' hints and the inferred ones added, and a
/// warning at each hint of the driver's that gives a buffer another length
/// than the kernel's contract for its slot.
pub fn extend(
    mut ann: Annotations,
    prog: &Program,
    facts: &DriverFacts,
    roots: &[(FileId, Root)],
    files: &[DriverFile],
    (contracts, table, icalls): (&contracts::Contracts, &Table, &crate::icall::Icalls),
) -> (Annotations, Vec<Located>) {
    let (from_contracts, conflicts) = contracts.hints(prog, roots, &ann);
    let warnings = conflicts
        .iter()
        .map(|(hand, c)| conflict(hand, c))
        .collect();
    ann.hints.extend(from_contracts);
    let inferred = infer::hints(prog, facts, table, files, &ann, icalls);
    ann.hints.extend(inferred);
    let objects = infer::param_objects(prog, facts, files, &ann);
    ann.hints.extend(objects);
    let containers = infer::containers(prog, facts, files, &ann);
    ann.hints.extend(containers);
    (ann, warnings)
}

/// The warning for a driver hint `hand` that its slot's contract `c`
/// contradicts.
fn conflict(hand: &Hint, c: &Hint) -> Located {
    let len = |h: &Hint| match &h.kind {
        HintKind::Blob { len } => len.clone(),
        _ => String::new(),
    };
    let slot = match &c.source {
        HintSource::Contract { slot } => slot.clone(),
        _ => String::new(),
    };
    Located {
        path: hand.loc.file.clone(),
        text: std::fs::read_to_string(&hand.loc.file).unwrap_or_default(),
        range: hand.loc.start..hand.loc.end,
        message: format!(
            "the hint on `{}` copies `{}` bytes, but the kernel passes `{}` bytes to `{slot}` ({}:{})",
            hand.target,
            len(hand),
            len(c),
            c.loc.file.display(),
            c.loc.line
        ),
        label: "not the contract's length".into(),
        notes: vec![format!(
            "the driver's hint wins: a copy of another length than the kernel's can cut a string's NUL or leave bytes the kernel passed behind; drop the hint to use the contract (`{}`), or correct it",
            len(c)
        )],
        warning: true,
    }
}
