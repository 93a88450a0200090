//! Line wrapping of generated C, kernel style: argument lists, expressions
//! and macro bodies are broken at 80 columns (checkpatch's hard limit is
//! 100), comments are refilled.

use fgft_base::ident;

/// The column generated lines are wrapped at.
pub const WRAP: usize = 80;

/// The longest line checkpatch accepts: what does not break well at 80
/// columns may run to here.
pub const HARD: usize = 100;

/// The display width of `s` (tabs to the next multiple of 8).
pub fn width(s: &str) -> usize {
    s.chars().fold(
        0usize,
        |w, c| if c == '\t' { (w / 8 + 1) * 8 } else { w + 1 },
    )
}

/// Byte offset of the `)` that closes the `(` at `open`, skipping string
/// and character literals.
fn close_of(s: &str, open: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the closing quote of the literal that starts at `i`.
fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut k = i + 1;
    while k < b.len() && b[k] != q {
        if b[k] == b'\\' {
            k += 1;
        }
        k += 1;
    }
    k.min(b.len().saturating_sub(1))
}

/// Where `text` is one call (`head(args)`, the head maybe `x = f`): the
/// offset of its argument list's `(`.
fn call_shape(text: &str) -> Option<usize> {
    let open = text.find('(')?;
    let before = text[..open].chars().next_back()?;
    if !ident::is_char(before) || text[..open].contains('"') {
        return None;
    }
    (close_of(text, open)? == text.len() - 1).then_some(open)
}

/// Wraps a C declaration, call or statement at 80 columns, kernel style: a
/// call on its argument list (continuation aligned after the opening
/// parenthesis when it fits, else two tabs deeper), anything else at its
/// top-level operators.
pub fn wrap_call(indent: usize, text: &str, suffix: &str) -> String {
    let tabs = "\t".repeat(indent);
    let line = format!("{tabs}{text}{suffix}");
    if width(&line) <= WRAP {
        return line;
    }
    match call_shape(text) {
        Some(open) => {
            let aligned = wrap_args(indent, text, open, suffix, true);
            if max_width(&aligned) <= WRAP {
                aligned
            } else {
                let deep = wrap_args(indent, text, open, suffix, false);
                if max_width(&deep) < max_width(&aligned) {
                    deep
                } else {
                    aligned
                }
            }
        }
        None => wrap_ops(indent, text, suffix),
    }
}

fn max_width(s: &str) -> usize {
    s.lines().map(width).max().unwrap_or(0)
}

/// A call broken on its arguments; an argument that does not fit on a
/// line of its own is broken at its operators.
fn wrap_args(indent: usize, text: &str, open: usize, suffix: &str, align: bool) -> String {
    let tabs = "\t".repeat(indent);
    let head = &text[..=open];
    let inner = &text[open + 1..text.len() - 1];
    let args = split_top(inner);
    let col = width(&format!("{tabs}{head}"));
    let cont = if align && col <= 48 {
        format!("{}{}", "\t".repeat(col / 8), " ".repeat(col % 8))
    } else {
        "\t".repeat(indent + 2)
    };
    let mut out = format!("{tabs}{head}");
    let mut cur_w = width(&out);
    for (i, a) in args.iter().enumerate() {
        let piece = if i + 1 == args.len() {
            format!("{a}){suffix}")
        } else {
            format!("{a},")
        };
        let need = usize::from(i > 0) + width(&piece);
        // The head alone is long: the arguments start on the next line.
        let first_breaks = i == 0 && cur_w + need > WRAP && width(&cont) < cur_w;
        if (i > 0 || first_breaks) && cur_w + need > WRAP {
            out.push('\n');
            out.push_str(&cont);
            cur_w = width(&cont);
            if cur_w + width(&piece) > HARD {
                // Too long even alone: break it at its operators, the
                // continuation one tab deeper.
                let deeper = "\t".repeat(width(&cont) / 8 + 1);
                let w = wrap_ops_at(&cont, &deeper, &piece, "");
                cur_w = w.lines().last().map(width).unwrap_or(0);
                out.push_str(&w[cont.len()..]);
                continue;
            }
            out.push_str(&piece);
            cur_w += width(&piece);
        } else {
            if i > 0 {
                out.push(' ');
                cur_w += 1;
            }
            out.push_str(&piece);
            cur_w += width(&piece);
        }
    }
    out
}

