//! The aspect file: the XML form of the KLAS seed, read with roxmltree keeping
//! byte positions for diagnostics.
//!
//! ```xml
//! <aspect name="sktrace" records="4096">
//!   <import>linux/skbuff.h</import>
//!   <advice name="trace" enabled="false">
//!     <pointcut>access(sk_buff.%) AND target(arg0)</pointcut>
//!     <before>...C code...</before>
//!     <after>...C code...</after>
//!     <after-returning returning="ret">...C code...</after-returning>
//!   </advice>
//! </aspect>
//! ```

use crate::pointcut::{self, Expr};
use crate::textmap::{self, Mapped};
use crate::Diag;
use fgft_base::ident;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default size of the record ring (entries).
pub const DEFAULT_RECORDS: usize = 4096;

/// A parsed aspect.
#[derive(Debug)]
pub struct Aspect {
    pub path: PathBuf,
    pub text: Arc<str>,
    /// C identifier naming the aspect (generated symbols, debugfs directory).
    pub name: String,
    pub imports: Vec<Import>,
    pub advices: Vec<Advice>,
    /// Entries in the record ring (`FGFT_RECORD`), a power of two.
    pub records: usize,
}

/// `<import>header</import>`.
#[derive(Debug, Clone)]
pub struct Import {
    /// As written: `linux/skbuff.h`, `<linux/skbuff.h>` or `"e1000.h"`.
    pub header: String,
    pub range: Range<usize>,
}

/// Which advice body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BodyKind {
    Before,
    After,
    AfterReturning,
}

impl BodyKind {
    pub fn tag(self) -> &'static str {
        match self {
            BodyKind::Before => "before",
            BodyKind::After => "after",
            BodyKind::AfterReturning => "after-returning",
        }
    }

    /// Suffix of generated names.
    pub fn ident(self) -> &'static str {
        match self {
            BodyKind::Before => "before",
            BodyKind::After => "after",
            BodyKind::AfterReturning => "ret",
        }
    }
}

/// One advice body.
#[derive(Debug, Clone)]
pub struct Body {
    pub kind: BodyKind,
    /// The C code, decoded, with positions in the aspect file.
    pub code: Mapped,
    /// Name of the return value for after-returning advice.
    pub returning: Option<String>,
    /// The element's range.
    pub range: Range<usize>,
}

/// `<advice>`.
#[derive(Debug, Clone)]
pub struct Advice {
    pub name: String,
    /// Range of the start tag (for diagnostics about the advice as a whole).
    pub range: Range<usize>,
    /// Initial state of the run-time switch.
    pub enabled: bool,
    /// `weave="false"` leaves the advice out of the build.
    pub weave: bool,
    pub pointcut: Expr,
    pub pointcut_range: Range<usize>,
    pub bodies: Vec<Body>,
}

struct Ctx<'a> {
    path: &'a Path,
    text: &'a Arc<str>,
    diags: Vec<Diag>,
}

impl Ctx<'_> {
    fn error(
        &mut self,
        range: Range<usize>,
        msg: impl Into<String>,
        label: impl Into<String>,
    ) -> &mut Diag {
        self.diags
            .push(Diag::error(self.path, self.text, range, msg, label));
        self.diags.last_mut().expect("just pushed")
    }
}

/// End of the start tag of the element starting at `start` (just past `>`).
fn start_tag_end(text: &str, start: usize, end: usize) -> usize {
    let b = text.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = start;
    while i < end {
        match (quote, b[i]) {
            (Some(q), c) if c == q => quote = None,
            (None, b'"') | (None, b'\'') => quote = Some(b[i]),
            (None, b'>') => return i + 1,
            _ => {}
        }
        i += 1;
    }
    end
}

/// Raw range of an element's content (between its tags).
fn content_range(text: &str, node: roxmltree::Node<'_, '_>) -> Range<usize> {
    let r = node.range();
    let s = start_tag_end(text, r.start, r.end);
    if text[..s].ends_with("/>") {
        return s..s;
    }
    let e = text[s..r.end].rfind("</").map(|k| s + k).unwrap_or(r.end);
    s..e
}

