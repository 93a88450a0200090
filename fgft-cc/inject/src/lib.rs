//! fgft-inject: source-level fault injection for driver entry points.
//!
//! Given parsed driver files and the entry points to target, this crate finds
//! *sites* in each entry point's body where a realistic fault can be planted
//! (a pointer about to be dereferenced, a field read, a division, a lock call,
//! an array-writing loop), picks a deterministic subset from a seed, and writes
//! every chosen variant into the source at once. Each variant is guarded by its
//! own id, so one build holds all variants and a campaign switches one on at a
//! time through `fgft_inject_hit(id)` (provided by the fgft runtime, or by the
//! generated `fgft_inject.c` in a native build).
//!
//! Invariants:
//! - every change is a byte-range edit of the original text; edits never
//!   overlap and never add a line break, so every line number stays valid;
//! - the same inputs and seed give the same variants, ids and labels;
//! - a guard that is off leaves the driver's behaviour unchanged.

use fgft_base::edit::{self, Edits};
use fgft_parse::ParsedFile;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use tree_sitter::Node;

/// Errors of the injector.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    #[error("unknown fault kind `{0}` (known: {known})", known = FaultKind::ALL.iter().chain(FaultKind::BOUNDARY.iter()).map(|k| k.name()).collect::<Vec<_>>().join(", "))]
    UnknownKind(String),
    #[error("no entry point matched: {0}")]
    NoEntry(String),
    #[error("internal: overlapping edits in {0}")]
    Overlap(PathBuf),
}

/// The fault classes of the FGFT paper's injection campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A pointer about to be dereferenced becomes NULL.
    NullDeref,
    /// A pointer about to be dereferenced becomes a non-canonical address.
    CorruptPtr,
    /// A store through a pointer lands 16 MiB away from its object.
    WildWrite,
    /// A field read returns garbage (0x5a bytes).
    CorruptField,
    /// An integer division by zero.
    DivZero,
    /// BUG().
    Bug,
    /// An unlock is skipped.
    MissingUnlock,
    /// A lock is taken twice.
    ExtraLock,
    /// A loop that writes an array runs one element too far.
    OffByOne,
    /// A local array is overrun by 24 bytes: the stack protector's canary
    /// above it, and saved registers or the return address above that,
    /// are clobbered.
    StackOverrun,
    /// The isolation boundary: a returned value (a pointer or a length)
    /// becomes 0x5a bytes.
    CorruptRet,
    /// The isolation boundary: the length or count handed to a kernel
    /// helper (memcpy, the string copies, sg and skb lengths,
    /// __block_write_begin) becomes 0x5a bytes.
    CorruptLen,
    /// The isolation boundary: a value stored into a member through a
    /// pointer (`x->m = v`), which copy-out writes back, becomes 0x5a bytes.
    CorruptMember,
}

impl FaultKind {
    pub const ALL: [FaultKind; 10] = [
        FaultKind::NullDeref,
        FaultKind::CorruptPtr,
        FaultKind::WildWrite,
        FaultKind::CorruptField,
        FaultKind::DivZero,
        FaultKind::Bug,
        FaultKind::MissingUnlock,
        FaultKind::ExtraLock,
        FaultKind::OffByOne,
        FaultKind::StackOverrun,
    ];

