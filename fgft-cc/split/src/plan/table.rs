//! The compensation table (`fgft-cc/tables/compensations.toml`, built in,
//! plus `compensations.toml` files in `FGFT_TABLES` directories or `--tables`).
//!
//! It says, for each kernel function SFI code may call, how the call is made
//! (a generated wrapper, or compiled into the SFI module as an inline helper)
//! and what the wrapper records: the compensation run if the transaction
//! aborts, actions deferred to commit, locks held to the end, grants of
//! memory the call returns.  Later files extend earlier ones; an entry of the
//! same name replaces the earlier one.

use crate::diag::{Error, Located};
use fgft_facts::model::{ApiModel, ApiModels, ArgKind, Returns};
use fgft_parse::tables::{self, TableDirs, TableSource};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

pub const TABLE_NAME: &str = "compensations.toml";
pub(crate) const BUILTIN: &str = include_str!("../../../tables/compensations.toml");

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[serde(default)]
    globals: GlobalsRaw,
    #[serde(default)]
    inline: InlineRaw,
    #[serde(default)]
    direct: DirectRaw,
    #[serde(default)]
    api: BTreeMap<String, EntryRaw>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DirectRaw {
    #[serde(default)]
    symbols: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobalsRaw {
    #[serde(default)]
    read: Vec<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    sizes: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct InlineRaw {
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    device: Vec<String>,
    #[serde(default)]
    device_macros: BTreeMap<String, String>,
    #[serde(default)]
    mmio_read: BTreeMap<String, u8>,
    #[serde(default)]
    mmio_write: BTreeMap<String, u8>,
    #[serde(default)]
    rep_in: BTreeMap<String, u8>,
    #[serde(default)]
    rep_out: BTreeMap<String, u8>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct EntryRaw {
    effect: String,
    proto: Option<String>,
    header: Option<String>,
    #[serde(default)]
    inline: bool,
    params: Option<Vec<String>>,
    model: Option<String>,
    returns: Option<String>,
    #[serde(default)]
    args: BTreeMap<String, String>,
    grant: Option<String>,
    grant_rights: Option<String>,
    #[serde(default)]
    grant_more: Vec<GrantRaw>,
    #[serde(default)]
    reach: Vec<ReachRaw>,
    #[serde(default)]
    requires: Vec<RequireRaw>,
    save: Option<String>,
    undo: Option<String>,
    undo_if: Option<String>,
    #[serde(default)]
    commit: bool,
    commit_ret: Option<String>,
    lock: Option<String>,
    unlock: Option<String>,
    lock_arg: Option<String>,
    release: Option<String>,
    lock_ok: Option<String>,
    locks_result: Option<String>,
    #[serde(default)]
    sleeps: bool,
    #[serde(default)]
    undo_unlocked: bool,
    heap: Option<String>,
    #[serde(default)]
    callbacks: Vec<String>,
    #[serde(default)]
    raw: bool,
    #[serde(default)]
    readonly: bool,
    memory: Option<String>,
    makes: Option<String>,
    block_of: Option<String>,
    note: Option<String>,
    audit: Option<String>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct GrantRaw {
    addr: String,
    len: String,
    #[serde(default)]
    rights: Option<String>,
    #[serde(default)]
    when: Option<String>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ReachRaw {
    addr: String,
    len: String,
    rights: String,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RequireRaw {
    cond: String,
    why: String,
}

/// What the kernel function asserts of its arguments (`requires`): a C
/// condition over the parameters (kernel objects as the kernel gets them)
/// that its BUG_ON()s would trip on when false.  The wrapper tests it
/// after the arguments and fails the body (cause assert) instead of the
/// call.
#[derive(Debug, Clone, PartialEq)]
pub struct Require {
    pub cond: String,
    /// The kernel's assertion it prevents (fs/buffer.c's BUG_ON()s).
    pub why: String,
}

/// Memory a call reads or writes through its arguments beyond what their
/// own `args` say (`reach`): the bytes behind a cursor, `*data` of
/// ethtool_puts().  Checked before the call, after the arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Reach {
    /// C expressions over the parameters.
    pub addr: String,
    pub len: String,
    /// `FGFT_R`, `FGFT_W` or `FGFT_RW`.
    pub rights: &'static str,
}

/// A further range a wrapper maps after the call (`grant_more`).
#[derive(Debug, Clone, PartialEq)]
pub struct MoreGrant {
    pub addr: String,
    pub len: String,
    /// `r`, `rw` or `new`, as `grant_rights`.
    pub rights: String,
    /// The C condition under which it is mapped; None: `ret` is no error
    /// or NULL pointer (always for a void function).
    pub when: Option<String>,
}

/// A parameter of a wrapped function.
#[derive(Debug, Clone, PartialEq)]
pub struct WParam {
    pub name: String,
    /// The declaration as written in the prototype (`size_t size`).
    pub decl: String,
    /// The type alone (`size_t`).
    pub ty: String,
    pub kind: ArgSpec,
}

/// How a wrapper treats an argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgSpec {
    Val,
    Kobj,
    Out(String),
    In(String),
    InOut(String),
    /// A NUL-terminated string the kernel reads, at most this many bytes
    /// of it when bounded (`str(n)` of strncmp).
    Str(Option<String>),
    Func,
    /// An lvalue the kernel macro assigns (`flags` of spin_lock_irqsave):
    /// set to 0 at the call site and not passed.
    Lvalue,
    /// SFI memory of this type the kernel keeps a pointer to after the call
    /// (`init_wait_entry(&__wq_entry)` of a wait on the stack): the kernel
    /// gets a stand-in that lives to the end of the transaction, keyed by
    /// the address, so an abort never leaves the kernel pointing into a
    /// dead stack frame.
    Shadow(String),
}

/// Which runtime lock tracker a lock or unlock function goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    Spin,
    /// `spin_lock_irqsave` / `spin_unlock_irqrestore`.
    SpinIrqsave,
    SpinIrq,
    SpinBh,
    Mutex,
    /// `spin_trylock` / `mutex_trylock`: taken when the call returns
    /// non-zero (released as `Spin` / `Mutex`).
    SpinTry,
    MutexTry,
    /// `mutex_lock_interruptible`: taken when the call returns 0 (else
    /// `-EINTR`), released as `Mutex`.
    MutexIntr,
    /// `rcu_read_lock` / `rcu_read_unlock`: no lock word, nests.
    Rcu,
    /// `local_bh_disable` / `local_bh_enable`: no lock word, nests.
    Bh,
    /// A lock taken and released by kernel functions the runtime has no
    /// primitive for (`netif_tx_lock_bh`, `down`): the wrapper calls the
    /// real function, the runtime calls the entry's `release` function.
    Call,
}

impl LockKind {
    /// A section without a lock word (the runtime takes no lock argument).
    pub fn is_section(self) -> bool {
        matches!(self, LockKind::Rcu | LockKind::Bh)
    }

    /// A lock that may not be taken: the runtime function returns whether
    /// it was (a trylock's non-zero, `mutex_lock_interruptible`'s 0).
    pub fn is_try(self) -> bool {
        matches!(
            self,
            LockKind::SpinTry | LockKind::MutexTry | LockKind::MutexIntr
        )
    }

    /// What the wrapper returns when it has no transaction (the lock not
    /// taken).
    pub fn not_taken(self) -> &'static str {
        if self == LockKind::MutexIntr {
            "-EINTR"
        } else {
            "0"
        }
    }

    /// The runtime function that takes (or, `unlock`, releases) the lock.
    pub fn runtime_fn(self, unlock: bool) -> &'static str {
        match (self, unlock) {
            (LockKind::Spin, false) => "fgft_spin_lock",
            (LockKind::SpinIrqsave, false) => "fgft_spin_lock_irqsave",
            (LockKind::SpinIrq, false) => "fgft_spin_lock_irq",
            (LockKind::SpinBh, false) => "fgft_spin_lock_bh",
            (LockKind::Mutex, false) => "fgft_mutex_lock",
            (LockKind::SpinTry, _) => "fgft_spin_trylock",
            (LockKind::MutexTry, _) => "fgft_mutex_trylock",
            (LockKind::MutexIntr, _) => "fgft_mutex_lock_interruptible",
            (LockKind::Spin, true) => "fgft_spin_unlock",
            (LockKind::SpinIrqsave, true) => "fgft_spin_unlock_irqrestore",
            (LockKind::SpinIrq, true) => "fgft_spin_unlock_irq",
            (LockKind::SpinBh, true) => "fgft_spin_unlock_bh",
            (LockKind::Mutex, true) => "fgft_mutex_unlock",
            (LockKind::Rcu, false) => "fgft_rcu_read_lock",
            (LockKind::Rcu, true) => "fgft_rcu_read_unlock",
            (LockKind::Bh, false) => "fgft_local_bh_disable",
            (LockKind::Bh, true) => "fgft_local_bh_enable",
            (LockKind::Call, false) => "fgft_call_lock",
            (LockKind::Call, true) => "fgft_call_unlock",
        }
    }
}

fn lock_kind(s: &str) -> Option<LockKind> {
    Some(match s {
        "spin" => LockKind::Spin,
        "spin_irqsave" | "spin_irqrestore" => LockKind::SpinIrqsave,
        "spin_irq" => LockKind::SpinIrq,
        "spin_bh" => LockKind::SpinBh,
        "mutex" => LockKind::Mutex,
        "spin_try" => LockKind::SpinTry,
        "mutex_try" => LockKind::MutexTry,
        "mutex_intr" => LockKind::MutexIntr,
        "rcu" => LockKind::Rcu,
        "bh" => LockKind::Bh,
        "call" => LockKind::Call,
        _ => return None,
    })
}

/// The memory an allocator returns, as hint inference reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Memory {
    /// Plain kernel memory: a member it is stored in is copied.
    #[default]
    Plain,
    /// `memory = "shared"`: device-visible memory (DMA-coherent), so a
    /// member it is stored in is inferred `shared`.
    Shared,
    /// `memory = "io"`: an MMIO mapping (an `__iomem` cookie that only the
    /// accessors take), so a member it is stored in is inferred `noderef`.
    Io,
}

