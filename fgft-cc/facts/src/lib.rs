//! fgft-facts: what the planner needs to know about a driver.

pub mod access;
pub mod apicalls;
pub mod callgraph;
pub mod ctype;
pub mod macros;
pub mod program;
