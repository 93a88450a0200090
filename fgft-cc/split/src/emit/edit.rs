//! Byte-range edits over a file's original text.
//!
//! Every change fgft makes to a driver file is an [`Edit`]: replace the bytes
//! of a range (possibly empty: an insertion) with new text.  Bytes outside
//! the edited ranges are copied unchanged, so macros, comments and `#ifdef`s
//! stay byte-identical.

use std::ops::Range;

/// One edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub text: String,
}

/// The edits of one file.
#[derive(Debug, Clone, Default)]
pub struct Edits {
    list: Vec<Edit>,
}

/// Two edits touch the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub a: Range<usize>,
    pub b: Range<usize>,
}

impl Edits {
    pub fn replace(&mut self, range: Range<usize>, text: impl Into<String>) {
        self.list.push(Edit {
            range,
            text: text.into(),
        });
    }

    pub fn insert(&mut self, at: usize, text: impl Into<String>) {
        self.replace(at..at, text);
    }

    pub fn delete(&mut self, range: Range<usize>) {
        self.replace(range, "");
    }

    /// Whether some edit already covers bytes of `r` (insertions at the same
    /// point do not conflict).
    pub fn touches(&self, r: &Range<usize>) -> bool {
        self.list
            .iter()
            .any(|e| e.range.start < r.end && r.start < e.range.end)
    }

    /// Applies the edits to `text`.  Insertions at the same offset keep the
    /// order they were added in; overlapping replacements are an error.
    pub fn apply(&self, text: &str) -> Result<String, Overlap> {
        let mut list: Vec<(usize, &Edit)> = self.list.iter().enumerate().collect();
        list.sort_by(|(ia, a), (ib, b)| {
            (a.range.start, a.range.end != a.range.start, *ia).cmp(&(
                b.range.start,
                b.range.end != b.range.start,
                *ib,
            ))
        });
        let mut out = String::with_capacity(text.len() + 1024);
        let mut pos = 0usize;
        let mut last: Option<Range<usize>> = None;
        for (_, e) in list {
            let r = e.range.start.min(text.len())..e.range.end.min(text.len());
            if r.start < pos {
                return Err(Overlap {
                    a: last.unwrap_or(0..0),
                    b: r,
                });
            }
            out.push_str(&text[pos..r.start]);
            out.push_str(&e.text);
            pos = r.end;
            if r.start != r.end {
                last = Some(r);
            }
        }
        out.push_str(&text[pos..]);
        Ok(out)
    }
}

impl Edits {
    /// A line-oriented account of the edits, for `edits.txt`: what was
    /// deleted (line spans only, never the text), what was inserted or put
    /// in place of what (the generated text, and for replacements the
    /// single identifier replaced).
    pub fn log(&self, text: &str) -> String {
        let mut list: Vec<&Edit> = self.list.iter().collect();
        list.sort_by_key(|e| (e.range.start, e.range.end));
        let line = |b: usize| text[..b.min(text.len())].matches('\n').count() + 1;
        let mut out = String::new();
        for e in list {
            let (a, b) = (
                line(e.range.start),
                line(e.range.end.max(e.range.start + 1) - 1),
            );
            if e.range.is_empty() {
                let n = e.text.lines().count();
                out.push_str(&format!("@{a}: insert {n} line(s)\n"));
                for l in e.text.lines() {
                    out.push_str(&format!("+ {l}\n"));
                }
            } else if e.text.is_empty() {
                out.push_str(&format!("@{a}-{b}: delete\n"));
            } else {
                let old = &text[e.range.clone()];
                let ident = !old.is_empty()
                    && old.len() <= 64
                    && old.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric());
                if ident {
                    out.push_str(&format!(
                        "@{a}: `{old}` -> `{}`\n",
                        e.text.replace('\n', "\\n")
                    ));
                } else {
                    out.push_str(&format!(
                        "@{a}-{b}: replace with {} line(s)\n",
                        e.text.lines().count()
                    ));
                    for l in e.text.lines() {
                        out.push_str(&format!("+ {l}\n"));
                    }
                }
            }
        }
        out
    }
}

/// Extends a deleted range over the whitespace up to and including the end
/// of its last line, so a deleted item does not leave a blank line behind
/// (only when nothing but blanks follows on that line).
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
    fn overlaps_are_refused() {
        let mut e = Edits::default();
        e.replace(0..5, "a");
        e.replace(3..8, "b");
        assert!(e.apply("0123456789").is_err());
    }

    #[test]
    fn same_point_inserts_keep_order() {
        let mut e = Edits::default();
        e.insert(2, "A");
        e.insert(2, "B");
        e.replace(2..3, "C");
        assert_eq!(e.apply("0123").unwrap(), "01ABC3");
    }

    #[test]
    fn whole_line_deletion() {
        let t = "a;\nfoo();  \nb;\n";
        assert_eq!(whole_lines(t, 3..9), 3..12);
        assert_eq!(whole_lines("x y", 0..1), 0..1);
    }
}
