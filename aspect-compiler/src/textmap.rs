//! Decoding XML character data while keeping every decoded byte's position in
//! the aspect file, so that pointcut and advice problems point at the right
//! column even when the text uses entities or CDATA sections.

/// Decoded text plus, for each decoded byte, its offset in the raw file.
#[derive(Debug, Clone, Default)]
pub struct Mapped {
    pub text: String,
    /// `map[i]` is the raw offset of decoded byte `i`; `map[text.len()]` is the
    /// raw end offset.
    pub map: Vec<usize>,
}

impl Mapped {
    /// Raw offset of decoded offset `i` (clamped).
    pub fn raw(&self, i: usize) -> usize {
        self.map[i.min(self.map.len() - 1)]
    }

    /// Raw range of a decoded range.
    pub fn raw_range(&self, r: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let s = self.raw(r.start);
        let e = self.raw(r.end).max(s);
        s..e
    }
}

/// Decodes the raw character data `raw[range]` (text, entity references, CDATA
/// sections and comments) into text with a position map.  Unknown entities are
/// kept as written (the XML parser has already rejected them).
pub fn decode(raw: &str, range: std::ops::Range<usize>) -> Mapped {
    let bytes = raw.as_bytes();
    let mut out = Mapped::default();
    let mut i = range.start;
    let end = range.end.min(raw.len());
    let push = |out: &mut Mapped, s: &str, at: usize| {
        // Every byte of a decoded entity maps to the entity's `&`.
        out.map.extend(std::iter::repeat_n(at, s.len()));
        out.text.push_str(s);
    };
    while i < end {
        let rest = &raw[i..end];
        if rest.starts_with("<![CDATA[") {
            let body = i + 9;
            let close = raw[body..end].find("]]>").map(|k| body + k).unwrap_or(end);
            for (k, ch) in raw[body..close].char_indices() {
                let mut buf = [0u8; 4];
                let s = ch.encode_utf8(&mut buf);
                for j in 0..s.len() {
                    out.map.push(body + k + j);
                }
                out.text.push(ch);
            }
            i = (close + 3).min(end);
        } else if rest.starts_with("<!--") {
            let close = raw[i..end].find("-->").map(|k| i + k + 3).unwrap_or(end);
            i = close;
        } else if bytes[i] == b'&' {
            let semi = rest.find(';').filter(|&k| k <= 12);
            let decoded = semi.and_then(|k| entity(&rest[1..k]));
            match (semi, decoded) {
                (Some(k), Some(ch)) => {
                    let mut buf = [0u8; 4];
                    let s = ch.encode_utf8(&mut buf);
                    push(&mut out, s, i);
                    i += k + 1;
                }
                _ => {
                    push(&mut out, "&", i);
                    i += 1;
                }
            }
        } else {
            let ch = rest.chars().next().unwrap_or(' ');
            for j in 0..ch.len_utf8() {
                out.map.push(i + j);
            }
            out.text.push(ch);
            i += ch.len_utf8();
        }
    }
    out.map.push(end);
    out
}

fn entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let num = name.strip_prefix('#')?;
            let v = match num.strip_prefix('x').or_else(|| num.strip_prefix('X')) {
                Some(h) => u32::from_str_radix(h, 16).ok()?,
                None => num.parse::<u32>().ok()?,
            };
            char::from_u32(v)
        }
    }
}

/// Byte offset of the start of 1-based `line` in `text` (end of text if past).
pub fn line_start(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    let mut n = 1;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            n += 1;
            if n == line {
                return i + 1;
            }
        }
    }
    text.len()
}

/// 1-based line of byte offset `off`.
pub fn line_of(text: &str, off: usize) -> usize {
    text.as_bytes()[..off.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_and_cdata_map_back() {
        let raw = "<p>a &amp;&amp; b<![CDATA[ x < y ]]>z</p>";
        let m = decode(raw, 3..raw.len() - 4);
        assert_eq!(m.text, "a && b x < y z");
        let amp = m.text.find("&&").unwrap();
        assert_eq!(&raw[m.raw(amp)..m.raw(amp) + 5], "&amp;");
        let lt = m.text.find('<').unwrap();
        assert_eq!(&raw[m.raw(lt)..m.raw(lt) + 1], "<");
        assert_eq!(m.raw(m.text.len()), raw.len() - 4);
    }

    #[test]
    fn lines() {
        let t = "a\nbc\nd";
        assert_eq!(line_start(t, 2), 2);
        assert_eq!(line_start(t, 3), 5);
        assert_eq!(line_of(t, 3), 2);
    }
}
