//! Checks on the aspect file's bytes before the XML parser sees them.
//!
//! Job: refuse, with the exact place, what the XML parser would crash on or
//! report without a usable position:
//! - bytes XML does not allow (NUL and the other control characters);
//! - a document type declaration (`<!DOCTYPE ...>`, where entities live):
//!   the parser is run without DTD support and would say only "DTD
//!   detected" at 1:1;
//! - elements nested deeper than [`MAX_XML_DEPTH`]: the parser recurses
//!   once per open element and would overflow the stack.
//!
//! The scan follows XML's lexical structure (comments, CDATA, processing
//! instructions, quoted attribute values) only as far as needed to count
//! element depth; anything it does not understand is left for the parser,
//! which reports it with its own position.

use std::ops::Range;

/// How deeply elements may nest in an aspect file.  A real aspect nests
/// three levels (`<aspect>`, `<advice>`, `<pointcut>`); the limit only stops
/// the parser's recursion long before the stack does.
pub const MAX_XML_DEPTH: usize = 256;

/// A problem found by [`check`]: the byte range, message, label and notes.
#[derive(Debug)]
pub struct Found {
    pub range: Range<usize>,
    pub message: String,
    pub label: String,
    pub notes: Vec<String>,
}

/// The first byte XML forbids: every control character but tab, newline
/// and carriage return.
fn bad_char(text: &str) -> Option<Found> {
    let (at, c) = text
        .char_indices()
        .find(|&(_, c)| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'))?;
    let (what, label) = if c == '\0' {
        ("a NUL byte".to_string(), "NUL byte (0x00) here".to_string())
    } else {
        (
            format!("the control character U+{:04X}", c as u32),
            format!("control character 0x{:02X} here", c as u32),
        )
    };
    Some(Found {
        range: at..at + 1,
        message: format!("the aspect file holds {what}, which XML does not allow"),
        label,
        notes: vec![
            "an aspect file is XML text: remove the byte (was the file saved as UTF-16, \
             or is it binary?)"
                .into(),
        ],
    })
}

/// Index just past the first `pat` at or after `from`, or the end.
fn past(b: &[u8], from: usize, pat: &[u8]) -> usize {
    b.get(from..)
        .and_then(|r| r.windows(pat.len()).position(|w| w == pat))
        .map_or(b.len(), |k| from + k + pat.len())
}

/// End of a `<!DOCTYPE ...>` declaration starting at `at`: the `>` after
/// its internal subset `[...]`, if any (quotes respected).
fn doctype_end(b: &[u8], at: usize) -> usize {
    let mut quote = None;
    let mut bracket = false;
    let mut i = at + 2;
    while i < b.len() {
        match (quote, b[i]) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b[i]),
            (None, b'[') => bracket = true,
            (None, b']') => bracket = false,
            (None, b'>') if !bracket => return i + 1,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

fn doctype(text: &str, at: usize) -> Found {
    let end = doctype_end(text.as_bytes(), at);
    let decl = &text[at..end];
    let entities = decl.matches("<!ENTITY").count();
    let mut notes = vec![
        "remove the <!DOCTYPE ...> declaration: aspect files take no DTD".to_string(),
        "write the text itself instead of entities; escape `<` and `&` as `&lt;` and `&amp;`, \
         or put C code in <![CDATA[ ... ]]>"
            .to_string(),
    ];
    if entities > 0 {
        notes.insert(
            0,
            format!(
                "it declares {entities} entit{}",
                if entities == 1 { "y" } else { "ies" }
            ),
        );
    }
    Found {
        range: at..end,
        message: "the aspect file has a document type declaration (<!DOCTYPE>); \
                  DTDs and entity declarations are not supported"
            .into(),
        label: "DTD here".into(),
        notes,
    }
}

fn too_deep(at: usize, end: usize) -> Found {
    Found {
        range: at..end,
        message: format!("XML elements nest deeper than {MAX_XML_DEPTH} levels here"),
        label: format!("element at depth {}", MAX_XML_DEPTH + 1),
        notes: vec![format!(
            "an aspect nests <aspect>, <advice> and <pointcut> or a body: \
             fgft-cc reads at most {MAX_XML_DEPTH} levels; close the elements sooner"
        )],
    }
}

/// End of the start tag at `at` (just past `>`), quotes respected; an
/// attribute value stops at `<` as in the parser.  `None` when the tag is
/// cut short (the parser reports it).
fn tag_end(b: &[u8], at: usize) -> Option<usize> {
    let mut quote = None;
    let mut i = at + 1;
    while i < b.len() {
        match (quote, b[i]) {
            (_, b'<') => return None,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b[i]),
            (None, b'>') => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The first problem of the aspect text, if any.
pub fn check(text: &str) -> Option<Found> {
    if let Some(f) = bad_char(text) {
        return Some(f);
    }
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        if rest.starts_with(b"<!--") {
            i = past(b, i + 4, b"-->");
        } else if rest.starts_with(b"<![CDATA[") {
            i = past(b, i + 9, b"]]>");
        } else if rest.starts_with(b"<?") {
            i = past(b, i + 2, b"?>");
        } else if rest.starts_with(b"<!DOCTYPE") {
            return Some(doctype(text, i));
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            i = past(b, i + 2, b">");
        } else if !rest
            .get(1)
            .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_' || c >= 0x80)
        {
            // Not a tag: the parser stops here with its own message.
            return None;
        } else {
            let end = tag_end(b, i)?;
            if b[end - 2] != b'/' {
                depth += 1;
                if depth > MAX_XML_DEPTH {
                    return Some(too_deep(i, end));
                }
            }
            i = end;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_found_at_the_element() {
        let ok = format!("<a>{}{}</a>", "<b>".repeat(200), "</b>".repeat(200));
        assert!(check(&ok).is_none());
        let deep = format!(
            "<a>{}<!-- <c> --><![CDATA[<d>]]><e x='<'/>{}</a>",
            "<b>".repeat(300),
            "</b>".repeat(300)
        );
        let f = check(&deep).unwrap();
        assert_eq!(f.range.start, 3 + 3 * (MAX_XML_DEPTH - 1));
        assert!(f.message.contains("256"));
    }

    #[test]
    fn nul_and_doctype_are_placed() {
        let f = check("<a>\nx\0y</a>").unwrap();
        assert_eq!(f.range, 5..6);
        let t = "<?xml version=\"1.0\"?>\n<!DOCTYPE a [ <!ENTITY e \"x>\"> ]>\n<a>&e;</a>";
        let f = check(t).unwrap();
        assert_eq!(&t[f.range.clone()], "<!DOCTYPE a [ <!ENTITY e \"x>\"> ]>");
        assert!(f.notes[0].contains("1 entity"));
    }
}