/// `text` broken after its top-level binary operators, continuation lines
/// two tabs deeper than `indent`.
fn wrap_ops(indent: usize, text: &str, suffix: &str) -> String {
    let tabs = "\t".repeat(indent);
    wrap_ops_at(&tabs, &"\t".repeat(indent + 2), text, suffix)
}

fn wrap_ops_at(first: &str, cont: &str, text: &str, suffix: &str) -> String {
    let pieces = split_ops(text);
    let mut out = first.to_string();
    let mut cur_w = width(&out);
    for (i, p) in pieces.iter().enumerate() {
        let piece = if i + 1 == pieces.len() {
            format!("{p}{suffix}")
        } else {
            p.clone()
        };
        let need = usize::from(i > 0) + width(&piece);
        if i > 0 && cur_w + need > WRAP {
            out.push('\n');
            out.push_str(cont);
            cur_w = width(cont);
        } else if i > 0 {
            out.push(' ');
            cur_w += 1;
        }
        if cur_w + width(&piece) > HARD {
            // One long operand (a chain of casts and members): broken
            // after a cast or an opening parenthesis.
            let w = break_operand(cur_w, cont, &piece);
            cur_w = w.lines().last().map(width).unwrap_or(0);
            out.push_str(&w);
            continue;
        }
        out.push_str(&piece);
        cur_w += width(&piece);
    }
    out
}

/// `piece`, starting at column `col`, broken after casts (`*)`) or opening
/// parentheses so that each line ends by column 100 where it can;
/// continuation lines start with `cont`.
fn break_operand(col: usize, cont: &str, piece: &str) -> String {
    let b = piece.as_bytes();
    let mut out = String::new();
    let mut start = 0;
    let mut col = col;
    loop {
        let rest = &piece[start..];
        if col + width(rest) <= HARD {
            out.push_str(rest);
            return out;
        }
        // The last break point that keeps the line within the limit.
        let mut cut = None;
        let mut i = start;
        while i < b.len() {
            match b[i] {
                b'"' | b'\'' => i = skip_literal(b, i),
                b'(' if i > start => {
                    if col + width(&piece[start..=i]) > HARD {
                        break;
                    }
                    cut = Some(i + 1);
                }
                b')' if i > start && b[i - 1] == b'*' => {
                    if col + width(&piece[start..=i]) > HARD {
                        break;
                    }
                    cut = Some(i + 1);
                }
                _ => {}
            }
            i += 1;
        }
        let Some(c) = cut.filter(|&c| c < b.len()) else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&piece[start..c]);
        out.push('\n');
        out.push_str(cont);
        col = width(cont);
        start = c;
    }
}

/// Pieces of `s` ending after each top-level binary operator (`a +`,
/// `b &&`, `x =`), the operators written with a space on each side.
fn split_ops(s: &str) -> Vec<String> {
    const OPS: [&str; 12] = [
        " = ", " + ", " - ", " * ", " / ", " && ", " || ", " ? ", " : ", " | ", " == ", " != ",
    ];
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b' ' if depth == 0 => {
                if let Some(op) = OPS.iter().find(|op| s[i..].starts_with(**op)) {
                    let end = i + op.len() - 1;
                    out.push(s[start..end].trim().to_string());
                    start = end + 1;
                    i = end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if start < s.len() {
        out.push(s[start..].trim().to_string());
    }
    out
}

fn split_top(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                out.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim().to_string());
    }
    out
}

/// Rewraps generated C: comments as [`wrap_comments`], then every code line
/// longer than 80 columns as [`wrap_call`] (function definitions and
/// statements alike), and `#define`s whose body does not fit with the body
/// on a continuation line.  Only whitespace changes.
pub fn tidy(text: &str) -> String {
    let text = wrap_comments(text);
    let mut out = String::with_capacity(text.len());
    let mut in_comment = false;
    let mut in_macro = false;
    for l in text.split_inclusive('\n') {
        let body = l.trim_end_matches('\n');
        let nl = if l.ends_with('\n') { "\n" } else { "" };
        let t = body.trim_start();
        let was_macro = in_macro;
        in_macro = body.ends_with('\\') && (was_macro || t.starts_with('#'));
        if in_comment {
            in_comment = !body.contains("*/");
            out.push_str(l);
            continue;
        }
        if t.starts_with("/*") && !body.contains("*/") {
            in_comment = true;
        }
        if width(body) <= WRAP
            || was_macro
            || body.ends_with('\\')
            || t.starts_with("/*")
            || t.starts_with("//")
            || t.starts_with('*')
            || body.contains("/*")
        {
            out.push_str(l);
            continue;
        }
        if let Some(def) = t.strip_prefix("#define ") {
            out.push_str(&wrap_define(def));
            out.push_str(nl);
            continue;
        }
        // Only whole statements and declarators: a line of a statement
        // already broken over several lines stays as it is.
        if t.starts_with('#') || !balanced(t) {
            out.push_str(l);
            continue;
        }
        let indent = body.len() - body.trim_start_matches('\t').len();
        let (stmt, suffix) = [";", " {", ",", ""]
            .iter()
            .find_map(|s| t.strip_suffix(s).map(|x| (x, *s)))
            .unwrap_or((t, ""));
        out.push_str(&wrap_call(indent, stmt, suffix));
        out.push_str(nl);
    }
    out
}