    /// The kinds aimed at the isolation boundary (drawn only when asked
    /// for: `--kinds`, a campaign's kind list), so that the draws of
    /// [`FaultKind::ALL`] under a seed stay those of the campaigns already
    /// reported.
    pub const BOUNDARY: [FaultKind; 3] = [
        FaultKind::CorruptRet,
        FaultKind::CorruptLen,
        FaultKind::CorruptMember,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::NullDeref => "null-deref",
            FaultKind::CorruptPtr => "corrupt-ptr",
            FaultKind::WildWrite => "wild-write",
            FaultKind::CorruptField => "corrupt-field",
            FaultKind::DivZero => "div-zero",
            FaultKind::Bug => "bug",
            FaultKind::MissingUnlock => "missing-unlock",
            FaultKind::ExtraLock => "extra-lock",
            FaultKind::OffByOne => "off-by-one",
            FaultKind::StackOverrun => "stack-overrun",
            FaultKind::CorruptRet => "corrupt-ret",
            FaultKind::CorruptLen => "corrupt-len",
            FaultKind::CorruptMember => "corrupt-member",
        }
    }

    pub fn parse(s: &str) -> Result<FaultKind, InjectError> {
        FaultKind::ALL
            .iter()
            .chain(FaultKind::BOUNDARY.iter())
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| InjectError::UnknownKind(s.to_string()))
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One driver file to inject into, with the path it will have in the output.
pub struct Source {
    pub rel: PathBuf,
    pub file: ParsedFile,
}

/// A place where one fault can be planted.
#[derive(Debug, Clone)]
pub struct Site {
    pub kind: FaultKind,
    pub entry: String,
    /// Index into the `Source` slice.
    pub source: usize,
    pub line: usize,
    /// The bytes replaced; the replacement is built from `template` with the id.
    pub range: Range<usize>,
    template: Template,
    /// What the fault acts on, for the label (`adapter`, `hw->mac_type`, ...).
    pub target: String,
}