/// One kernel function.
#[derive(Debug, Clone)]
pub struct ApiEntry {
    pub name: String,
    pub effect: String,
    /// Compiled into the SFI module; no wrapper.
    pub inline: bool,
    /// For wrappers: return type text and parameters.
    pub ret: String,
    pub params: Vec<WParam>,
    /// The prototype ends in `...`: the call stays direct, through a macro
    /// that translates and checks the named arguments.
    pub variadic: bool,
    pub header: Option<String>,
    pub model: Option<String>,
    pub returns: Returns,
    pub grant: Option<(String, String)>,
    /// Further ranges to grant after the call.
    pub grant_more: Vec<MoreGrant>,
    /// Memory reached through the arguments, checked before the call.
    pub reach: Vec<Reach>,
    /// Conditions the kernel asserts of the arguments, tested before the call.
    pub requires: Vec<Require>,
    pub save: Option<String>,
    pub undo: Option<String>,
    pub undo_if: Option<String>,
    pub commit: bool,
    /// What a deferred call returns to the body meanwhile (C expression).
    pub commit_ret: Option<String>,
    pub lock: Option<LockKind>,
    pub unlock: Option<LockKind>,
    /// The lock, as a C expression over the parameters (default: the first
    /// kernel-object parameter).
    pub lock_arg: Option<String>,
    /// `lock = "call"`: the table's unlock function that releases it.
    pub release: Option<String>,
    /// A C condition over the parameters and `ret`: when it holds, the
    /// call returned `ret` locked (`__filemap_get_folio` with `FGP_LOCK`),
    /// and the transaction holds that lock as a `lock = "call"` one, to be
    /// released with `release`.
    pub locks_result: Option<String>,
    /// The call may sleep (it waits for I/O: `__bread_gfp`): a wait point,
    /// as `sync` and `delay` calls are.
    pub sleeps: bool,
    /// The undo runs after the transaction's locks are released (it calls
    /// back into the driver: `iput()` of a new inode evicts it).
    pub undo_unlocked: bool,
    /// `heap = "ret"` on an allocator, `heap = "p"` (a parameter) on a
    /// free or a call the object is handed over to (`napi_build_skb` makes
    /// a receive buffer a frame's head): the object enters or leaves the
    /// driver's heap (runtime.h `struct fgft_heap`), which the in-place
    /// transactions of a driver may touch.
    pub heap: Option<String>,
    /// `lock = "call"` returning a value: `!ret` (0 is success, as for
    /// `down_interruptible`) or `ret` (non-zero is, as for trylocks).
    pub lock_ok: Option<String>,
    /// Members of the driver's ops structs the function calls (`ndo_stop`
    /// of `dev_close`): a callback point when the driver stores into one.
    pub callbacks: Vec<String>,
    /// A raw_spinlock_t: taken and released through the runtime's
    /// `fgft_raw_spin_*` (on PREEMPT_RT a spinlock_t is a sleeping lock,
    /// not a raw_spinlock_t).
    pub raw: bool,
    /// `readonly = true`: the call writes no memory its caller sees
    /// (`memcmp`, `strlen`), so its wrapper is declared `__pure` and SFI
    /// code keeps what it loaded across the call (a loop's invariant loads
    /// stay hoisted, checked once).
    pub readonly: bool,
    /// `memory = ...`: what kind of memory the call returns.
    pub memory: Memory,
    /// `makes = "size"`: the call creates a pool whose blocks are this
    /// many bytes (C expression over the parameters: `dma_pool_create`).
    pub makes: Option<String>,
    /// `block_of = "pool"`: what the call returns is one block of the pool
    /// passed as this parameter (its size is the creator's `makes`).
    pub block_of: Option<String>,
    pub note: Option<String>,
    /// `audit = "why"`: the entry was reviewed by hand against the kernel
    /// (it has no C definition the audit could read: a macro, assembly);
    /// `fgft-cc tables audit` lists it with this reason.
    pub audit: Option<String>,
    /// Which table file it came from (for messages).
    pub source: PathBuf,
}

