//! Conditional-compilation fallback.
//!
//! tree-sitter-c parses `#if` blocks only where they hold whole statements or
//! declarations.  Where a function does not parse because a conditional splits
//! a statement (`if (a)\n#ifdef X\n f();\n#else\n g();\n#endif`), the front end
//! tries two length-preserving variants of that function only: keep the first
//! branch, or keep the last one, blanking the directive lines and the other
//! branches (newlines stay).  A variant is kept for a function when it makes
//! the function parse cleanly.

use std::ops::Range;

/// One `#if ... #endif` group.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    /// Byte ranges of the directive lines (with continuations), in order.
    pub directives: Vec<Range<usize>>,
    /// Whole group, from the `#if` line start to the `#endif` line end.
    pub span: Range<usize>,
}

impl Group {
    /// Content between directive `k` and `k + 1`.
    fn branch(&self, k: usize) -> Range<usize> {
        self.directives[k].end..self.directives[k + 1].start
    }
}

/// Finds the conditional groups of `text` (directives inside block comments
/// are ignored).
pub(crate) fn groups(text: &str) -> Vec<Group> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut stack: Vec<Vec<Range<usize>>> = Vec::new();
    let mut in_comment = false;
    let mut i = 0;
    while i < b.len() {
        let line_end = memchr_nl(b, i);
        let line = &b[i..line_end];
        let first = line.iter().position(|c| !c.is_ascii_whitespace());
        let mut next = (line_end + 1).min(b.len());
        if !in_comment && first.is_some_and(|f| line[f] == b'#') {
            // Directive, with continuation lines.
            let mut end = line_end;
            while end > i && end < b.len() && ends_with_backslash(&b[i..end]) {
                end = memchr_nl(b, end + 1);
            }
            next = (end + 1).min(b.len());
            let word: Vec<u8> = line[first.unwrap_or(0) + 1..]
                .iter()
                .skip_while(|c| **c == b' ' || **c == b'\t')
                .take_while(|c| c.is_ascii_alphabetic())
                .copied()
                .collect();
            let r = i..end;
            match word.as_slice() {
                b"if" | b"ifdef" | b"ifndef" => stack.push(vec![r]),
                b"elif" | b"else" | b"elifdef" | b"elifndef" => {
                    if let Some(g) = stack.last_mut() {
                        g.push(r);
                    }
                }
                b"endif" => {
                    if let Some(mut g) = stack.pop() {
                        g.push(r);
                        let span = g[0].start..g[g.len() - 1].end;
                        out.push(Group {
                            directives: g,
                            span,
                        });
                    }
                }
                _ => {}
            }
            in_comment = comment_state(&b[i..end], false);
        } else {
            in_comment = comment_state(line, in_comment);
        }
        i = next;
        if line_end >= b.len() {
            break;
        }
    }
    out.sort_by_key(|g| g.span.start);
    out
}

/// The content of every branch of every `#if` group of `text` (between
/// one directive of the group and the next), nested groups' included.
pub fn branches(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for g in groups(text) {
        for k in 0..g.directives.len().saturating_sub(1) {
            out.push(g.branch(k));
        }
    }
    out
}

fn memchr_nl(b: &[u8], from: usize) -> usize {
    b[from.min(b.len())..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| from + p)
}

fn ends_with_backslash(line: &[u8]) -> bool {
    line.iter()
        .rev()
        .find(|c| **c != b'\r' && **c != b' ' && **c != b'\t')
        == Some(&b'\\')
}

/// Whether a block comment is open at the end of `line`, given whether
/// one was open at its start (string literals and `//` comments respected).
pub fn comment_state(line: &[u8], mut open: bool) -> bool {
    let mut k = 0;
    while k + 1 < line.len() {
        if open {
            if line[k] == b'*' && line[k + 1] == b'/' {
                open = false;
                k += 2;
                continue;
            }
        } else if line[k] == b'/' && line[k + 1] == b'/' {
            return false;
        } else if line[k] == b'/' && line[k + 1] == b'*' {
            open = true;
            k += 2;
            continue;
        } else if line[k] == b'"' {
            // Skip a string literal on this line.
            k += 1;
            while k < line.len() && line[k] != b'"' {
                if line[k] == b'\\' {
                    k += 1;
                }
                k += 1;
            }
        }
        k += 1;
    }
    open
}