#[derive(Debug, Clone)]
enum Template {
    /// `(HIT ? BAD : (orig))`, BAD uses `$` for the original text.
    Choose(&'static str),
    /// Field read corrupted through a temporary.
    Garbage,
    /// `(HIT ? (void)0 : (void)(orig))`
    Skip,
    /// `((HIT ? orig : (void)0), orig)`
    Twice,
    /// Statement inserted after the opening brace (the range is empty).
    Insert(&'static str),
    /// `{ STMT orig }` around a statement.
    Before(&'static str),
    /// `(orig) + (HIT ? 1 : 0)`
    PlusOne,
    /// ` if (HIT) VAR = VALUE;` inserted before the statement that holds the
    /// access (the range is empty); `$` in VALUE is the variable. Plain
    /// assignments keep the injected code in the shapes the compiler's
    /// analyses know (no typeof casts, no pointer arithmetic on the object).
    AssignBefore(&'static str),
}

/// A chosen site with its id and label.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub id: u32,
    pub label: String,
    pub kind: FaultKind,
    pub entry: String,
    pub file: PathBuf,
    pub line: usize,
    pub target: String,
    #[serde(skip)]
    pub site: Site,
}

/// Selection options.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    /// Variants per entry point (at most).
    pub per_entry: usize,
    /// Kinds to draw from (all when empty).
    pub kinds: Vec<FaultKind>,
}

/// The guard: true when variant `id` is switched on. Self-contained (a
/// block-scope declaration), so injected files need no new #include line.
fn hit(id: u32) -> String {
    format!("({{ extern bool fgft_inject_hit(int id); fgft_inject_hit({id}); }})")
}

impl Site {
    /// The replacement text for this site under id `id`.
    pub fn replacement(&self, id: u32, orig: &str) -> String {
        let h = hit(id);
        match &self.template {
            Template::Choose(bad) => {
                let bad = bad.replace('$', orig);
                format!("({h} ? {bad} : ({orig}))")
            }
            // `0 ? x : x` evaluates x once and, unlike `x` alone, is a plain
            // rvalue: a bit-field member is promoted (`__auto_type` refuses a
            // bit-field initializer) and a const one loses its qualifier.
            Template::Garbage => format!(
                "({{ __auto_type __fgft_v = 0 ? ({orig}) : ({orig}); if ({h}) memset(&__fgft_v, 0x5a, sizeof(__fgft_v)); __fgft_v; }})"
            ),
            Template::Skip => format!("({h} ? (void)0 : (void)({orig}))"),
            Template::Twice => format!("(({h} ? {orig} : (void)0), {orig})"),
            Template::Insert(stmt) => format!(" {{ if ({h}) {stmt} }}"),
            Template::Before(stmt) => format!("{{ if ({h}) {stmt} {orig} }}"),
            Template::PlusOne => format!("({orig}) + ({h} ? 1 : 0)"),
            Template::AssignBefore(value) => {
                let var = &self.target;
                format!("{{ if ({h}) {var} = {}; }} ", value.replace('$', var))
            }
        }
    }
}

/// Both operands are volatile reads, so the compiler can neither fold the
/// division nor reason the zero away as undefined behaviour.
const DIV0: &str = "{ volatile int __fgft_n = 1, __fgft_z = 0; __fgft_z = __fgft_n / __fgft_z; }";
/// A local array written 24 bytes past its end, through a bound the
/// compiler cannot see (no -Warray-bounds, no folding): the bytes above
/// it in the frame (the stack protector's canary, then saved registers or
/// the return address) become 0x41.
const OVERRUN: &str = "{ volatile char __fgft_b[8]; volatile int __fgft_i, __fgft_n = 32; for (__fgft_i = 0; __fgft_i < __fgft_n; __fgft_i++) __fgft_b[__fgft_i] = 0x41; (void)__fgft_b[0]; }";
/// A zero the compiler cannot see (see DIV0).
const ZERO: &str = "({ volatile int __fgft_z = 0; __fgft_z; })";
const UNLOCKS: &[&str] = &[
    "spin_unlock",
    "spin_unlock_bh",
    "spin_unlock_irq",
    "spin_unlock_irqrestore",
    "raw_spin_unlock",
    "raw_spin_unlock_irqrestore",
    "mutex_unlock",
    "read_unlock",
    "write_unlock",
    "up",
    "rtnl_unlock",
];
const LOCKS: &[&str] = &[
    "spin_lock",
    "spin_lock_bh",
    "spin_lock_irq",
    "raw_spin_lock",
    "mutex_lock",
    "rtnl_lock",
];

/// Finds every site in the bodies of the functions `is_entry` accepts.
pub fn find_sites(sources: &[Source], is_entry: &dyn Fn(&str) -> bool) -> Vec<Site> {
    let mut sites = Vec::new();
    for (si, src) in sources.iter().enumerate() {
        let root = src.file.tree.root_node();
        let mut cur = root.walk();
        for def in root.named_children(&mut cur) {
            if def.kind() != "function_definition" {
                continue;
            }
            let Some(name) = fgft_parse::function_name(&src.file, def) else {
                continue;
            };
            if !is_entry(name) {
                continue;
            }
            let Some(body) = def.child_by_field_name("body") else {
                continue;
            };
            let mut f = Finder {
                file: &src.file,
                entry: name.to_string(),
                source: si,
                returns_value: returns_value(&src.file, def),
                out: &mut sites,
            };
            f.body(body);
        }
    }
    sites
}

struct Finder<'a> {
    file: &'a ParsedFile,
    entry: String,
    source: usize,
    /// The function returns a value (not `void`): its returns can carry a
    /// corrupted one.
    returns_value: bool,
    out: &'a mut Vec<Site>,
}

/// Whether function definition `def` returns a value: its type is not
/// `void`, or its declarator makes a pointer of it.
fn returns_value(file: &ParsedFile, def: Node<'_>) -> bool {
    let void = def
        .child_by_field_name("type")
        .is_some_and(|t| file.node_text(t).trim() == "void");
    let pointer = def
        .child_by_field_name("declarator")
        .is_some_and(|d| d.kind() == "pointer_declarator");
    !void || pointer
}

/// Kernel helpers and the argument (0-based) that sizes what they touch:
/// the counts the `corrupt-len` kind corrupts.
const LEN_ARGS: &[(&str, usize)] = &[
    ("memcpy", 2),
    ("memmove", 2),
    ("memset", 2),
    ("memcmp", 2),
    ("strscpy", 2),
    ("strncpy", 2),
    ("strlcpy", 2),
    ("strnlen", 1),
    ("snprintf", 1),
    ("scnprintf", 1),
    ("sg_init_one", 2),
    ("sg_set_buf", 2),
    ("skb_put", 1),
    ("skb_put_data", 2),
    ("skb_pull", 1),
    ("skb_push", 1),
    ("skb_copy_bits", 3),
    ("skb_copy_to_linear_data", 2),
    ("skb_copy_from_linear_data", 2),
    ("dma_map_single", 2),
    ("dma_sync_single_for_cpu", 2),
    ("dma_sync_single_for_device", 2),
    ("__block_write_begin", 2),
    ("block_write_begin", 2),
    ("copy_to_user", 2),
    ("copy_from_user", 2),
];

impl Finder<'_> {
    fn push(
        &mut self,
        kind: FaultKind,
        node_range: Range<usize>,
        template: Template,
        target: &str,
    ) {
        let line = self.file.line_of(node_range.start);
        self.out.push(Site {
            kind,
            entry: self.entry.clone(),
            source: self.source,
            line,
            range: node_range,
            template,
            target: target.split_whitespace().collect::<Vec<_>>().join(" "),
        });
    }