impl ApiEntry {
    pub fn is_void(&self) -> bool {
        self.ret.trim() == "void"
    }
}

/// A register accessor whose memory operand SFI code checks first: an
/// MMIO accessor (`[inline] mmio_read`, `mmio_write`: the address last,
/// `readl(addr)`, `writel(value, addr)`) or a string port accessor
/// (`rep_in`, `rep_out`: `insw(port, buffer, count)`), with the bytes of
/// one access or element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoAccess {
    pub kind: IoKind,
    pub bytes: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoKind {
    MmioRead,
    MmioWrite,
    /// Port to buffer: the buffer is written.
    RepIn,
    /// Buffer to port: the buffer is read.
    RepOut,
}

impl IoKind {
    fn key(self) -> &'static str {
        match self {
            IoKind::MmioRead => "mmio_read",
            IoKind::MmioWrite => "mmio_write",
            IoKind::RepIn => "rep_in",
            IoKind::RepOut => "rep_out",
        }
    }

    /// The widths an accessor of this kind may have.
    fn widths(self) -> &'static [u8] {
        match self {
            IoKind::MmioRead | IoKind::MmioWrite => &[1, 2, 4, 8],
            IoKind::RepIn | IoKind::RepOut => &[1, 2, 4],
        }
    }
}

/// The loaded table.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub apis: BTreeMap<String, ApiEntry>,
    /// Helpers and macros that compute on values only (no memory effect
    /// beyond what their arguments' evaluation does): compiled into SFI code.
    pub inline_names: BTreeSet<String>,
    /// Register accessors among them (`[inline] device`), each a function
    /// the SFI module redefines to mark the transaction (fgft_touch_sfi(), inline);
    /// `device_macros` maps kernel macros to the accessor they expand to.
    pub device_inline: BTreeSet<String>,
    pub device_macros: BTreeMap<String, String>,
    /// The accessors among `device_inline` whose memory operand SFI code
    /// checks first (`[inline] mmio_read`, `mmio_write`, `rep_in`,
    /// `rep_out`): fgft_mmio_check() for an MMIO address, the range check
    /// of a kernel call's buffer for a string port accessor's buffer.
    pub io_checked: BTreeMap<String, IoAccess>,
    /// Kernel symbols an SFI object may call without a wrapper (`[direct]`).
    pub direct: BTreeSet<String>,
    /// Kernel globals SFI code may read; value: header that declares it.
    pub globals: BTreeMap<String, String>,
    /// Bytes of a kernel variable whose declaration has no size
    /// (`extern const unsigned char _ctype[];`).
    pub global_sizes: BTreeMap<String, String>,
}