fn blank(out: &mut [u8], r: Range<usize>) {
    for c in &mut out[r] {
        if *c != b'\n' && *c != b'\r' {
            *c = b' ';
        }
    }
}

/// Applies a variant to every group inside `region`: directive lines blanked,
/// and all branches but the first (`keep_first`) or the last blanked.
pub(crate) fn apply(out: &mut [u8], groups: &[Group], region: &Range<usize>, keep_first: bool) {
    for g in groups {
        if g.span.start < region.start || g.span.end > region.end {
            continue;
        }
        let nb = g.directives.len() - 1;
        // `#if 0` is never compiled (ns83820's `.suspend = ,` stubs): its
        // first branch is blanked in both variants, the next one kept.
        let never = if_zero(&out[g.directives[0].clone()]);
        for k in 0..nb {
            let keep = if never {
                k == 1
            } else if keep_first {
                k == 0
            } else {
                k == nb - 1
            };
            if !keep {
                blank(out, g.branch(k));
            }
        }
        for d in &g.directives {
            blank(out, d.clone());
        }
    }
}

/// Whether directive line `d` is `#if 0` (a comment may follow).
pub(crate) fn if_zero(d: &[u8]) -> bool {
    let s = String::from_utf8_lossy(d);
    let rest = s.trim_start().trim_start_matches('#').trim_start();
    let Some(rest) = rest.strip_prefix("if") else {
        return false;
    };
    if !rest.starts_with([' ', '\t']) {
        return false;
    }
    let rest = rest.trim_start();
    let Some(after) = rest.strip_prefix('0') else {
        return false;
    };
    let after = after.trim_start();
    after.is_empty() || after.starts_with("/*") || after.starts_with("//")
}

/// `region` extended to the end of every group that starts inside it.
pub(crate) fn cover_groups(groups: &[Group], region: Range<usize>) -> Range<usize> {
    let mut end = region.end;
    for g in groups {
        if g.span.start >= region.start && g.span.start < end {
            end = end.max(g.span.end);
        }
    }
    region.start..end
}

/// Whether any group lies inside `region`.
pub(crate) fn any_inside(groups: &[Group], region: &Range<usize>) -> bool {
    groups
        .iter()
        .any(|g| g.span.start >= region.start && g.span.end <= region.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_groups_and_variants() {
        let t = "a\n#ifdef X\nb\n#else\nc\n#endif\n/*\n#if 0\n*/\n#if A && \\\n B\nd\n#endif\n";
        let g = groups(t);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].directives.len(), 3);
        assert_eq!(&t[g[1].directives[0].clone()], "#if A && \\\n B");
        let mut first = t.as_bytes().to_vec();
        apply(&mut first, &g, &(0..t.len()), true);
        let first = String::from_utf8(first).unwrap();
        assert_eq!(first.len(), t.len());
        assert!(
            first.contains("\nb\n")
                && !first.contains("\nc\n")
                && !first.contains("#ifdef")
                && first.contains("#if 0")
        );
        let z = "#if 0 /* FIXME */\n.a = ,\n#else\nk\n#endif\n";
        let mut v = z.as_bytes().to_vec();
        apply(&mut v, &groups(z), &(0..z.len()), true);
        let v = String::from_utf8(v).unwrap();
        assert!(!v.contains(".a") && v.contains("\nk\n"), "{v}");
        assert!(!if_zero(b"#if 01") && !if_zero(b"#ifdef 0") && if_zero(b"# if 0"));
        let mut last = t.as_bytes().to_vec();
        apply(&mut last, &g, &(0..t.len()), false);
        let last = String::from_utf8(last).unwrap();
        assert!(!last.contains("\nb\n") && last.contains("\nc\n") && last.contains("\nd\n"));
    }
}