    fn body(&mut self, body: Node<'_>) {
        // Statement faults at the top of the body.
        let open = body.start_byte() + 1;
        let at = open..open;
        self.push(
            FaultKind::Bug,
            at.clone(),
            Template::Insert("BUG();"),
            "entry",
        );
        self.push(FaultKind::DivZero, at, Template::Insert(DIV0), "entry");
        // The stack overrun after the body's declarations: the stack
        // protector places arrays next to its canary, so the overrun
        // clobbers the canary and what lies above it (saved registers,
        // the return address), not the function's other locals, and the
        // body runs on to its epilogue, which checks the canary.
        // A preprocessor conditional is not the place: its directive must
        // start a line (fs/ext2's `#if (PAGE_SIZE >= 65536)` opens
        // ext2_rec_len_to_disk()), so the overrun goes before the first
        // statement after it.
        let mut c = body.walk();
        let first_stmt = body
            .named_children(&mut c)
            .find(|n| {
                n.kind() != "declaration"
                    && n.kind() != "comment"
                    && !n.kind().starts_with("preproc")
            })
            .map(|n| n.start_byte())
            .or_else(|| Some(body.end_byte().saturating_sub(1)))
            .filter(|&at| at > open);
        if let Some(at) = first_stmt {
            self.push(
                FaultKind::StackOverrun,
                at..at,
                Template::Insert(OVERRUN),
                "locals",
            );
        }
        self.walk(body);
    }

    fn walk(&mut self, node: Node<'_>) {
        self.visit(node);
        let mut cur = node.walk();
        for child in node.named_children(&mut cur) {
            self.walk(child);
        }
    }

