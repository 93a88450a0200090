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

use crate::plan::table::Table;
use crate::plan::DriverFile;
use fgft_annotations::Annotations;
use fgft_facts::model::DriverFacts;
use fgft_facts::program::{FileId, Program};
use fgft_facts::slots::Root;

/// `ann` with the contracts' hints and the inferred ones added.
pub fn extend(
    mut ann: Annotations,
    prog: &Program,
    facts: &DriverFacts,
    roots: &[(FileId, Root)],
    files: &[DriverFile],
    (contracts, table, icalls): (&contracts::Contracts, &Table, &crate::icall::Icalls),
) -> Annotations {
    let from_contracts = contracts.hints(prog, roots, &ann);
    ann.hints.extend(from_contracts);
    let inferred = infer::hints(prog, facts, table, files, &ann, icalls);
    ann.hints.extend(inferred);
    let objects = infer::param_objects(prog, facts, files, &ann);
    ann.hints.extend(objects);
    let containers = infer::containers(prog, facts, files, &ann);
    ann.hints.extend(containers);
    ann
}