/// Whether the brackets of `s` (outside literals) pair up.
fn balanced(s: &str) -> bool {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
        i += 1;
    }
    depth == 0
}

/// `#define NAME(ARGS) BODY` with the body on a continuation line (and
/// wrapped there when it still does not fit).
fn wrap_define(def: &str) -> String {
    let name_end = def.find(|c: char| !ident::is_char(c)).unwrap_or(def.len());
    let head_end = if def[name_end..].starts_with('(') {
        close_of(def, name_end).map_or(name_end, |c| c + 1)
    } else {
        name_end
    };
    let body = def[head_end..].trim();
    if body.is_empty() {
        return format!("#define {def}");
    }
    let wrapped = wrap_call(1, body, "");
    format!(
        "#define {} \\\n{}",
        &def[..head_end],
        wrapped.replace('\n', " \\\n")
    )
}

/// Rewraps comments of generated C at 80 columns: a one-line `/* ... */`
/// that is too long becomes a block comment, and long ` * ` lines of block
/// comments are wrapped.
pub fn wrap_comments(text: &str) -> String {
    let fill = |lead: &str, words: &str, out: &mut String| {
        let mut line = lead.to_string();
        let mut empty = true;
        for w in words.split_whitespace() {
            if !empty && width(&line) + 1 + w.len() > WRAP {
                out.push_str(line.trim_end());
                out.push('\n');
                line = lead.to_string();
                empty = true;
            }
            if !empty {
                line.push(' ');
            }
            line.push_str(w);
            empty = false;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    let mut out = String::with_capacity(text.len());
    for l in text.split_inclusive('\n') {
        let body = l.trim_end_matches('\n');
        if width(body) <= WRAP {
            out.push_str(l);
            continue;
        }
        let indent: String = body.chars().take_while(|c| *c == '\t').collect();
        let rest = &body[indent.len()..];
        if let Some(inner) = rest.strip_prefix("/* ").and_then(|r| r.strip_suffix(" */")) {
            out.push_str(&format!("{indent}/*\n"));
            fill(&format!("{indent} * "), inner, &mut out);
            out.push_str(&format!("{indent} */"));
            if l.ends_with('\n') {
                out.push('\n');
            }
        } else if let Some(inner) = rest.strip_prefix(" * ") {
            fill(&format!("{indent} * "), inner, &mut out);
        } else {
            out.push_str(l);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_and_expressions_are_wrapped() {
        let d = tidy(
            "static int __maybe_unused fgft_copy_in_fields_e1000_get_regs_e1000_adapter(struct fgft_txn *txn, const void *ov, void *cv)\n{\n\t\tsize = FGFT_PRIV_OFFSET(o, netdev_priv(o)) + sizeof(struct e1000_adapter_with_a_long_name);\n}\n",
        );
        assert!(d.lines().all(|l| width(l) <= WRAP), "{d}");
        assert!(
            d.contains("(\n\t\tstruct fgft_txn *txn, const void *ov, void *cv)\n{"),
            "{d}"
        );
        assert!(d.contains(" +\n\t\t\t\tsizeof"), "{d}");
    }

    #[test]
    fn long_defines_continue_on_the_next_line() {
        let d = tidy(&format!("#define X(...) {}(__VA_ARGS__)\n", "f".repeat(55)));
        assert_eq!(
            d,
            format!("#define X(...) \\\n\t{}(__VA_ARGS__)\n", "f".repeat(55))
        );
    }

    #[test]
    fn strings_are_not_split() {
        let s = format!(
            "\tpr_info(\"{}, {}\", a, b);\n",
            "x".repeat(50),
            "y".repeat(40)
        );
        let d = tidy(&s);
        assert!(d.contains(&format!("\"{}, {}\"", "x".repeat(50), "y".repeat(40))));
    }
}