    fn visit(&mut self, n: Node<'_>) {
        let text = self.file.node_text(n).to_string();
        match n.kind() {
            "field_expression" => self.field(n),
            "binary_expression" => {
                let op = n.child_by_field_name("operator").map(|o| o.kind());
                if matches!(op, Some("/") | Some("%")) {
                    if let Some(r) = n.child_by_field_name("right") {
                        if !in_constant_context(self.file, n) {
                            let t = self.file.node_text(r).to_string();
                            self.push(
                                FaultKind::DivZero,
                                r.byte_range(),
                                Template::Choose(ZERO),
                                &t,
                            );
                        }
                    }
                }
            }
            "return_statement" => {
                self.push(
                    FaultKind::Bug,
                    n.byte_range(),
                    Template::Before("BUG();"),
                    "return",
                );
                let mut c = n.walk();
                let value = n.named_children(&mut c).find(|x| x.kind() != "comment");
                if let (true, Some(v)) = (self.returns_value, value) {
                    let t = self.file.node_text(v).to_string();
                    self.push(FaultKind::CorruptRet, v.byte_range(), Template::Garbage, &t);
                }
            }
            "assignment_expression" => {
                let op = n.child_by_field_name("operator").map(|o| o.kind());
                let (Some(l), Some(r)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) else {
                    return;
                };
                let arrow = l.kind() == "field_expression"
                    && l.child_by_field_name("operator").map(|o| o.kind()) == Some("->");
                if op == Some("=") && arrow && !in_constant_context(self.file, n) {
                    let t = self.file.node_text(l).to_string();
                    self.push(
                        FaultKind::CorruptMember,
                        r.byte_range(),
                        Template::Garbage,
                        &t,
                    );
                }
            }
            "call_expression" => {
                let Some(f) = n.child_by_field_name("function") else {
                    return;
                };
                if f.kind() != "identifier" {
                    return;
                }
                let name = self.file.node_text(f);
                if let Some(&(_, i)) = LEN_ARGS.iter().find(|(h, _)| *h == name) {
                    let arg = n.child_by_field_name("arguments").and_then(|a| {
                        let mut c = a.walk();
                        let args: Vec<Node<'_>> = a
                            .named_children(&mut c)
                            .filter(|x| x.kind() != "comment")
                            .collect();
                        args.get(i).copied()
                    });
                    if let Some(a) = arg {
                        let t = format!("{name}: {}", self.file.node_text(a));
                        self.push(FaultKind::CorruptLen, a.byte_range(), Template::Garbage, &t);
                    }
                }
                if UNLOCKS.contains(&name) {
                    self.push(
                        FaultKind::MissingUnlock,
                        n.byte_range(),
                        Template::Skip,
                        &text,
                    );
                } else if LOCKS.contains(&name) {
                    self.push(FaultKind::ExtraLock, n.byte_range(), Template::Twice, &text);
                }
            }
            "for_statement" => self.for_loop(n),
            _ => {}
        }
    }

    fn field(&mut self, n: Node<'_>) {
        let Some(arg) = n.child_by_field_name("argument") else {
            return;
        };
        let is_arrow = n
            .child_by_field_name("operator")
            .map(|o| o.kind() == "->")
            .unwrap_or_else(|| self.file.node_text(n).contains("->"));
        if in_constant_context(self.file, n) {
            return;
        }
        let write = is_written(n);
        if is_arrow && arg.kind() == "identifier" {
            let a = self.file.node_text(arg).to_string();
            if let Some(at) = statement_before(self.file, n, &a) {
                self.push(
                    FaultKind::NullDeref,
                    at..at,
                    Template::AssignBefore("NULL"),
                    &a,
                );
                self.push(
                    FaultKind::CorruptPtr,
                    at..at,
                    Template::AssignBefore("(void *)0xdead4ead00000000UL"),
                    &a,
                );
                if write {
                    self.push(
                        FaultKind::WildWrite,
                        at..at,
                        Template::AssignBefore("(void *)((unsigned long)$ + 0x1000000UL)"),
                        &a,
                    );
                }
            }
        }
        if is_arrow && !write && value_context(n) {
            let t = self.file.node_text(n).to_string();
            self.push(
                FaultKind::CorruptField,
                n.byte_range(),
                Template::Garbage,
                &t,
            );
        }
    }

    fn for_loop(&mut self, n: Node<'_>) {
        let Some(cond) = n.child_by_field_name("condition") else {
            return;
        };
        if cond.kind() != "binary_expression" {
            return;
        }
        if cond.child_by_field_name("operator").map(|o| o.kind()) != Some("<") {
            return;
        }
        let (Some(var), Some(bound)) = (
            cond.child_by_field_name("left"),
            cond.child_by_field_name("right"),
        ) else {
            return;
        };
        if var.kind() != "identifier" {
            return;
        }
        let var = self.file.node_text(var).to_string();
        let Some(body) = n.child_by_field_name("body") else {
            return;
        };
        if writes_subscript(self.file, body, &var) {
            let t = self.file.node_text(cond).to_string();
            self.push(
                FaultKind::OffByOne,
                bound.byte_range(),
                Template::PlusOne,
                &t,
            );
        }
    }
}

