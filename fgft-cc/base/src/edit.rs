//! Byte-range edits over one text.
//!
//! Job: collect the changes fgft makes to one file's original text, check
//! that they do not conflict, and render the edited text.  Every change is an
//! [`Edit`] over a byte range of the original: a *replacement* (the range
//! becomes new text; an empty range is an *insertion*), a *wrap* (new text
//! before and after the range, the edits inside it kept) or a *template*
//! (new text interleaved with original sub-ranges, each rendered with the
//! edits inside it).
//!
//! Invariants:
//! - bytes outside every edited range are copied unchanged, so macros,
//!   comments and `#ifdef`s stay byte-identical;
//! - edits nest like the syntax they come from, or are disjoint; two edits
//!   that cross, an edit inside a replacement, and an edit outside the text
//!   are an [`Overlap`], never broken output; the same edit of a non-empty
//!   range twice is applied once;
//! - among edits that start at the same offset: wraps and templates (outer
//!   first: the longer range, then the lower `prio`) come before insertions,
//!   which come before replacements; insertions at one offset keep the order
//!   they were added in.
//!
//! Checks some users need on top (two insertions at one point, see
//! [`Edits::first_conflict`]; a crate's own rule such as "never add a line")
//! are layered on this type, not built into [`Edits::apply`].

use crate::Overlap;
use std::cmp::Reverse;
use std::ops::Range;

/// A piece of a template: new text, or an original range (with its edits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Src(Range<usize>),
}

/// What an edit puts in place of its range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `pre` + the range (with inner edits) + `post`.  An empty range is an
    /// insertion.
    Wrap { pre: String, post: String },
    /// The range replaced by the parts.  Without [`Part::Src`] parts this is
    /// a plain replacement, which no other edit may fall inside.
    Template(Vec<Part>),
}

/// One edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    /// Among wraps over the same range, lower is outer.
    pub prio: u32,
    pub kind: Kind,
}

impl Edit {
    pub fn wrap(
        range: Range<usize>,
        prio: u32,
        pre: impl Into<String>,
        post: impl Into<String>,
    ) -> Edit {
        Edit {
            range,
            prio,
            kind: Kind::Wrap {
                pre: pre.into(),
                post: post.into(),
            },
        }
    }

    pub fn insert(at: usize, prio: u32, text: impl Into<String>) -> Edit {
        Edit::wrap(at..at, prio, text, "")
    }

    pub fn replace(range: Range<usize>, text: impl Into<String>) -> Edit {
        Edit {
            range,
            prio: 0,
            kind: Kind::Template(vec![Part::Text(text.into())]),
        }
    }

    /// A replacement: a template that keeps nothing of the original.
    fn is_leaf(&self) -> bool {
        matches!(&self.kind, Kind::Template(p) if !p.iter().any(|p| matches!(p, Part::Src(_))))
    }

    /// The order among edits starting at one offset (see the module doc).
    fn rank(&self) -> u8 {
        if self.range.is_empty() {
            1
        } else if self.is_leaf() {
            2
        } else {
            0
        }
    }

    /// The text put in place of the range, original sub-ranges included.
    fn new_text(&self, text: &str) -> String {
        match &self.kind {
            Kind::Wrap { pre, post } => format!("{pre}{post}"),
            Kind::Template(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text(s) => s.as_str(),
                    Part::Src(r) => text.get(r.clone()).unwrap_or(""),
                })
                .collect(),
        }
    }
}

/// The edits of one text.
#[derive(Debug, Clone, Default)]
pub struct Edits {
    list: Vec<Edit>,
}

impl From<Vec<Edit>> for Edits {
    fn from(list: Vec<Edit>) -> Edits {
        Edits { list }
    }
}

/// Whether two edit ranges conflict: they share a byte, an insertion falls
/// strictly inside the other range, or both are insertions at one point
/// (whose order would be ambiguous).
pub fn conflict(a: &Range<usize>, b: &Range<usize>) -> bool {
    if a.is_empty() && b.is_empty() {
        return a.start == b.start;
    }
    a.start < b.end && b.start < a.end
}

