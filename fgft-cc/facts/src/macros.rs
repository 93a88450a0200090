//! Expansion of the driver's own function-like macros, for analysis only.
//!
//! Driver code hides field accesses and kernel calls in its macros
//! (`er32(STATUS)` reads `hw->hw_addr` and `hw->mac_type` and calls `readl`).
//! The analysis expands such a use one level (the walker expands nested uses
//! again), parses the expansion with tree-sitter and walks it in the scope of
//! the use.  Expansions never reach the output: the emitted C keeps the macro
//! use as written.

use fgft_base::ident;

/// A macro's parameter list as the expander needs it.
#[derive(Debug, Clone)]
pub struct MacroParams {
    pub names: Vec<String>,
    /// Name of the variadic parameter (`__VA_ARGS__` or the GNU `arg...` name).
    pub variadic: Option<String>,
}

impl MacroParams {
    /// From the parameter names tree-sitter gives (`...` marks variadics;
    /// `arg...` is GNU's named variadic).
    pub fn from_list(list: &[String], raw: &str) -> MacroParams {
        let mut names = Vec::new();
        let mut variadic = None;
        let compact: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
        for (i, p) in list.iter().enumerate() {
            if p == "..." {
                // GNU `name...`: the previous identifier directly precedes `...`.
                let named = i > 0 && compact.contains(&format!("{}...", list[i - 1]));
                if named {
                    let n = names.pop().unwrap_or_default();
                    variadic = Some(n);
                } else {
                    variadic = Some("__VA_ARGS__".to_string());
                }
            } else {
                names.push(p.clone());
            }
        }
        MacroParams { names, variadic }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok<'a> {
    Ident(&'a str),
    Other(&'a str),
    Space,
}

fn lex(s: &str) -> Vec<Tok<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            out.push(Tok::Space);
        } else if ident::is_start(c) {
            let st = i;
            i = ident::word_end(b, i);
            out.push(Tok::Ident(&s[st..i]));
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && (ident::is_byte(b[i]) || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok::Other(&s[st..i]));
        } else if c == b'"' || c == b'\'' {
            let st = i;
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(b.len());
            out.push(Tok::Other(&s[st..i]));
        } else if c == b'#' && b.get(i + 1) == Some(&b'#') {
            out.push(Tok::Other(&s[i..i + 2]));
            i += 2;
        } else {
            let st = i;
            // Keep multi-byte UTF-8 sequences whole.
            i += 1;
            while i < b.len() && !s.is_char_boundary(i) {
                i += 1;
            }
            out.push(Tok::Other(&s[st..i]));
        }
    }
    out
}

/// Expands one use of a function-like macro: `params` substituted by `args`
/// (their text as written), `#p` stringified, `a ## b` pasted, and GNU's
/// `, ## args` comma dropped when the variadic part is empty.
pub fn expand(params: &MacroParams, body: &str, args: &[String]) -> String {
    let mut map: Vec<(&str, String)> = Vec::new();
    for (i, n) in params.names.iter().enumerate() {
        map.push((n.as_str(), args.get(i).cloned().unwrap_or_default()));
    }
    let va = if args.len() > params.names.len() {
        args[params.names.len()..].join(", ")
    } else {
        String::new()
    };
    if let Some(v) = &params.variadic {
        map.push((v.as_str(), va.clone()));
    }
    let lookup = |s: &str| map.iter().find(|(n, _)| *n == s).map(|(_, a)| a.clone());
    let toks = lex(body);
    // Indices of non-space tokens.
    let sig: Vec<usize> = (0..toks.len()).filter(|&i| toks[i] != Tok::Space).collect();
    let mut out = String::new();
    let mut k = 0;
    while k < sig.len() {
        let i = sig[k];
        let t = &toks[i];
        let next = sig.get(k + 1).map(|&j| &toks[j]);
        // Whitespace between this token and the previous one, as written
        // (collapsed to one space); none around `##`.
        let spaced = i > 0 && toks[i - 1] == Tok::Space;
        let prev_paste = k > 0 && toks[sig[k - 1]] == Tok::Other("##");
        if spaced && !prev_paste && !out.is_empty() && t != &Tok::Other("##") {
            out.push(' ');
        }
        match t {
            Tok::Other("#") => {
                if let Some(Tok::Ident(n)) = next {
                    if let Some(a) = lookup(n) {
                        out.push('"');
                        out.push_str(&a.replace('\\', "\\\\").replace('"', "\\\""));
                        out.push('"');
                        k += 2;
                        continue;
                    }
                }
                out.push('#');
            }
            Tok::Other("##") => {
                // `, ## va`: drop the comma when the variadic part is empty.
                if let Some(Tok::Ident(n)) = next {
                    if Some(*n) == params.variadic.as_deref() && va.trim().is_empty() {
                        let trimmed = out.trim_end();
                        if let Some(stripped) = trimmed.strip_suffix(',') {
                            out = stripped.to_string();
                        }
                        k += 2;
                        continue;
                    }
                }
                while out.ends_with(' ') {
                    out.pop();
                }
            }
            Tok::Ident(n) => {
                let rep = lookup(n).unwrap_or_else(|| n.to_string());
                out.push_str(&rep);
            }
            Tok::Other(s) => out.push_str(s),
            Tok::Space => {}
        }
        k += 1;
    }
    out.trim().to_string()
}