/// Where a statement can be inserted ahead of the access `n` to `var`: the
/// start of the enclosing statement that sits directly in a block. None when
/// that statement declares `var` itself (it would be used before it exists).
fn statement_before(file: &ParsedFile, n: Node<'_>, var: &str) -> Option<usize> {
    let mut cur = n;
    loop {
        let p = cur.parent()?;
        // Statements sit in blocks, after `case X:` and after `label:`;
        // inserting there keeps the guard on the path of the access (before
        // a `case` label it would be dead code).
        let in_case = p.kind() == "case_statement"
            && p.child_by_field_name("value").map(|v| v.id()) != Some(cur.id());
        // A statement inside `#ifdef X ... #endif` sits in that branch: the
        // guard goes there too, never before the directive (a `#` must stay
        // first on its line).
        let in_branch = fgft_parse::walk::is_conditional_block(p.kind())
            && p.child_by_field_name("condition").map(|v| v.id()) != Some(cur.id())
            && p.child_by_field_name("name").map(|v| v.id()) != Some(cur.id());
        if p.kind() == "compound_statement"
            || in_case
            || in_branch
            || p.kind() == "labeled_statement"
        {
            break;
        }
        if p.kind() == "function_definition" {
            return None;
        }
        cur = p;
    }
    if cur.kind() == "declaration" {
        let mut stack = vec![cur];
        while let Some(x) = stack.pop() {
            if x.kind() == "init_declarator" || x.kind() == "pointer_declarator" {
                if let Some(d) = x.child_by_field_name("declarator") {
                    if d.kind() == "identifier" && file.node_text(d) == var {
                        return None;
                    }
                    stack.push(d);
                }
            } else if x.kind() == "identifier"
                && x.parent().map(|p| p.kind() == "declaration") == Some(true)
                && file.node_text(x) == var
            {
                return None;
            }
            let mut c = x.walk();
            for ch in x.named_children(&mut c) {
                if ch.kind() != "compound_statement" {
                    stack.push(ch);
                }
            }
        }
    }
    Some(cur.start_byte())
}

/// True when `n` is stored to (assignment target, ++/--, or its address taken
/// for a store we cannot see).
fn is_written(n: Node<'_>) -> bool {
    let Some(p) = n.parent() else { return false };
    match p.kind() {
        "assignment_expression" => p.child_by_field_name("left").map(|l| l.id()) == Some(n.id()),
        "update_expression" => true,
        _ => false,
    }
}

/// True inside sizeof/typeof/alignof/offsetof or an upper-case macro call
/// (ARRAY_SIZE, BUILD_BUG_ON, ...), where an expression must stay a constant
/// or keep its array type.
fn in_constant_context(file: &ParsedFile, n: Node<'_>) -> bool {
    let mut cur = n.parent();
    while let Some(p) = cur {
        match p.kind() {
            "sizeof_expression"
            | "alignof_expression"
            | "typeof_specifier"
            | "offsetof_expression"
            | "static_assert_declaration" => return true,
            "call_expression" => {
                if let Some(f) = p.child_by_field_name("function") {
                    let name = file.node_text(f);
                    if f.kind() == "identifier"
                        && name.chars().any(|c| c.is_ascii_uppercase())
                        && !name.chars().any(|c| c.is_ascii_lowercase())
                    {
                        return true;
                    }
                }
            }
            "function_definition" => return false,
            _ => {}
        }
        cur = p.parent();
    }
    false
}

/// A field read whose value is used directly (not an lvalue, address, array
/// decay into a macro, or a member of a further access).
fn value_context(n: Node<'_>) -> bool {
    let Some(p) = n.parent() else { return false };
    match p.kind() {
        "binary_expression"
        | "return_statement"
        | "init_declarator"
        | "if_statement"
        | "while_statement"
        | "conditional_expression" => true,
        "assignment_expression" => p.child_by_field_name("right").map(|r| r.id()) == Some(n.id()),
        "parenthesized_expression" => p
            .parent()
            .map(|g| g.kind() == "if_statement" || g.kind() == "while_statement")
            .unwrap_or(false),
        _ => false,
    }
}