fn contains(parent: &Range<usize>, child: &Range<usize>) -> bool {
    if child.is_empty() {
        parent.start <= child.start && child.start < parent.end
    } else {
        parent.start <= child.start && child.end <= parent.end
    }
}

struct Node<'e> {
    edit: &'e Edit,
    children: Vec<Node<'e>>,
}

impl Edits {
    pub fn push(&mut self, e: Edit) {
        self.list.push(e);
    }

    pub fn replace(&mut self, range: Range<usize>, text: impl Into<String>) {
        self.push(Edit::replace(range, text));
    }

    pub fn insert(&mut self, at: usize, text: impl Into<String>) {
        self.replace(at..at, text);
    }

    pub fn delete(&mut self, range: Range<usize>) {
        self.replace(range, "");
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Edit> {
        self.list.iter()
    }

    /// Whether some edit already covers bytes of `r` (insertions at the same
    /// point do not conflict).
    pub fn touches(&self, r: &Range<usize>) -> bool {
        self.list
            .iter()
            .any(|e| e.range.start < r.end && r.start < e.range.end)
    }

    /// The first pair of edits (in offset order) whose ranges [`conflict`],
    /// for users that refuse even two insertions at one point.
    pub fn first_conflict(&self) -> Option<Overlap> {
        let mut rs: Vec<&Range<usize>> = self.list.iter().map(|e| &e.range).collect();
        rs.sort_by_key(|r| (r.start, r.end));
        rs.windows(2)
            .find(|w| conflict(w[0], w[1]))
            .map(|w| Overlap {
                a: w[0].clone(),
                b: w[1].clone(),
            })
    }

    /// Applies the edits to `text`.
    pub fn apply(&self, text: &str) -> Result<String, Overlap> {
        self.apply_within(text, 0..text.len())
    }

    /// The edited text of `range` of `text` alone; every edit must lie
    /// inside `range`.
    pub fn apply_within(&self, text: &str, range: Range<usize>) -> Result<String, Overlap> {
        let roots = self.forest(text)?;
        let mut out = String::with_capacity(range.len() + range.len() / 4 + 64);
        let refs: Vec<&Node<'_>> = roots.iter().collect();
        render(text, range, &refs, &mut out)?;
        Ok(out)
    }

    /// The nesting forest of the edits, children in text order.
    fn forest(&self, text: &str) -> Result<Vec<Node<'_>>, Overlap> {
        fn close<'e>(stack: &mut Vec<Node<'e>>, roots: &mut Vec<Node<'e>>) {
            let done = stack.pop().expect("non-empty");
            match stack.last_mut() {
                Some(p) => p.children.push(done),
                None => roots.push(done),
            }
        }
        let mut list: Vec<&Edit> = self.list.iter().collect();
        for e in &list {
            if e.range.end > text.len() || e.range.start > e.range.end {
                return Err(Overlap {
                    a: e.range.clone(),
                    b: text.len()..text.len(),
                });
            }
        }
        list.sort_by_key(|e| (e.range.start, e.rank(), Reverse(e.range.end), e.prio));
        // The same change of a range made twice is one change (a `.c` file
        // that two units #include, `fs/minix/itree_common.c`, has its
        // functions once per unit); insertions are kept, as added.
        list.dedup_by(|a, b| !a.range.is_empty() && a == b);
        let mut roots: Vec<Node<'_>> = Vec::new();
        let mut stack: Vec<Node<'_>> = Vec::new();
        for e in list {
            while let Some(top) = stack.last() {
                if contains(&top.edit.range, &e.range) {
                    if top.edit.is_leaf() {
                        return Err(Overlap {
                            a: top.edit.range.clone(),
                            b: e.range.clone(),
                        });
                    }
                    break;
                }
                if e.range.start < top.edit.range.end {
                    return Err(Overlap {
                        a: top.edit.range.clone(),
                        b: e.range.clone(),
                    });
                }
                close(&mut stack, &mut roots);
            }
            stack.push(Node {
                edit: e,
                children: Vec::new(),
            });
        }
        while !stack.is_empty() {
            close(&mut stack, &mut roots);
        }
        Ok(roots)
    }

    /// A line-oriented account of the edits: what was deleted (line spans
    /// only, never the text), what was inserted or put in place of what (the
    /// new text, and for replacements the single identifier replaced).
    pub fn log(&self, text: &str) -> String {
        let mut list: Vec<&Edit> = self.list.iter().collect();
        list.sort_by_key(|e| (e.range.start, e.range.end));
        // Line starts, found once: each edit's line is a binary search, so
        // the log is linear in the text (plus n log n in the edits).
        let index = crate::LineIndex::new(text);
        let line = |b: usize| index.line(b);
        let mut out = String::new();
        for e in list {
            let new = e.new_text(text);
            let (a, b) = (
                line(e.range.start),
                line(e.range.end.max(e.range.start + 1) - 1),
            );
            if e.range.is_empty() {
                let n = new.lines().count();
                out.push_str(&format!("@{a}: insert {n} line(s)\n"));
                for l in new.lines() {
                    out.push_str(&format!("+ {l}\n"));
                }
            } else if let Kind::Wrap { pre, post } = &e.kind {
                // The range is kept: only what goes around it is new.
                out.push_str(&format!(
                    "@{a}-{b}: wrap in `{}` ... `{}`\n",
                    pre.replace('\n', "\\n"),
                    post.replace('\n', "\\n")
                ));
            } else if new.is_empty() {
                out.push_str(&format!("@{a}-{b}: delete\n"));
            } else {
                let old = &text[e.range.clone()];
                if old.len() <= 64 && crate::ident::is_word(old) {
                    out.push_str(&format!(
                        "@{a}: `{old}` -> `{}`\n",
                        new.replace('\n', "\\n")
                    ));
                } else {
                    out.push_str(&format!(
                        "@{a}-{b}: replace with {} line(s)\n",
                        new.lines().count()
                    ));
                    for l in new.lines() {
                        out.push_str(&format!("+ {l}\n"));
                    }
                }
            }
        }
        out
    }
}

