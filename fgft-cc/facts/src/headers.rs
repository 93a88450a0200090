//! Local headers (`#include "x.h"`), read once and parsed only when a
//! lookup may find something in them.
//!
//! Reading a header gives its local includes and an [`hdr::Index`] of the
//! names it may define (a token scan of its text, no tree-sitter).  A
//! [`LazyHeader`] is a layer of a [`FactSet`] that is parsed the first time a
//! lookup passes its index; [`HeaderCache`] shares them between files and
//! threads.  `fgft-cc roots` and `split` use them; the survey keeps its own
//! parsed view of a header ([`Cache`] and [`HeaderText`] are shared).
//!
//! Invariant: a lookup through a lazy layer finds exactly what it would find
//! in the header's eagerly parsed facts (the index over-approximates), so
//! roots are the same whichever headers get parsed.

use crate::hdr;
use crate::slots::{self, FactKey, FactSet, Facts, LazyFacts};
use fgft_base::includes;
use fgft_parse::{Options, ParsedFile};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// How deep local `#include "..."` chains are followed.
pub const HEADER_DEPTH: usize = 4;

/// How many headers a [`Cache`] holds before it starts over.
const CACHE_MAX: usize = 8192;

/// What is read of a header without parsing it.
#[derive(Debug)]
pub struct HeaderText {
    pub path: PathBuf,
    /// Names it may define.  An unreadable header (not text, over the byte
    /// budget) gets an empty index, so no lookup ever parses it.
    pub index: hdr::Index,
    /// Local headers it includes.
    pub includes: Vec<PathBuf>,
}

impl HeaderText {
    /// Reads and indexes the header at `path` (hint-rewritten as the parse
    /// would be).
    pub fn read(path: &Path, opts: &Options) -> HeaderText {
        let Some((text, hinted)) = read_hinted(path, opts) else {
            return HeaderText {
                path: path.to_path_buf(),
                index: hdr::Index::default(),
                includes: Vec::new(),
            };
        };
        HeaderText {
            path: path.to_path_buf(),
            index: hdr::index(&text, &hinted),
            includes: includes::local_includes(path, &text, &[]),
        }
    }
}

/// A header's text and its macro-hint rewrite (the text itself without
/// hints), or `None` when it cannot be read, is not text or is over the
/// byte budget.
pub fn read_hinted(path: &Path, opts: &Options) -> Option<(String, String)> {
    let bytes = std::fs::read(path).ok()?;
    let (text, _) = fgft_parse::decode(path, bytes).ok()?;
    if text.len() > opts.budget.max_bytes {
        return None;
    }
    let hinted = fgft_parse::directive_comments_blanked(match &opts.hints {
        Some(h) => h.rewrite(&text),
        None => text.clone(),
    });
    Some((text, hinted))
}

/// One value per header path, made once and shared between threads (a
/// worker that needs a header another one is making waits for it).  Past
/// `CACHE_MAX` paths it forgets them all: callers keep the `Arc`s they use.
pub struct Cache<T> {
    map: Mutex<HashMap<PathBuf, Arc<OnceLock<Arc<T>>>>>,
}

impl<T> Default for Cache<T> {
    fn default() -> Self {
        Cache {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Cache<T> {
    /// The value for `path`, made with `make` on first use.
    pub fn get(&self, path: &Path, make: impl FnOnce() -> T) -> Arc<T> {
        let cell = match self.map.lock() {
            Ok(mut m) => {
                if m.len() >= CACHE_MAX && !m.contains_key(path) {
                    m.clear();
                }
                m.entry(path.to_path_buf()).or_default().clone()
            }
            Err(_) => Arc::new(OnceLock::new()),
        };
        cell.get_or_init(|| Arc::new(make())).clone()
    }

    /// The values made so far.
    pub fn values(&self) -> Vec<Arc<T>> {
        match self.map.lock() {
            Ok(m) => m.values().filter_map(|c| c.get().cloned()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// The local headers a file includes (`roots`, [`fgft_base::includes::local_includes`]),
/// transitively (at most [`HEADER_DEPTH`] levels below it), each once, in
/// the order the fact layers are searched: `get` gives a header and
/// `includes` its own local includes.
pub fn closure<T>(
    roots: &[PathBuf],
    mut get: impl FnMut(&Path) -> Arc<T>,
    includes: impl Fn(&T) -> &[PathBuf],
) -> Vec<(PathBuf, Arc<T>)> {
    let mut seen = HashSet::new();
    let mut todo: Vec<(PathBuf, usize)> = roots.iter().map(|p| (p.clone(), 0)).collect();
    let mut out = Vec::new();
    while let Some((p, depth)) = todo.pop() {
        if depth > HEADER_DEPTH || !seen.insert(p.clone()) {
            continue;
        }
        let h = get(&p);
        todo.extend(includes(&h).iter().map(|q| (q.clone(), depth + 1)));
        out.push((p, h));
    }
    out
}

/// A header as a lazily parsed layer of type facts.
#[derive(Debug)]
pub struct LazyHeader {
    pub text: HeaderText,
    opts: Options,
    facts: OnceLock<Facts>,
}

impl LazyHeader {
    pub fn read(path: &Path, opts: &Options) -> LazyHeader {
        LazyHeader {
            text: HeaderText::read(path, opts),
            opts: opts.clone(),
            facts: OnceLock::new(),
        }
    }

    /// Whether it has been parsed.
    pub fn is_parsed(&self) -> bool {
        self.facts.get().is_some()
    }
}

impl LazyFacts for LazyHeader {
    fn may_have(&self, key: FactKey, name: &str) -> bool {
        self.text.index.may_have(key, name)
    }

    fn facts(&self) -> &Facts {
        // A header that does not parse contributes nothing.
        self.facts.get_or_init(|| {
            fgft_parse::parse_file_with(&self.text.path, &self.opts)
                .map(|pf| slots::facts_of(&pf))
                .unwrap_or_default()
        })
    }
}

/// Type facts of local headers, read once per path and parsed only when a
/// lookup needs them.
pub struct HeaderCache {
    opts: Options,
    cache: Cache<LazyHeader>,
}

impl HeaderCache {
    pub fn new(opts: &Options) -> HeaderCache {
        HeaderCache {
            opts: opts.clone(),
            cache: Cache::default(),
        }
    }

    /// Facts of `pf` layered over those of its local headers.
    pub fn facts_with_headers(&self, pf: &ParsedFile) -> FactSet {
        self.layer_headers(slots::facts_of(pf), pf)
    }

    /// `own` (the facts of `pf`, e.g. from a [`slots::Scan`]) layered over
    /// those of its local headers.
    pub fn layer_headers(&self, own: Facts, pf: &ParsedFile) -> FactSet {
        let mut facts = FactSet::from(own);
        let headers = closure(
            &includes::local_includes(&pf.path, &pf.text, &[]),
            |p| self.cache.get(p, || LazyHeader::read(p, &self.opts)),
            |h| &h.text.includes,
        );
        for (_, h) in headers {
            facts.push_lazy(h);
        }
        facts
    }

    /// Headers read and headers parsed so far.
    pub fn counts(&self) -> (usize, usize) {
        let v = self.cache.values();
        (v.len(), v.iter().filter(|h| h.is_parsed()).count())
    }
}