fn located(src: &TableSource, needle: &str, message: String) -> Error {
    let path = src.display(TABLE_NAME);
    let range = src
        .text
        .find(needle)
        .map(|s| s..s + needle.len())
        .unwrap_or(0..0);
    Error::Located(vec![Located {
        path,
        text: src.text.clone(),
        range,
        message,
        label: "here".into(),
        notes: vec![],
        warning: false,
    }])
}

impl Table {
    /// The built-in table extended by the files in `dirs`.
    pub fn load(dirs: &TableDirs) -> Result<Table, Error> {
        Table::from_sources(&dirs.sources(BUILTIN, TABLE_NAME)?)
    }

    pub fn from_sources(sources: &[TableSource]) -> Result<Table, Error> {
        let mut t = Table::default();
        let mut macro_srcs = Vec::new();
        let mut io_srcs = Vec::new();
        for src in sources {
            let f: TableFile = tables::parse_toml(src, TABLE_NAME)?;
            t.inline_names.extend(f.inline.names.iter().cloned());
            t.inline_names.extend(f.inline.device.iter().cloned());
            t.inline_names
                .extend(f.inline.device_macros.keys().cloned());
            t.device_inline.extend(f.inline.device.iter().cloned());
            for (m, to) in &f.inline.device_macros {
                t.device_macros.insert(m.clone(), to.clone());
                macro_srcs.push((src, m.clone(), to.clone()));
            }
            for (kind, map) in [
                (IoKind::MmioRead, &f.inline.mmio_read),
                (IoKind::MmioWrite, &f.inline.mmio_write),
                (IoKind::RepIn, &f.inline.rep_in),
                (IoKind::RepOut, &f.inline.rep_out),
            ] {
                for (n, &bytes) in map {
                    if !kind.widths().contains(&bytes) {
                        let ok: Vec<String> = kind.widths().iter().map(|w| w.to_string()).collect();
                        return Err(located(
                            src,
                            &format!("{n} ="),
                            format!(
                                "[inline] {}: `{n}` accesses {bytes} bytes; one of {} expected",
                                kind.key(),
                                ok.join(", ")
                            ),
                        ));
                    }
                    t.io_checked.insert(n.clone(), IoAccess { kind, bytes });
                    io_srcs.push((src, kind, n.clone()));
                }
            }
            t.direct.extend(f.direct.symbols.iter().cloned());
            for g in f.globals.read {
                let h = f
                    .globals
                    .headers
                    .get(&g)
                    .cloned()
                    .unwrap_or_else(|| "linux/jiffies.h".into());
                if let Some(n) = f.globals.sizes.get(&g) {
                    t.global_sizes.insert(g.clone(), n.clone());
                }
                t.globals.insert(g, h);
            }
            for (name, raw) in f.api {
                let e = entry(src, &name, raw)?;
                t.apis.insert(name, e);
            }
        }
        for src in sources {
            t.check_releases(src)?;
        }
        // Each checked accessor is a `device` accessor.
        for (src, kind, n) in io_srcs {
            if !t.device_inline.contains(&n) {
                return Err(located(
                    src,
                    &format!("{n} ="),
                    format!("[inline] {}: `{n}` is not in `device`", kind.key()),
                ));
            }
        }
        // Each of `device_macros` expands to a `device` accessor.
        for (src, m, to) in macro_srcs {
            if !t.device_inline.contains(&to) {
                return Err(located(
                    src,
                    &m,
                    format!(
                        "[inline] device_macros: `{m}` expands to `{to}`, which is not in `device`"
                    ),
                ));
            }
        }
        Ok(t)
    }

    /// Each `release` of the entries `src` defines names an entry with
    /// `unlock = "call"` that takes at most the lock's one pointer.
    fn check_releases(&self, src: &TableSource) -> Result<(), Error> {
        let me = src.display(TABLE_NAME);
        for e in self.apis.values().filter(|e| e.source == me) {
            let Some(r) = &e.release else { continue };
            let ok = self.apis.get(r).is_some_and(|u| {
                u.unlock == Some(LockKind::Call)
                    && u.params.len() <= 1
                    && u.params.iter().all(|p| p.kind == ArgSpec::Kobj)
            });
            if !ok {
                return Err(located(
                    src,
                    r,
                    format!("api `{}`: release `{r}` is not an entry with `unlock = \"call\"` taking at most the lock (one pointer)", e.name),
                ));
            }
        }
        Ok(())
    }