fn start_tag_range(text: &str, node: roxmltree::Node<'_, '_>) -> Range<usize> {
    let r = node.range();
    r.start..start_tag_end(text, r.start, r.end)
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn attr_range(a: &roxmltree::Attribute<'_, '_>) -> Range<usize> {
    a.range_value()
}

/// Parser errors without a position of their own (roxmltree says 1:1).
fn positionless(e: &roxmltree::Error) -> bool {
    matches!(
        e,
        roxmltree::Error::UnclosedRootNode
            | roxmltree::Error::UnexpectedEndOfStream
            | roxmltree::Error::NoRootNode
    )
}

/// An aspect file that is not UTF-8: located at the first bad byte (the text
/// before it is shown as it is).
fn not_utf8(path: &Path, e: std::string::FromUtf8Error) -> Diag {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.into_bytes();
    let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes).as_ref());
    // The lossy text keeps the valid prefix byte for byte.
    let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
    Diag::error(
        path,
        &text,
        at..end,
        format!(
            "the aspect file is not UTF-8 text: byte 0x{:02X} is not valid UTF-8",
            bytes[at]
        ),
        "invalid UTF-8 here",
    )
    .note("save the aspect file as UTF-8 (was it saved as UTF-16 or Latin-1, or is it binary?)")
}