/// Splits macro-call argument text at top-level commas.
pub fn split_args(text: &str) -> Vec<String> {
    let inner = text.trim();
    let inner = inner
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(inner);
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    let mut in_str: Option<char> = None;
    let mut esc = false;
    for c in inner.chars() {
        if let Some(q) = in_str {
            cur.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == q {
                in_str = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => {
                in_str = Some(c);
                cur.push(c);
            }
            '(' | '[' | '{' => {
                depth += 1;
                cur.push(c);
            }
            ')' | ']' | '}' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() || !out.is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Identifiers in a piece of C text (outside string literals).
pub fn identifiers(text: &str) -> Vec<&str> {
    lex(text)
        .into_iter()
        .filter_map(|t| match t {
            Tok::Ident(s) => Some(s),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(names: &[&str], raw: &str) -> MacroParams {
        MacroParams::from_list(
            &names.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            raw,
        )
    }

    #[test]
    fn pastes_and_substitutes() {
        let m = p(&["reg"], "(reg)");
        let e = expand(&m, "(readl(hw->hw_addr + E1000_##reg))", &["STATUS".into()]);
        assert_eq!(e, "(readl(hw->hw_addr + E1000_STATUS))");
    }

    #[test]
    fn pastes_onto_an_underscore_prefix() {
        let m = p(&["DEV", "FIELD"], "(DEV, FIELD)");
        let e = expand(
            &m,
            "atomic_long_read(&(DEV)->stats.__##FIELD)",
            &["dev".into(), "tx_errors".into()],
        );
        assert_eq!(e, "atomic_long_read(&(dev)->stats.__tx_errors)");
    }

    #[test]
    fn gnu_variadic_comma() {
        let m = p(
            &["msglvl", "format", "arg", "..."],
            "(msglvl, format, arg...)",
        );
        assert_eq!(m.variadic.as_deref(), Some("arg"));
        let e = expand(
            &m,
            "netdev_err(adapter->netdev, format, ## arg)",
            &["drv".into(), "\"x\"".into()],
        );
        assert_eq!(e, "netdev_err(adapter->netdev, \"x\")");
        let e = expand(
            &m,
            "netdev_err(adapter->netdev, format, ## arg)",
            &["drv".into(), "\"x %d\"".into(), "a".into()],
        );
        assert_eq!(e, "netdev_err(adapter->netdev, \"x %d\",a)");
    }

    #[test]
    fn args_split_at_top_level() {
        assert_eq!(
            split_args("(a, f(b, c), \"x,y\", d[1,2])"),
            vec!["a", "f(b, c)", "\"x,y\"", "d[1,2]"]
        );
        assert!(split_args("()").is_empty());
    }
}