    /// The register accessors the SFI module redefines for calls of
    /// `names` (the accessors among them, and what the macros among them
    /// expand to), sorted.
    pub fn device_accessors<'a>(
        &self,
        names: impl IntoIterator<Item = &'a String>,
    ) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for n in names {
            if self.device_inline.contains(n) {
                out.insert(n.clone());
            } else if let Some(to) = self.device_macros.get(n) {
                out.insert(to.clone());
            }
        }
        out
    }

    /// The analysis' view of the table.
    pub fn models(&self, pure: &[String]) -> ApiModels {
        let mut m = ApiModels::default();
        for e in self.apis.values() {
            m.map.insert(
                e.name.clone(),
                ApiModel {
                    name: e.name.clone(),
                    params: e
                        .params
                        .iter()
                        .map(|p| {
                            (
                                p.name.clone(),
                                match &p.kind {
                                    ArgSpec::Val | ArgSpec::Lvalue | ArgSpec::Shadow(_) => {
                                        ArgKind::Val
                                    }
                                    ArgSpec::Kobj => ArgKind::Kobj,
                                    ArgSpec::Out(l) => ArgKind::Out(l.clone()),
                                    ArgSpec::In(l) => ArgKind::In(l.clone()),
                                    ArgSpec::InOut(l) => ArgKind::InOut(l.clone()),
                                    ArgSpec::Str(_) => ArgKind::InStr,
                                    ArgSpec::Func => ArgKind::Func,
                                },
                            )
                        })
                        .collect(),
                    model: e.model.clone(),
                    returns: e.returns.clone(),
                    inline: e.inline,
                    header: false,
                },
            );
        }
        for n in self.inline_names.iter().chain(pure.iter()) {
            m.map.entry(n.clone()).or_insert_with(|| ApiModel {
                name: n.clone(),
                params: Vec::new(),
                model: None,
                returns: Returns::Plain,
                inline: true,
                header: false,
            });
        }
        m
    }

    /// Whether `name` is known (wrapped or inline).
    pub fn knows(&self, name: &str) -> bool {
        self.apis.contains_key(name) || self.inline_names.contains(name)
    }
}

fn entry(src: &TableSource, name: &str, raw: EntryRaw) -> Result<ApiEntry, Error> {
    check_effect(src, name, &raw)?;
    let returns = returns_of(src, name, &raw)?;
    let (ret, params, variadic) = params_of(src, name, &raw)?;
    let (lock, unlock) = locks_of(src, name, &raw, &params)?;
    let (grant, grant_more) = grants_of(src, name, &raw)?;
    let reach = reach_of(src, name, &raw)?;
    let requires = requires_of(src, name, &raw)?;
    let shape = Shape {
        ret: &ret,
        variadic,
        locks: lock.is_some() || unlock.is_some(),
        grants: grant.is_some(),
    };
    check_combination(src, name, &raw, &shape)?;
    let memory = match raw.memory.as_deref() {
        None => Memory::Plain,
        Some("shared") if grant.is_some() || raw.block_of.is_some() => Memory::Shared,
        Some("io") if grant.is_none() => Memory::Io,
        Some(m) => {
            return Err(located(
                src,
                &format!("[api.{name}]"),
                format!("api `{name}`: `memory = \"{m}\"`: the values are \"shared\", on an entry with `grant` or `block_of`, and \"io\", on one without `grant`"),
            ))
        }
    };
    if let Some(h) = &raw.heap {
        let ok = if h == "ret" {
            raw.effect == "alloc" && grant.is_some()
        } else {
            params.iter().any(|p| &p.name == h && p.ty.contains('*'))
        };
        if !ok {
            return Err(located(
                src,
                &format!("[api.{name}]"),
                format!("api `{name}`: `heap = \"{h}\"`: an allocator with `grant` takes `heap = \"ret\"`; a free, or a call the object is handed over to, names that parameter"),
            ));
        }
    }
    if let Some(b) = &raw.block_of {
        if !params.iter().any(|p| &p.name == b) {
            return Err(located(
                src,
                &format!("[api.{name}]"),
                format!("api `{name}`: `block_of = \"{b}\"` names no parameter of the prototype"),
            ));
        }
    }
    Ok(ApiEntry {
        name: name.to_string(),
        effect: raw.effect,
        inline: raw.inline,
        ret,
        params,
        variadic,
        header: raw.header,
        model: raw.model,
        returns,
        grant,
        grant_more,
        reach,
        requires,
        save: raw.save,
        undo: raw.undo,
        undo_if: raw.undo_if,
        commit: raw.commit,
        commit_ret: raw.commit_ret,
        lock,
        unlock,
        lock_arg: raw.lock_arg,
        release: raw.release,
        lock_ok: raw.lock_ok,
        locks_result: raw.locks_result.clone(),
        sleeps: raw.sleeps,
        undo_unlocked: raw.undo_unlocked,
        heap: raw.heap.clone(),
        callbacks: raw.callbacks,
        raw: raw.raw,
        readonly: raw.readonly,
        memory,
        makes: raw.makes,
        block_of: raw.block_of,
        note: raw.note,
        audit: raw.audit,
        source: src.display(TABLE_NAME),
    })
}

