//! Splitting through the fgft-split library (linked: no `fgft-cc`
//! process): the output directory made ready as `fgft-cc split --force`
//! does, and split diagnostics rendered into the campaign's error with
//! their file and line.

use crate::CampaignError;
use std::fmt::Write as _;
use std::path::Path;

/// Renders a split error for the campaign's error message: every located
/// diagnostic (the errors and the warnings that came with them) as
/// `path:line:col: error: message`, then its source line marked with its
/// label, then its notes; other errors as they display.
pub fn split_error(e: &fgft_split::Error) -> String {
    let fgft_split::Error::Located(diags) = e else {
        return e.to_string();
    };
    let mut s = String::new();
    for d in diags {
        let level = if d.warning { "warning" } else { "error" };
        let mut at = d.range.start.min(d.text.len());
        while !d.text.is_char_boundary(at) {
            at -= 1;
        }
        let line_start = d.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_no = d.text[..at].matches('\n').count() + 1;
        let line_end = d.text[at..].find('\n').map_or(d.text.len(), |i| at + i);
        let prefix = &d.text[line_start..at];
        let loc = format!(
            "{}:{line_no}:{}",
            d.path.display(),
            prefix.chars().count() + 1
        );
        // Some messages carry the location already (the annotation parser's).
        let message = d
            .message
            .strip_prefix(&loc)
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(&d.message);
        let _ = writeln!(s, "{loc}: {level}: {message}");
        let line = d.text[line_start..line_end].trim_end();
        if !line.is_empty() {
            let pad: String = prefix
                .chars()
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let end = d.range.end.clamp(at, line_end);
            let width = d.text.get(at..end).map_or(1, |t| t.chars().count().max(1));
            let gutter = " ".repeat(line_no.to_string().len());
            let _ = writeln!(s, " {line_no} | {line}");
            let _ = writeln!(s, " {gutter} | {pad}{} {}", "^".repeat(width), d.label);
        }
        for n in &d.notes {
            let _ = writeln!(s, "    = note: {n}");
        }
    }
    s.push_str(&e.to_string());
    s
}

/// Stack of the thread a split runs on: that of a process's main thread.
const SPLIT_STACK: usize = 8 << 20;

/// Splits with the fgft-split library and writes the result to `out`
/// (replaced). Nothing is written when the split fails; the error names
/// `what` and carries every diagnostic with its file and line. Returns the
/// split's summary line.
pub fn split(opts: &fgft_split::Options, out: &Path, what: &str) -> Result<String, CampaignError> {
    let failed = |e: fgft_split::Error| {
        CampaignError::Msg(format!("split failed for {what}:\n{}", split_error(&e)))
    };
    // On a thread of its own with the stack `fgft-cc`'s main thread has (a
    // test thread's default is smaller), and a panic stays this driver's
    // error, as a crashed `fgft-cc` process was.
    let computed = std::thread::scope(|sc| {
        std::thread::Builder::new()
            .name("fgft-split".into())
            .stack_size(SPLIT_STACK)
            .spawn_scoped(sc, || fgft_split::compute(opts))
            .map_err(|e| CampaignError::Msg(format!("split of {what}: thread: {e}")))?
            .join()
            .map_err(|p| {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                CampaignError::Msg(format!("split failed for {what}: panicked: {why}"))
            })
    })?;
    let split = computed.map_err(failed)?;
    // A campaign's work directory is its own: an earlier run's is replaced.
    let stage = fgft_base::outdir::stage(out, &split.inputs, true, "fgft-campaign")
        .map_err(|e| CampaignError::Msg(format!("split output of {what}: {e}")))?;
    fgft_split::write(stage.path(), &split.out).map_err(failed)?;
    stage
        .commit()
        .map_err(|e| CampaignError::Msg(format!("split output of {what}: {e}")))?;
    Ok(split.summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn located(text: &str, range: std::ops::Range<usize>, warning: bool) -> fgft_split::Located {
        fgft_split::Located {
            path: std::path::PathBuf::from("drv/e1000_main.c"),
            text: text.to_string(),
            range,
            message: "a problem".into(),
            label: "here".into(),
            notes: vec!["why it matters".into()],
            warning,
        }
    }

    #[test]
    fn split_errors_name_file_and_line() {
        let text = "int a;\n\tint bad = x;\nint c;\n";
        let at = text.find("bad").unwrap();
        let e = fgft_split::Error::Located(vec![
            located(text, at..at + 3, false),
            located(text, 0..3, true),
        ]);
        assert_eq!(
            split_error(&e),
            "drv/e1000_main.c:2:6: error: a problem\n \
             2 | \tint bad = x;\n   | \t    ^^^ here\n    = note: why it matters\n\
             drv/e1000_main.c:1:1: warning: a problem\n \
             1 | int a;\n   | ^^^ here\n    = note: why it matters\n\
             1 error(s)"
        );
    }

    #[test]
    fn split_errors_without_text_still_name_the_file() {
        let e = fgft_split::Error::Located(vec![located("", 10..20, false)]);
        assert_eq!(
            split_error(&e),
            "drv/e1000_main.c:1:1: error: a problem\n    = note: why it matters\n1 error(s)"
        );
        let m = fgft_split::Error::Msg("no driver".into());
        assert_eq!(split_error(&m), "no driver");
    }

    #[test]
    fn a_failed_split_reports_file_and_line_and_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("fgft-campaign-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sidecar = dir.join("bad.toml");
        std::fs::write(&sidecar, "# a sidecar\n[driver]\nfiles = 3\n").unwrap();
        let out = dir.join("split");
        let opts = fgft_split::Options {
            annotations: vec![sidecar.clone()],
            ..Default::default()
        };
        let e = split(&opts, &out, "bad").unwrap_err().to_string();
        assert!(e.starts_with("split failed for bad:\n"), "{e}");
        let at = format!("{}:3:1: error: unknown key `files`", sidecar.display());
        assert!(e.contains(&at), "{e}");
        assert!(!out.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
