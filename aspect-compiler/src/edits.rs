//! Byte-range edits over one file's text.
//!
//! Every change to a driver file is an edit over a byte range of the original;
//! text outside the edits is copied byte for byte.  Edits nest like the syntax
//! tree they come from: a wrap around an expression may hold wraps around its
//! sub-expressions, and a template may move original sub-ranges (each of
//! which is rendered with the edits inside it).

use std::ops::Range;

/// A piece of a template: new text, or an original range (with its edits).
#[derive(Debug, Clone)]
pub enum Part {
    Text(String),
    Src(Range<usize>),
}

#[derive(Debug, Clone)]
pub enum Kind {
    /// `pre` + the range (with inner edits) + `post`.  An empty range is an
    /// insertion.
    Wrap { pre: String, post: String },
    /// The range replaced by the parts.
    Template(Vec<Part>),
}

#[derive(Debug, Clone)]
pub struct Edit {
    pub range: Range<usize>,
    /// Among edits over the same range, lower is outer.
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
}

fn contains(parent: &Range<usize>, child: &Range<usize>) -> bool {
    if child.is_empty() {
        parent.start <= child.start && child.start < parent.end
    } else {
        parent.start <= child.start && child.end <= parent.end
    }
}

struct NodeE {
    edit: Edit,
    children: Vec<NodeE>,
}

/// Applies `edits` to `text`.  Edits that cross without nesting are an error
/// (a bug of the caller, reported instead of producing broken output).
pub fn apply(text: &str, mut edits: Vec<Edit>) -> Result<String, String> {
    edits.sort_by(|a, b| {
        a.range
            .start
            .cmp(&b.range.start)
            .then(b.range.end.cmp(&a.range.end))
            .then(a.prio.cmp(&b.prio))
    });
    for e in &edits {
        if e.range.end > text.len() || e.range.start > e.range.end {
            return Err(format!("edit {:?} is outside the text", e.range));
        }
    }
    // Build the nesting forest with a stack of open edits.
    let mut roots: Vec<NodeE> = Vec::new();
    let mut stack: Vec<NodeE> = Vec::new();
    for e in edits {
        while let Some(top) = stack.last() {
            if contains(&top.edit.range, &e.range) {
                break;
            }
            if !e.range.is_empty() && e.range.start < top.edit.range.end {
                return Err(format!(
                    "edits {:?} and {:?} overlap without nesting",
                    top.edit.range, e.range
                ));
            }
            let done = stack.pop().expect("non-empty");
            match stack.last_mut() {
                Some(p) => p.children.push(done),
                None => roots.push(done),
            }
        }
        stack.push(NodeE {
            edit: e,
            children: Vec::new(),
        });
    }
    while let Some(done) = stack.pop() {
        match stack.last_mut() {
            Some(p) => p.children.push(done),
            None => roots.push(done),
        }
    }
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let refs: Vec<&NodeE> = roots.iter().collect();
    render(text, 0..text.len(), &refs, &mut out)?;
    Ok(out)
}

fn render(
    text: &str,
    range: Range<usize>,
    nodes: &[&NodeE],
    out: &mut String,
) -> Result<(), String> {
    let mut pos = range.start;
    for n in nodes {
        if n.edit.range.start < pos {
            return Err(format!(
                "edit {:?} starts inside an earlier one",
                n.edit.range
            ));
        }
        out.push_str(&text[pos..n.edit.range.start]);
        let children: Vec<&NodeE> = n.children.iter().collect();
        match &n.edit.kind {
            Kind::Wrap { pre, post } => {
                out.push_str(pre);
                render(text, n.edit.range.clone(), &children, out)?;
                out.push_str(post);
            }
            Kind::Template(parts) => {
                let mut used = 0;
                for p in parts {
                    match p {
                        Part::Text(s) => out.push_str(s),
                        Part::Src(r) => {
                            let inner: Vec<&NodeE> = children
                                .iter()
                                .copied()
                                .filter(|c| contains(r, &c.edit.range))
                                .collect();
                            used += inner.len();
                            render(text, r.clone(), &inner, out)?;
                        }
                    }
                }
                if used != children.len() {
                    return Err(format!(
                        "a template over {:?} drops edits inside it",
                        n.edit.range
                    ));
                }
            }
        }
        pos = n.edit.range.end;
    }
    out.push_str(&text[pos..range.end]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_wraps_keep_text() {
        let t = "x = a->b->c;";
        let a = t.find('a').unwrap();
        let e = vec![
            Edit::wrap(a..a + 1, 0, "H1(", ")"),
            Edit::wrap(a..a + 4, 0, "H2(", ")"),
        ];
        assert_eq!(apply(t, e).unwrap(), "x = H2(H1(a)->b)->c;");
    }

    #[test]
    fn same_range_priority_and_insertions() {
        let t = "{ body }";
        let e = vec![
            Edit::wrap(1..7, 1, " E(); {", "}"),
            Edit::insert(7, 2, " F();"),
            Edit::insert(7, 3, " G();"),
            Edit::wrap(2..6, 0, "<", ">"),
            Edit::wrap(2..6, 1, "[", "]"),
        ];
        assert_eq!(apply(t, e).unwrap(), "{ E(); { <[body]> } F(); G();}");
    }

    #[test]
    fn templates_move_ranges_with_their_edits() {
        let t = "f(p->x, q)";
        let e = vec![
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
        ];
        assert_eq!(
            apply(t, e).unwrap(),
            "({ int a0 = (J(p)->x); H(f(a0, q)); })"
        );
    }

    #[test]
    fn crossing_edits_are_refused() {
        let t = "abcdef";
        assert!(apply(
            t,
            vec![Edit::wrap(0..3, 0, "(", ")"), Edit::wrap(2..5, 0, "[", "]")]
        )
        .is_err());
    }
}