/// What `check_combination` looks at besides the raw entry.
struct Shape<'a> {
    ret: &'a str,
    variadic: bool,
    locks: bool,
    grants: bool,
}

fn check_effect(src: &TableSource, name: &str, raw: &EntryRaw) -> Result<(), Error> {
    const EFFECTS: &[&str] = &[
        "pure",
        "alloc",
        "free",
        "lock",
        "unlock",
        "device",
        "log",
        "delay",
        "sync",
        "state",
        "queue",
        "timer",
        "irq",
        "dma",
        "work",
        "irreversible",
    ];
    if !EFFECTS.contains(&raw.effect.as_str()) {
        return Err(located(
            src,
            &raw.effect,
            format!(
                "api `{name}`: unknown effect `{}` (one of: {})",
                raw.effect,
                EFFECTS.join(", ")
            ),
        ));
    }
    Ok(())
}

fn returns_of(src: &TableSource, name: &str, raw: &EntryRaw) -> Result<Returns, Error> {
    Ok(match raw.returns.as_deref() {
        None | Some("plain") => Returns::Plain,
        Some("fresh") => Returns::Fresh,
        Some("priv") => Returns::Priv,
        Some("container") => Returns::Container,
        Some(o) => {
            return Err(located(
                src,
                o,
                format!("api `{name}`: unknown returns `{o}` (plain, fresh, priv, container)"),
            ))
        }
    })
}

/// The wrapper's return type, parameters (with their argument kinds) and
/// whether it is variadic.
fn params_of(
    src: &TableSource,
    name: &str,
    raw: &EntryRaw,
) -> Result<(String, Vec<WParam>, bool), Error> {
    let (ret, mut params, variadic) = match (&raw.proto, raw.inline) {
        (Some(p), _) => parse_proto(name, p).map_err(|m| located(src, p, m))?,
        (None, true) => (
            "void".to_string(),
            raw.params
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|n| WParam {
                    name: n.clone(),
                    decl: n,
                    ty: String::new(),
                    kind: ArgSpec::Val,
                })
                .collect(),
            false,
        ),
        (None, false) => {
            return Err(located(
                src,
                &format!("[api.{name}]"),
                format!("api `{name}` is wrapped (not `inline = true`) but has no `proto`"),
            ))
        }
    };
    for (pn, spec) in &raw.args {
        let Some(p) = params.iter_mut().find(|p| &p.name == pn) else {
            return Err(located(
                src,
                spec,
                format!("api `{name}`: `args.{pn}` names no parameter"),
            ));
        };
        p.kind = parse_arg(spec).ok_or_else(|| {
            located(
                src,
                spec,
                format!(
                    "api `{name}`: bad argument kind `{spec}` (val, kobj, str, func, lvalue, out(LEN), in(LEN), inout(LEN))"
                ),
            )
        })?;
    }
    // Pointer parameters not described are kernel objects: the wrapper
    // hands the kernel the original, never an SFI copy.
    for p in &mut params {
        if p.kind == ArgSpec::Val && !raw.args.contains_key(&p.name) && p.ty.contains('*') {
            p.kind = ArgSpec::Kobj;
        }
    }
    Ok((ret, params, variadic))
}

fn locks_of(
    src: &TableSource,
    name: &str,
    raw: &EntryRaw,
    params: &[WParam],
) -> Result<(Option<LockKind>, Option<LockKind>), Error> {
    let lock_of = |v: &Option<String>| -> Result<Option<LockKind>, Error> {
        match v.as_deref() {
            None => Ok(None),
            Some(o) => lock_kind(o).map(Some).ok_or_else(|| {
                located(
                    src,
                    o,
                    format!(
                        "api `{name}`: unknown lock kind `{o}` (spin, spin_irqsave, spin_irqrestore, spin_irq, spin_bh, mutex, rcu, bh, call)"
                    ),
                )
            }),
        }
    };
    let lock = lock_of(&raw.lock)?;
    let unlock = lock_of(&raw.unlock)?;
    let here = format!("[api.{name}]");
    let call = lock.or(unlock) == Some(LockKind::Call);
    if call && lock.is_some() && raw.release.is_none() {
        return Err(located(
            src,
            &here,
            format!("api `{name}`: a `lock = \"call\"` function needs `release`, the table's unlock function that releases it"),
        ));
    }
    if raw.release.is_some() && !(call && lock.is_some()) && raw.locks_result.is_none() {
        return Err(located(
            src,
            &here,
            format!("api `{name}`: `release` belongs to a `lock = \"call\"` entry or one with `locks_result`"),
        ));
    }
    if raw.locks_result.is_some() && (raw.release.is_none() || lock.is_some() || unlock.is_some()) {
        return Err(located(
            src,
            &here,
            format!("api `{name}`: `locks_result` needs `release` (the unlock that releases the result), and no `lock` or `unlock`"),
        ));
    }
    let void = params_ret_void(raw);
    match raw.lock_ok.as_deref() {
        None if call && lock.is_some() && !void => {
            return Err(located(
                src,
                &here,
                format!("api `{name}`: a lock function that returns a value needs `lock_ok`: \"!ret\" (0 means taken) or \"ret\" (non-zero means taken)"),
            ))
        }
        Some(o) if !(call && lock.is_some()) || void || !matches!(o, "!ret" | "ret") => {
            return Err(located(
                src,
                o,
                format!("api `{name}`: `lock_ok` is \"!ret\" or \"ret\", for a `lock = \"call\"` function that returns a value"),
            ))
        }
        _ => {}
    }
    if call {
        if raw.raw {
            return Err(located(
                src,
                &here,
                format!("api `{name}`: `raw` marks a raw_spinlock_t function (lock kinds spin, spin_irqsave, spin_irq), not a `lock = \"call\"` one"),
            ));
        }
        return Ok((lock, unlock));
    }
    if raw.raw
        && !matches!(
            lock.or(unlock),
            Some(LockKind::Spin | LockKind::SpinIrqsave | LockKind::SpinIrq)
        )
    {
        return Err(located(
            src,
            &here,
            format!("api `{name}`: `raw` marks a raw_spinlock_t function: its lock kind is spin, spin_irqsave or spin_irq"),
        ));
    }
    let section = lock.or(unlock).is_some_and(LockKind::is_section);
    if (lock.is_some() || unlock.is_some())
        && !section
        && raw.lock_arg.is_none()
        && !params.iter().any(|p| p.kind == ArgSpec::Kobj)
    {
        return Err(located(
            src,
            &format!("[api.{name}]"),
            format!("api `{name}`: a lock function needs a pointer parameter (the lock)"),
        ));
    }
    Ok((lock, unlock))
}

