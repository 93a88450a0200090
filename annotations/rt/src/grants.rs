//! Standing grants: ranges registered by the driver at set-up (MMIO
//! registers of its windows, its DMA buffers), which every transaction
//! starts with. The kernel-side counterpart is the stub mapping objects into
//! the transaction at begin; here they are mapped once and shared.

use crate::txn::{Space, Tables};
use crate::Error;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static GLOBAL: Mutex<Option<Tables>> = Mutex::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static CACHE: RefCell<(u64, Rc<Tables>)> = RefCell::new((0, Rc::new(Default::default())));
}

fn with_global<R>(f: impl FnOnce(&mut Tables) -> R) -> R {
    let mut g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    let g = g.get_or_insert_with(Default::default);
    let r = f(g);
    GENERATION.fetch_add(1, Ordering::AcqRel);
    r
}

/// Registers a standing grant (a range every later transaction may touch).
pub fn grant(space: Space, addr: u64, len: u64, rights: u32) -> Result<(), Error> {
    with_global(|g| g[space as usize].map(addr, len, rights))
}

/// Registers a standing grant derived from the one containing `parent`.
pub fn grant_derived(
    space: Space,
    parent: u64,
    addr: u64,
    len: u64,
    rights: u32,
) -> Result<(), Error> {
    with_global(|g| g[space as usize].map_derived(parent, addr, len, rights))
}

/// Revokes a standing grant and everything derived from it.
pub fn revoke(space: Space, addr: u64) -> usize {
    with_global(|g| g[space as usize].unmap(addr))
}

/// The standing grants as this thread last saw them (copied again only when
/// they changed).
pub(crate) fn base() -> Rc<Tables> {
    let gen = GENERATION.load(Ordering::Acquire);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != gen {
            let g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
            let tables = g.clone().unwrap_or_default();
            *c = (gen, Rc::new(tables));
        }
        c.1.clone()
    })
}
