//! fgft-facts: what the planner needs to know about a driver.

pub mod slots;

// Local headers: a text index, parsed on demand.
pub mod hdr;
pub mod headers;

// Call graph, field accesses and kernel API calls (fgft-cc split); `model`
// is the leaf that holds the types they share (none of them imports another
// for its types).
pub mod access;
pub mod apicalls;
pub mod callgraph;
pub mod ctype;
pub mod macros;
pub mod model;
pub mod program;
pub mod tracepoints;