/// Whether the entry's prototype returns `void`.
fn params_ret_void(raw: &EntryRaw) -> bool {
    raw.proto.as_deref().is_some_and(|p| {
        let head = p.split('(').next().unwrap_or("");
        head.split_whitespace().next() == Some("void") && !head.contains('*')
    })
}

fn requires_of(src: &TableSource, name: &str, raw: &EntryRaw) -> Result<Vec<Require>, Error> {
    raw.requires
        .iter()
        .map(|r| {
            let cond = r.cond.trim();
            if cond.is_empty() || r.why.trim().is_empty() {
                return Err(located(
                    src,
                    &format!("[api.{name}]"),
                    format!("api `{name}`: a requires entry needs a C condition (`cond`) and the assertion it prevents (`why`)"),
                ));
            }
            if raw.proto.as_deref().is_none_or(|p| p.contains("...")) || raw.inline {
                return Err(located(
                    src,
                    &format!("[api.{name}]"),
                    format!("api `{name}`: `requires` is tested by a wrapper, and an inline helper, a macro or a variadic function has none"),
                ));
            }
            Ok(Require {
                cond: cond.to_string(),
                why: r.why.trim().to_string(),
            })
        })
        .collect()
}

fn reach_of(src: &TableSource, name: &str, raw: &EntryRaw) -> Result<Vec<Reach>, Error> {
    raw.reach
        .iter()
        .map(|r| {
            let rights = match r.rights.as_str() {
                "r" => "FGFT_R",
                "w" => "FGFT_W",
                "rw" => "FGFT_RW",
                _ => {
                    return Err(located(
                        src,
                        &r.rights,
                        format!("api `{name}`: reach rights are `r`, `w` or `rw`"),
                    ))
                }
            };
            if r.addr.trim().is_empty() || r.len.trim().is_empty() {
                return Err(located(
                    src,
                    &format!("[api.{name}]"),
                    format!("api `{name}`: a reach needs a C address and length"),
                ));
            }
            Ok(Reach {
                addr: r.addr.clone(),
                len: r.len.clone(),
                rights,
            })
        })
        .collect()
}

type Grants = (Option<(String, String)>, Vec<MoreGrant>);

fn grants_of(src: &TableSource, name: &str, raw: &EntryRaw) -> Result<Grants, Error> {
    // Fresh memory an abort frees (its undo) needs no write log: nothing
    // of it outlives the abort.
    let fresh = raw.returns.as_deref() == Some("fresh") && raw.undo.is_some();
    let default = if fresh { "new" } else { "rw" };
    let grant = raw.grant.clone().map(|g| {
        (
            g,
            raw.grant_rights
                .clone()
                .unwrap_or_else(|| default.to_string()),
        )
    });
    let grant_more: Vec<MoreGrant> = raw
        .grant_more
        .iter()
        .map(|g| MoreGrant {
            addr: g.addr.clone(),
            len: g.len.clone(),
            rights: g.rights.clone().unwrap_or_else(|| "rw".into()),
            when: g.when.clone(),
        })
        .collect();
    let ok = |r: &str| matches!(r, "r" | "rw" | "new");
    for g in &grant_more {
        if !ok(&g.rights) {
            return Err(located(
                src,
                &g.rights,
                format!("api `{name}`: grant rights are `r`, `rw` or `new`"),
            ));
        }
        if g.when.as_deref().is_some_and(|w| w.trim().is_empty()) {
            return Err(located(
                src,
                &format!("[api.{name}]"),
                format!("api `{name}`: grant_more's `when` is an empty condition"),
            ));
        }
    }
    if let Some((_, r)) = &grant {
        if !ok(r) {
            return Err(located(
                src,
                r,
                format!("api `{name}`: grant_rights is `r`, `rw` or `new`"),
            ));
        }
    }
    Ok((grant, grant_more))
}