/// Renders `range` of `text` with the edits of `nodes` (in text order).
fn render(
    text: &str,
    range: Range<usize>,
    nodes: &[&Node<'_>],
    out: &mut String,
) -> Result<(), Overlap> {
    let mut pos = range.start;
    for n in nodes {
        let r = &n.edit.range;
        if r.start < pos || r.end > range.end {
            return Err(Overlap {
                a: range.clone(),
                b: r.clone(),
            });
        }
        out.push_str(&text[pos..r.start]);
        let children: Vec<&Node<'_>> = n.children.iter().collect();
        match &n.edit.kind {
            Kind::Wrap { pre, post } => {
                out.push_str(pre);
                render(text, r.clone(), &children, out)?;
                out.push_str(post);
            }
            Kind::Template(parts) => {
                let mut used = vec![false; children.len()];
                for p in parts {
                    match p {
                        Part::Text(s) => out.push_str(s),
                        Part::Src(sr) => {
                            let mut inner = Vec::new();
                            for (k, c) in children.iter().enumerate() {
                                if contains(sr, &c.edit.range) {
                                    used[k] = true;
                                    inner.push(*c);
                                }
                            }
                            render(text, sr.clone(), &inner, out)?;
                        }
                    }
                }
                if let Some(k) = used.iter().position(|u| !u) {
                    return Err(Overlap {
                        a: r.clone(),
                        b: children[k].edit.range.clone(),
                    });
                }
            }
        }
        pos = r.end;
    }
    out.push_str(&text[pos..range.end]);
    Ok(())
}

/// Extends a deleted range over the blanks up to and including the end of
/// its last line, so a deleted item does not leave a blank line behind (only
/// when nothing but blanks follows on that line).
pub fn whole_lines(text: &str, r: Range<usize>) -> Range<usize> {
    let b = text.as_bytes();
    let mut end = r.end;
    while end < b.len() && (b[end] == b' ' || b[end] == b'\t') {
        end += 1;
    }
    if end < b.len() && b[end] == b'\n' {
        end += 1;
    } else {
        end = r.end;
    }
    r.start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ed(list: Vec<Edit>) -> Edits {
        Edits::from(list)
    }

    #[test]
    fn untouched_bytes_stay() {
        let t = "int a; /* c */\nint b;\n";
        let mut e = Edits::default();
        e.replace(4..5, "x");
        e.insert(0, "// head\n");
        e.insert(t.len(), "// tail\n");
        assert_eq!(
            e.apply(t).unwrap(),
            "// head\nint x; /* c */\nint b;\n// tail\n"
        );
    }

    #[test]
    fn crossing_replacements_are_refused() {
        let mut e = Edits::default();
        e.replace(0..5, "a");
        e.replace(3..8, "b");
        assert_eq!(e.apply("0123456789"), Err(Overlap { a: 0..5, b: 3..8 }));
    }

    #[test]
    fn same_range_replacements_are_refused() {
        let mut e = Edits::default();
        e.replace(2..4, "a");
        e.replace(2..4, "b");
        assert!(e.apply("0123456789").is_err());
    }

    #[test]
    fn nested_replacement_and_insertion_inside_are_refused() {
        let mut e = Edits::default();
        e.replace(0..6, "a");
        e.replace(2..3, "b");
        assert_eq!(e.apply("0123456789"), Err(Overlap { a: 0..6, b: 2..3 }));
        let mut e = Edits::default();
        e.delete(1..4);
        e.insert(2, "x");
        assert_eq!(e.apply("0123456789"), Err(Overlap { a: 1..4, b: 2..2 }));
    }

    #[test]
    fn insertions_at_the_ends_of_a_replacement_are_outside_it() {
        let mut e = Edits::default();
        e.insert(4, "E");
        e.replace(2..4, "r");
        e.insert(2, "S");
        assert_eq!(e.apply("012345").unwrap(), "01SrE45");
    }

    #[test]
    fn edits_outside_the_text_are_refused() {
        let mut e = Edits::default();
        e.insert(4, "x");
        assert_eq!(e.apply("abc"), Err(Overlap { a: 4..4, b: 3..3 }));
        let mut e = Edits::default();
        e.replace(2..5, "x");
        assert!(e.apply("abc").is_err());
    }

    #[test]
    fn same_point_inserts_keep_order() {
        let mut e = Edits::default();
        e.insert(2, "A");
        e.insert(2, "B");
        e.replace(2..3, "C");
        assert_eq!(e.apply("0123").unwrap(), "01ABC3");
        assert!(e.first_conflict().is_some());
    }

    #[test]
    fn the_same_change_twice_is_one_change() {
        let mut e = Edits::default();
        e.replace(1..3, "x");
        e.replace(1..3, "x");
        e.insert(3, "i");
        e.insert(3, "i");
        assert_eq!(e.apply("0123").unwrap(), "0xii3");
        e.replace(1..3, "y");
        assert!(e.apply("0123").is_err());
    }

    #[test]
    fn first_conflict_of_disjoint_edits_is_none() {
        let mut e = Edits::default();
        e.replace(0..2, "a");
        e.insert(2, "b");
        e.replace(2..4, "c");
        assert_eq!(e.first_conflict(), None);
        e.replace(3..5, "d");
        assert_eq!(e.first_conflict(), Some(Overlap { a: 2..4, b: 3..5 }));
    }

    #[test]
    fn conflict_rules() {
        assert!(conflict(&(0..3), &(2..5)));
        assert!(!conflict(&(0..3), &(3..5)));
        assert!(conflict(&(0..3), &(1..1)));
        assert!(!conflict(&(0..3), &(0..0)));
        assert!(!conflict(&(0..3), &(3..3)));
        assert!(conflict(&(2..2), &(2..2)));
        assert!(!conflict(&(2..2), &(3..3)));
    }

    #[test]
    fn apply_within_renders_only_the_range() {
        let t = "int f(void) { g(); }";
        let mut e = Edits::default();
        e.replace(4..5, "h");
        e.replace(14..15, "k");
        assert_eq!(e.apply_within(t, 4..20).unwrap(), "h(void) { k(); }");
        assert!(e.apply_within(t, 5..20).is_err());
        assert!(e.apply_within(t, 0..10).is_err());
    }

    #[test]
    fn nested_wraps_keep_text() {
        let t = "x = a->b->c;";
        let a = t.find('a').unwrap();
        let e = ed(vec![
            Edit::wrap(a..a + 1, 0, "H1(", ")"),
            Edit::wrap(a..a + 4, 0, "H2(", ")"),
        ]);
        assert_eq!(e.apply(t).unwrap(), "x = H2(H1(a)->b)->c;");
    }

    #[test]
    fn same_range_priority_and_insertions() {
        let t = "{ body }";
        let e = ed(vec![
            Edit::wrap(1..7, 1, " E(); {", "}"),
            Edit::insert(7, 2, " F();"),
            Edit::insert(7, 3, " G();"),
            Edit::wrap(2..6, 0, "<", ">"),
            Edit::wrap(2..6, 1, "[", "]"),
            Edit::insert(2, 0, "@"),
        ]);
        assert_eq!(e.apply(t).unwrap(), "{ E(); { <[@body]> } F(); G();}");
    }

    #[test]
    fn templates_move_ranges_with_their_edits() {
        let t = "f(p->x, q)";
        let e = ed(vec![
            Edit {
                range: 0..10,
                prio: 0,
                kind: Kind::Template(vec![
                    Part::Text("({ int a0 = (".into()),
                    Part::Src(2..6),
                    Part::Text("); H(".into()),
                    Part::Src(0..1),
                    Part::Text("(a0, ".into()),
                    Part::Src(8..9),
                    Part::Text(")); })".into()),
                ]),
            },
            Edit::wrap(2..3, 0, "J(", ")"),
        ]);
        assert_eq!(
            e.apply(t).unwrap(),
            "({ int a0 = (J(p)->x); H(f(a0, q)); })"
        );
    }

    #[test]
    fn templates_refuse_to_drop_inner_edits() {
        let t = "f(p->x, q)";
        let e = ed(vec![
            Edit {
                range: 0..10,
                prio: 0,
                kind: Kind::Template(vec![Part::Text("g(".into()), Part::Src(2..6)]),
            },
            Edit::wrap(8..9, 0, "J(", ")"),
        ]);
        assert_eq!(e.apply(t), Err(Overlap { a: 0..10, b: 8..9 }));
    }

    #[test]
    fn crossing_wraps_are_refused() {
        let e = ed(vec![
            Edit::wrap(0..3, 0, "(", ")"),
            Edit::wrap(2..5, 0, "[", "]"),
        ]);
        assert!(e.apply("abcdef").is_err());
    }

    #[test]
    fn log_names_lines_and_identifiers() {
        let t = "a;\nfoo();\nb;\n";
        let mut e = Edits::default();
        e.replace(3..6, "bar");
        e.delete(10..13);
        e.insert(0, "x\ny\n");
        assert_eq!(
            e.log(t),
            "@1: insert 2 line(s)\n+ x\n+ y\n@2: `foo` -> `bar`\n@3-3: delete\n"
        );
    }

    #[test]
    fn whole_line_deletion() {
        let t = "a;\nfoo();  \nb;\n";
        assert_eq!(whole_lines(t, 3..9), 3..12);
        assert_eq!(whole_lines("x y", 0..1), 0..1);
        assert_eq!(whole_lines("x  ", 0..1), 0..1);
        assert_eq!(whole_lines("x\n", 0..1), 0..2);
        assert_eq!(whole_lines("x", 1..1), 1..1);
    }
}