impl Aspect {
    /// Reads an aspect file.
    pub fn load(path: &Path) -> Result<Aspect, crate::AspectError> {
        let bytes = std::fs::read(path).map_err(|e| crate::AspectError::io(path, e))?;
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => return Err(crate::AspectError::Diagnostics(vec![not_utf8(path, e)])),
        };
        Aspect::parse(path, &text).map_err(crate::AspectError::Diagnostics)
    }

    /// Parses aspect text; every problem is a located diagnostic.
    pub fn parse(path: &Path, text: &str) -> Result<Aspect, Vec<Diag>> {
        let text: Arc<str> = Arc::from(text);
        let mut cx = Ctx {
            path,
            text: &text,
            diags: Vec::new(),
        };
        let opts = roxmltree::ParsingOptions {
            allow_dtd: false,
            ..Default::default()
        };
        if let Some(f) = crate::xmlcheck::check(&text) {
            let d = cx.error(f.range, f.message, f.label);
            d.notes.extend(f.notes);
            return Err(cx.diags);
        }
        let doc = match roxmltree::Document::parse_with_options(&text, opts) {
            Ok(d) => d,
            Err(e) if positionless(&e) => {
                // Errors the parser places at 1:1: at the end of the file.
                let end = text.trim_end().len();
                let start = text[..end].char_indices().next_back().map_or(0, |(k, _)| k);
                let d = cx.error(
                    start..end,
                    format!("malformed XML: {e}"),
                    "the file ends here",
                );
                d.notes.push(
                    "every element must be closed: the file needs one <aspect> ... </aspect>"
                        .into(),
                );
                return Err(cx.diags);
            }
            Err(e) => {
                let pos = e.pos();
                let ls = textmap::line_start(&text, pos.row as usize);
                let off = text[ls..]
                    .char_indices()
                    .nth((pos.col as usize).saturating_sub(1))
                    .map(|(k, _)| ls + k)
                    .unwrap_or(text.len());
                let end = text[off..]
                    .chars()
                    .next()
                    .map(|c| off + c.len_utf8())
                    .unwrap_or(off);
                let d = cx.error(
                    off..end,
                    format!("malformed XML: {e}"),
                    "the XML parser stopped here",
                );
                d.notes.push(
                    "C code with `<` or `&` must be escaped (`&lt;`, `&amp;`) or put in <![CDATA[ ... ]]>".into(),
                );
                return Err(cx.diags);
            }
        };
        let root = doc.root_element();
        if root.tag_name().name() != "aspect" {
            cx.error(
                start_tag_range(&text, root),
                format!(
                    "the root element is <{}>, expected <aspect>",
                    root.tag_name().name()
                ),
                "expected <aspect>",
            );
            return Err(cx.diags);
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("aspect");
        let mut name = ident::c_ident_from(stem);
        let mut records = DEFAULT_RECORDS;
        for a in root.attributes() {
            match a.name() {
                "name" => {
                    if ident::is_ident(a.value()) {
                        name = a.value().to_string();
                    } else {
                        cx.error(
                            attr_range(&a),
                            format!("aspect name `{}` is not a C identifier", a.value()),
                            "expected a C identifier",
                        );
                    }
                }
                "records" => match a.value().trim().parse::<usize>() {
                    Ok(n) if n.is_power_of_two() && (16..=1 << 20).contains(&n) => records = n,
                    _ => {
                        cx.error(
                            attr_range(&a),
                            "`records` must be a power of two between 16 and 1048576",
                            "bad ring size",
                        );
                    }
                },
                other => {
                    cx.error(
                        a.range(),
                        format!("unknown attribute `{other}` on <aspect>"),
                        "not an <aspect> attribute",
                    )
                    .notes
                    .push("<aspect> takes `name` and `records`".into());
                }
            }
        }
        let mut imports = Vec::new();
        let mut advices: Vec<Advice> = Vec::new();
        for child in root.children() {
            if child.is_text() {
                if !child.text().unwrap_or("").trim().is_empty() {
                    let r = child.range();
                    cx.error(
                        r,
                        "text outside any element in <aspect>",
                        "expected <import> or <advice>",
                    );
                }
                continue;
            }
            if !child.is_element() {
                continue;
            }
            match child.tag_name().name() {
                "import" => {
                    let cr = content_range(&text, child);
                    let m = textmap::decode(&text, cr.clone());
                    let h = m.text.trim();
                    if h.is_empty() || h.contains(char::is_whitespace) {
                        cx.error(
                            start_tag_range(&text, child),
                            "<import> needs one header name",
                            "e.g. <import>linux/skbuff.h</import>",
                        );
                    } else {
                        let lead = m.text.len() - m.text.trim_start().len();
                        imports.push(Import {
                            header: h.to_string(),
                            range: m.raw_range(lead..lead + h.len()),
                        });
                    }
                }
                "advice" => {
                    if let Some(a) = parse_advice(&mut cx, child, advices.len()) {
                        if let Some(prev) = advices.iter().find(|p| p.name == a.name) {
                            let pr = prev.range.clone();
                            let line = textmap::line_of(&text, pr.start);
                            cx.error(
                                a.range.clone(),
                                format!("two advices are named `{}`", a.name),
                                "duplicate name",
                            )
                            .notes
                            .push(format!("the first one is on line {line}"));
                        } else {
                            advices.push(a);
                        }
                    }
                }
                other => {
                    cx.error(
                        start_tag_range(&text, child),
                        format!("unknown element <{other}> in <aspect>"),
                        "expected <import> or <advice>",
                    );
                }
            }
        }
        if advices.is_empty() && cx.diags.is_empty() {
            cx.error(
                start_tag_range(&text, root),
                "the aspect has no <advice>",
                "nothing to weave",
            );
        }
        if cx.diags.iter().any(|d| !d.warning) {
            return Err(cx.diags);
        }
        Ok(Aspect {
            path: path.to_path_buf(),
            text: text.clone(),
            name,
            imports,
            advices,
            records,
        })
    }

    /// The #include line for an import.
    pub fn include_line(header: &str, local: bool) -> String {
        if header.starts_with('<') || header.starts_with('"') {
            format!("#include {header}")
        } else if local {
            format!("#include \"{header}\"")
        } else {
            format!("#include <{header}>")
        }
    }
}