/// Combinations of keys that cannot work together.
fn check_combination(
    src: &TableSource,
    name: &str,
    raw: &EntryRaw,
    shape: &Shape<'_>,
) -> Result<(), Error> {
    if shape.variadic && (raw.undo.is_some() || raw.commit || shape.locks || shape.grants) {
        return Err(located(
            src,
            &format!("[api.{name}]"),
            format!("api `{name}`: a variadic function is called directly; it cannot record compensations or grants"),
        ));
    }
    if raw.commit && shape.ret.trim() != "void" && raw.commit_ret.is_none() {
        return Err(located(
            src,
            &format!("[api.{name}]"),
            format!("api `{name}`: a call deferred to commit returns nothing yet: give `commit_ret`, the value the body gets meanwhile"),
        ));
    }
    if raw.commit_ret.is_some() && (!raw.commit || shape.ret.trim() == "void") {
        return Err(located(
            src,
            &format!("[api.{name}]"),
            format!("api `{name}`: `commit_ret` is only for a call deferred to commit (`commit = true`) that returns a value"),
        ));
    }
    let writes = raw.args.values().any(|a| {
        let a = a.trim_start();
        a.starts_with("out") || a.starts_with("inout")
    });
    if raw.readonly
        && (raw.effect != "pure"
            || shape.ret.trim() == "void"
            || writes
            || raw.undo.is_some()
            || raw.commit
            || shape.locks
            || shape.grants
            || raw.inline
            || shape.variadic)
    {
        return Err(located(
            src,
            &format!("[api.{name}]"),
            format!("api `{name}`: `readonly` is for a wrapped `pure` function that returns a value and writes nothing (no out/inout argument, no grant, undo, lock or deferral)"),
        ));
    }
    if raw.inline && (raw.undo.is_some() || raw.commit || shape.locks) {
        return Err(located(
            src,
            &format!("[api.{name}]"),
            format!(
                "api `{name}`: an inline entry cannot record compensations (it has no wrapper)"
            ),
        ));
    }
    Ok(())
}

fn parse_arg(s: &str) -> Option<ArgSpec> {
    let s = s.trim();
    let inner = |p: &str| {
        s.strip_prefix(p)
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
            .map(|r| r.trim().to_string())
    };
    Some(match s {
        "val" => ArgSpec::Val,
        "kobj" => ArgSpec::Kobj,
        "str" => ArgSpec::Str(None),
        "func" => ArgSpec::Func,
        "lvalue" => ArgSpec::Lvalue,
        _ => {
            if let Some(t) = inner("shadow") {
                ArgSpec::Shadow(t)
            } else if let Some(l) = inner("str") {
                ArgSpec::Str(Some(l))
            } else if let Some(l) = inner("inout") {
                ArgSpec::InOut(l)
            } else if let Some(l) = inner("out") {
                ArgSpec::Out(l)
            } else if let Some(l) = inner("in") {
                ArgSpec::In(l)
            } else {
                return None;
            }
        }
    })
}

/// Splits `void *kmalloc(size_t size, gfp_t flags)` into the return type and
/// parameters.
pub fn parse_proto(name: &str, proto: &str) -> Result<(String, Vec<WParam>, bool), String> {
    let open = proto
        .find('(')
        .ok_or_else(|| format!("api `{name}`: proto has no parameter list"))?;
    let close = proto
        .rfind(')')
        .ok_or_else(|| format!("api `{name}`: proto has no `)`"))?;
    let head = proto[..open].trim();
    let Some(head_ret) = head.strip_suffix(name) else {
        return Err(format!(
            "api `{name}`: proto names `{head}`, expected it to end with `{name}`"
        ));
    };
    let ret = head_ret.trim().to_string();
    let ret = if ret.is_empty() { "int".into() } else { ret };
    let plist = proto[open + 1..close].trim();
    let mut params = Vec::new();
    let mut variadic = false;
    if !plist.is_empty() && plist != "void" {
        for (i, p) in fgft_facts::macros::split_args(plist)
            .into_iter()
            .enumerate()
        {
            if p == "..." {
                variadic = true;
                continue;
            }
            // The name is the last identifier of the declaration, or the one
            // in `(*name)` for a function pointer.
            let idents = fgft_facts::macros::identifiers(&p);
            let fnptr = p.find("(*").map(|k| {
                p[k + 2..]
                    .trim_start()
                    .chars()
                    .take_while(|c| fgft_base::ident::is_char(*c))
                    .collect::<String>()
            });
            let pname = fnptr
                .filter(|n| !n.is_empty())
                .or_else(|| idents.last().map(|s| s.to_string()))
                .ok_or_else(|| format!("api `{name}`: parameter {} has no name", i + 1))?;
            let ty = if p.contains("(*") {
                p.replacen(pname.as_str(), "", 1).trim().to_string()
            } else {
                p[..p.rfind(pname.as_str()).unwrap_or(p.len())]
                    .trim()
                    .to_string()
            };
            if ty.is_empty() {
                return Err(format!("api `{name}`: parameter `{pname}` has no type"));
            }
            params.push(WParam {
                name: pname,
                decl: p.clone(),
                ty,
                kind: ArgSpec::Val,
            });
        }
    }
    Ok((ret, params, variadic))
}

#[cfg(test)]
mod tests;