fn writes_subscript(file: &ParsedFile, body: Node<'_>, var: &str) -> bool {
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if n.kind() == "subscript_expression" && is_written(n) {
            if let Some(idx) = n.child_by_field_name("index") {
                if file.node_text(idx).trim() == var {
                    return true;
                }
            }
        }
        let mut cur = n.walk();
        stack.extend(n.named_children(&mut cur));
    }
    false
}

/// SplitMix64: a tiny deterministic generator (stable across releases).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Picks variants deterministically: per entry point (sorted by name), kinds in
/// a seeded round-robin, a seeded site of each kind, never two overlapping
/// edits in one file.
pub fn select(sources: &[Source], sites: &[Site], opts: &Options) -> Vec<Variant> {
    let kinds: Vec<FaultKind> = if opts.kinds.is_empty() {
        FaultKind::ALL.to_vec()
    } else {
        opts.kinds.clone()
    };
    let mut by_entry: BTreeMap<&str, BTreeMap<FaultKind, Vec<&Site>>> = BTreeMap::new();
    for s in sites.iter().filter(|s| kinds.contains(&s.kind)) {
        by_entry
            .entry(&s.entry)
            .or_default()
            .entry(s.kind)
            .or_default()
            .push(s);
    }
    let mut rng = Rng(opts.seed);
    let mut taken: Vec<(usize, Range<usize>)> = Vec::new();
    let mut out = Vec::new();
    for (entry, mut pools) in by_entry {
        let mut order: Vec<FaultKind> = pools.keys().copied().collect();
        let start = rng.below(order.len().max(1));
        order.rotate_left(start);
        let mut picked = 0;
        'fill: while picked < opts.per_entry {
            let mut progressed = false;
            for k in &order {
                if picked >= opts.per_entry {
                    break 'fill;
                }
                let Some(pool) = pools.get_mut(k) else {
                    continue;
                };
                while !pool.is_empty() {
                    let i = rng.below(pool.len());
                    let s = pool.swap_remove(i);
                    if taken
                        .iter()
                        .any(|(src, r)| *src == s.source && edit::conflict(r, &s.range))
                    {
                        continue;
                    }
                    taken.push((s.source, s.range.clone()));
                    let id = out.len() as u32 + 1;
                    let file = sources[s.source].rel.clone();
                    let base = file
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    out.push(Variant {
                        id,
                        label: format!("{entry}/{}/{}@{base}:{}", s.kind, s.target, s.line),
                        kind: s.kind,
                        entry: entry.to_string(),
                        file,
                        line: s.line,
                        target: s.target.clone(),
                        site: s.clone(),
                    });
                    picked += 1;
                    progressed = true;
                    break;
                }
            }
            if !progressed {
                break;
            }
        }
    }
    out
}

/// Applies all variants; returns the edited text of every source (unchanged
/// sources included, in input order).
pub fn apply(sources: &[Source], variants: &[Variant]) -> Result<Vec<String>, InjectError> {
    let mut out = Vec::with_capacity(sources.len());
    for (si, src) in sources.iter().enumerate() {
        let text = &src.file.text;
        let mut edits = Edits::default();
        for v in variants.iter().filter(|v| v.site.source == si) {
            let r = &v.site.range;
            let rep = v.site.replacement(v.id, &text[r.clone()]);
            debug_assert!(!rep.contains('\n'), "a variant never adds a line");
            edits.replace(r.clone(), rep);
        }
        // Stricter than the applier: two insertions at one point conflict.
        if edits.first_conflict().is_some() {
            return Err(InjectError::Overlap(src.rel.clone()));
        }
        let s = edits
            .apply(text)
            .map_err(|_| InjectError::Overlap(src.rel.clone()))?;
        out.push(s);
    }
    Ok(out)
}

/// The C file that defines `fgft_inject_hit` for a native (non-fgft) build.
/// Under fgft the runtime module provides the same function.
pub fn native_support_c() -> &'static str {
    include_str!("fgft_inject.c")
}

#[cfg(test)]
mod tests;