fn parse_advice(cx: &mut Ctx<'_>, node: roxmltree::Node<'_, '_>, index: usize) -> Option<Advice> {
    let text = cx.text.clone();
    let range = start_tag_range(&text, node);
    let mut name = format!("advice{index}");
    let mut enabled = false;
    let mut weave = true;
    let errors_before = cx.diags.len();
    for a in node.attributes() {
        match a.name() {
            "name" => {
                if ident::is_ident(a.value()) {
                    name = a.value().to_string();
                } else {
                    cx.error(
                        attr_range(&a),
                        format!("advice name `{}` is not a C identifier", a.value()),
                        "expected a C identifier",
                    );
                }
            }
            "enabled" | "weave" => match parse_bool(a.value()) {
                Some(b) if a.name() == "enabled" => enabled = b,
                Some(b) => weave = b,
                None => {
                    cx.error(
                        attr_range(&a),
                        format!("`{}` must be true or false", a.name()),
                        "expected true or false",
                    );
                }
            },
            other => {
                cx.error(
                    a.range(),
                    format!("unknown attribute `{other}` on <advice>"),
                    "not an <advice> attribute",
                )
                .notes
                .push("<advice> takes `name`, `enabled` (initial switch state) and `weave`".into());
            }
        }
    }
    let mut pointcut: Option<(Expr, Range<usize>)> = None;
    let mut bodies: Vec<Body> = Vec::new();
    for child in node.children() {
        if child.is_text() {
            if !child.text().unwrap_or("").trim().is_empty() {
                cx.error(
                    child.range(),
                    "text outside any element in <advice>",
                    "expected <pointcut>, <before>, <after> or <after-returning>",
                );
            }
            continue;
        }
        if !child.is_element() {
            continue;
        }
        let tag = child.tag_name().name();
        let str_ = start_tag_range(&text, child);
        if let Some(inner) = child.children().find(|c| c.is_element()) {
            cx.error(
                start_tag_range(&text, inner),
                format!("element <{}> inside <{tag}>", inner.tag_name().name()),
                "C code and pointcuts are text",
            )
            .notes
            .push("write `<` as `&lt;` or wrap the code in <![CDATA[ ... ]]>".into());
            continue;
        }
        let cr = content_range(&text, child);
        let m = textmap::decode(&text, cr.clone());
        match tag {
            "pointcut" => {
                for a in child.attributes() {
                    cx.error(
                        a.range(),
                        format!("unknown attribute `{}` on <pointcut>", a.name()),
                        "<pointcut> takes no attribute",
                    );
                }
                if pointcut.is_some() {
                    cx.error(str_, "an advice has one <pointcut>", "second <pointcut>")
                        .notes
                        .push("combine pointcuts with OR".into());
                    continue;
                }
                match pointcut::parse(&m) {
                    Ok(e) => match e.bound_names() {
                        Ok(_) => pointcut = Some((e, cr)),
                        Err(pe) => {
                            let d = cx.error(pe.range, pe.message, pe.label);
                            d.notes.extend(pe.notes);
                        }
                    },
                    Err(pe) => {
                        let d = cx.error(pe.range, pe.message, pe.label);
                        d.notes.extend(pe.notes);
                    }
                }
            }
            "before" | "after" | "after-returning" => {
                let kind = match tag {
                    "before" => BodyKind::Before,
                    "after" => BodyKind::After,
                    _ => BodyKind::AfterReturning,
                };
                let mut returning = None;
                for a in child.attributes() {
                    if a.name() == "returning" && kind == BodyKind::AfterReturning {
                        if ident::is_ident(a.value()) && !pointcut::RESERVED.contains(&a.value()) {
                            returning = Some(a.value().to_string());
                        } else {
                            cx.error(
                                attr_range(&a),
                                format!("`{}` is not a usable C identifier", a.value()),
                                "expected a name for the return value",
                            );
                        }
                    } else {
                        let d = cx.error(
                            a.range(),
                            format!("unknown attribute `{}` on <{tag}>", a.name()),
                            "not allowed here",
                        );
                        if kind == BodyKind::AfterReturning {
                            d.notes.push("<after-returning> takes `returning`".into());
                        }
                    }
                }
                if kind == BodyKind::AfterReturning && returning.is_none() {
                    returning = Some("retval".to_string());
                }
                if bodies.iter().any(|b| b.kind == kind) {
                    cx.error(
                        str_,
                        format!("an advice has at most one <{tag}>"),
                        "second body of this kind",
                    );
                    continue;
                }
                bodies.push(Body {
                    kind,
                    code: m,
                    returning,
                    range: child.range(),
                });
            }
            other => {
                let d = cx.error(
                    str_,
                    format!("unknown element <{other}> in <advice>"),
                    "expected <pointcut>, <before>, <after> or <after-returning>",
                );
                if let Some(s) = crate::suggest(
                    other,
                    ["pointcut", "before", "after", "after-returning"].into_iter(),
                ) {
                    d.notes.push(format!("did you mean <{s}>?"));
                }
            }
        }
    }
    if cx.diags.len() > errors_before {
        return None;
    }
    let Some((pc, pr)) = pointcut else {
        cx.error(
            range,
            format!("advice `{name}` has no <pointcut>"),
            "a <pointcut> is needed",
        );
        return None;
    };
    if bodies.is_empty() {
        cx.error(
            range,
            format!("advice `{name}` has no code"),
            "add <before>, <after> or <after-returning>",
        );
        return None;
    }
    bodies.sort_by_key(|b| b.kind);
    Some(Advice {
        name,
        range,
        enabled,
        weave,
        pointcut: pc,
        pointcut_range: pr,
        bodies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Aspect, Vec<Diag>> {
        Aspect::parse(Path::new("t.xml"), s)
    }

    #[test]
    fn seed_aspect() {
        let a = parse(
            "<aspect><import>linux/skbuff.h</import>\n<import>linux/netdevice.h</import>\n\
             <advice><pointcut> access(sk_buff.%) AND target(arg0) </pointcut>\n\
             <before> struct sk_buff *skb = (struct sk_buff *)arg0;\n\
             if (skb->protocol != htons(ETH_P_ARP)) FGFT_RECORD(arg0); </before></advice></aspect>",
        )
        .unwrap();
        assert_eq!(a.name, "t");
        assert_eq!(a.imports.len(), 2);
        assert_eq!(
            a.text.get(a.imports[0].range.clone()).unwrap(),
            "linux/skbuff.h"
        );
        assert_eq!(a.advices[0].name, "advice0");
        assert_eq!(a.advices[0].bodies[0].kind, BodyKind::Before);
        let code = &a.advices[0].bodies[0].code;
        let k = code.text.find("FGFT_RECORD").unwrap();
        assert!(a.text[code.raw(k)..].starts_with("FGFT_RECORD"));
    }

    #[test]
    fn malformed_xml_is_located() {
        let src = "<aspect>\n<advice><pointcut>execution(f)</pointcut>\n<before>if (a && b) x();</before></advice></aspect>";
        let d = parse(src).unwrap_err();
        assert_eq!(d.len(), 1);
        assert!(
            d[0].message.starts_with("malformed XML"),
            "{}",
            d[0].message
        );
        assert_eq!(textmap::line_of(src, d[0].range.start), 3);
    }

    #[test]
    fn element_and_attribute_errors() {
        let d = parse("<aspect><advice nme=\"x\"><pointcut>execution(f)</pointcut><befor>x();</befor></advice></aspect>").unwrap_err();
        assert!(d
            .iter()
            .any(|d| d.message.contains("unknown attribute `nme`")));
        assert!(d.iter().any(
            |d| d.message.contains("<befor>") && d.notes.iter().any(|n| n.contains("<before>"))
        ));
        let d = parse("<aspect><advice><before>x();</before></advice></aspect>").unwrap_err();
        assert!(d[0].message.contains("no <pointcut>"));
        let d = parse("<klas/>").unwrap_err();
        assert!(d[0].message.contains("expected <aspect>"));
    }

    #[test]
    fn cdata_bodies() {
        let a = parse("<aspect name=\"x\" records=\"64\"><advice name=\"a\" enabled=\"yes\"><pointcut>call(kfree)</pointcut><after-returning returning=\"r\"><![CDATA[if (a < b && c) y();]]></after-returning></advice></aspect>").unwrap();
        let b = &a.advices[0].bodies[0];
        assert_eq!(b.code.text, "if (a < b && c) y();");
        assert_eq!(b.returning.as_deref(), Some("r"));
        assert!(a.advices[0].enabled);
        assert_eq!(a.records, 64);
    }
}
