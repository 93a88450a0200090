//! Hostile inputs to `aspect` and `survey`, and concurrent `split --force`
//! runs (issue 47).  Same four checks per case as hostile_split.rs: exit
//! code, no panic or abort, a located message naming the problem, and the
//! file system before and after.

mod hostile_common;

use hostile_common::{assert_complete, case, fgft, Expect, Sandbox};

const ASPECT: &str = r#"<?xml version="1.0"?>
<aspect name="t">
  <advice name="exec">
    <pointcut>execution(drv_%)</pointcut>
    <before>FGFT_RECORD(0);</before>
  </advice>
</aspect>
"#;

fn aspect_sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("t.xml", ASPECT);
    sb
}

// ---- 7. aspect's OUT ------------------------------------------------------------

#[test]
fn item7_aspect_never_overwrites_a_users_directory() {
    let sb = aspect_sandbox();
    sb.write("user/Makefile", "all:\n\techo mine\n");
    sb.write("user/drv.c", "int mine;\n");
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "user"]),
        Expect::refused(&["not empty", "user"]),
    );
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "user", "--force"]),
        Expect::refused(&[".fgft-manifest", "user"]),
    );
}

#[test]
fn item7_aspect_out_inside_the_sources_is_refused() {
    let sb = aspect_sandbox();
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "drv/woven"]),
        Expect::refused(&["inside input", "drv/woven"]),
    );
}

#[test]
fn item7_aspect_force_replaces_its_own_output() {
    let sb = aspect_sandbox();
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "w"]),
        Expect::ok("w"),
    );
    assert_complete(&sb.path("w"));
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "w"]),
        Expect::refused_out(&["--force"], "w"),
    );
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "w", "--force"]),
        Expect::ok("w"),
    );
    assert_complete(&sb.path("w"));
}

#[test]
fn item21_aspect_out_a_regular_file() {
    let sb = aspect_sandbox();
    sb.write("afile", "mine\n");
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "afile"]),
        Expect::refused(&["afile", "not a directory"]),
    );
}

// ---- 11. aspect on deep input ------------------------------------------------------

#[test]
fn item11_a_pointcut_of_five_thousand_parentheses() {
    let sb = aspect_sandbox();
    sb.write(
        "deep.xml",
        ASPECT.replace(
            "execution(drv_%)",
            &format!("{}execution(drv_%){}", "(".repeat(5000), ")".repeat(5000)),
        ),
    );
    case(
        fgft(&sb, &["aspect", "deep.xml", "drv", "-o", "w"]),
        Expect::refused(&["pointcut nests", "256"]),
    );
}

#[test]
fn item11_twenty_thousand_nested_xml_elements() {
    let sb = aspect_sandbox();
    sb.write(
        "deep.xml",
        format!(
            "<aspect name=\"t\">{}{}</aspect>\n",
            "<a>".repeat(20_000),
            "</a>".repeat(20_000)
        ),
    );
    case(
        fgft(&sb, &["aspect", "deep.xml", "drv", "-o", "w"]),
        Expect::refused(&["XML elements nest deeper"]),
    );
}

#[test]
fn item11_aspect_on_a_deeply_nested_driver() {
    let sb = aspect_sandbox();
    sb.write(
        "drv/drv.c",
        format!(
            "{}\nstatic int deep(int a)\n{{\n\treturn {}a{};\n}}\n",
            hostile_common::DRIVER,
            "(".repeat(5000),
            ")".repeat(5000)
        ),
    );
    case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "w"]),
        Expect::refused(&["nests deeper than 1000"]),
    );
}

// ---- 12. aspect and symbolic link loops ---------------------------------------------

#[test]
fn item12_aspect_walks_each_directory_once() {
    let sb = aspect_sandbox();
    std::os::unix::fs::symlink("..", sb.path("drv/up")).unwrap();
    std::os::unix::fs::symlink("../..", sb.path("drv/up2")).unwrap();
    std::os::unix::fs::symlink(".", sb.path("drv/self")).unwrap();
    let o = case(
        fgft(&sb, &["aspect", "t.xml", "drv", "-o", "w"]).timeout(60),
        Expect::ok("w"),
    );
    assert!(o.stderr.contains("symbolic link"), "{}", o.stderr);
    let copies = hostile_common::snapshot(&sb.path("w"))
        .keys()
        .filter(|p| p.file_name().is_some_and(|n| n == "drv.c"))
        .count();
    assert_eq!(copies, 1);
}

// ---- 21. aspect-file diagnostics ---------------------------------------------------

#[test]
fn item21_an_aspect_file_with_a_dtd_is_located() {
    let sb = aspect_sandbox();
    sb.write(
        "dtd.xml",
        ASPECT.replace(
            "<?xml version=\"1.0\"?>\n",
            "<?xml version=\"1.0\"?>\n<!DOCTYPE aspect [<!ENTITY e \"FGFT_RECORD(0);\">]>\n",
        ),
    );
    let o = case(
        fgft(&sb, &["aspect", "dtd.xml", "drv", "-o", "w"]),
        Expect::refused(&["document type declaration", "1 entity"]),
    );
    assert!(o.stderr.contains("dtd.xml:2:1"), "{}", o.stderr);
}

#[test]
fn item21_an_aspect_file_with_a_nul_byte_is_located() {
    let sb = aspect_sandbox();
    sb.write(
        "nul.xml",
        ASPECT.replace("FGFT_RECORD(0);", "FGFT_RECORD(0);\0"),
    );
    let o = case(
        fgft(&sb, &["aspect", "nul.xml", "drv", "-o", "w"]),
        Expect::refused(&["NUL byte"]),
    );
    assert!(o.stderr.contains("nul.xml:5:"), "{}", o.stderr);
}

#[test]
fn item21_an_aspect_file_that_is_cut_short() {
    let sb = aspect_sandbox();
    sb.write("cut.xml", &ASPECT[..ASPECT.len() - 12]);
    let o = case(
        fgft(&sb, &["aspect", "cut.xml", "drv", "-o", "w"]),
        Expect::refused(&["malformed XML"]),
    );
    assert!(!o.stderr.contains("cut.xml:1:1"), "{}", o.stderr);
}

// ---- 8. survey's report files --------------------------------------------------------

#[test]
fn item8_survey_never_overwrites_an_input() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(
            &sb,
            &["survey", "drv", "--no-progress", "--json", "drv/drv.c"],
        ),
        Expect::refused(&["--json", "input"]),
    );
    sb.write("api.toml", "# my API table\n");
    case(
        fgft(
            &sb,
            &[
                "survey",
                "drv",
                "--no-progress",
                "--api-table",
                "api.toml",
                "--sarif",
                "api.toml",
            ],
        ),
        Expect::refused(&["--sarif", "input"]),
    );
}

#[test]
fn item8_survey_replaces_only_its_own_reports() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("notes.json", "{\"mine\": true}\n");
    case(
        fgft(
            &sb,
            &["survey", "drv", "--no-progress", "--json", "notes.json"],
        ),
        Expect::refused(&["not a report fgft wrote"]),
    );
    // Its own report: written, then written again.
    for _ in 0..2 {
        let o = case(
            fgft(
                &sb,
                &[
                    "survey",
                    "drv",
                    "--no-progress",
                    "--json",
                    "r.json",
                    "--sarif",
                    "r.sarif",
                ],
            ),
            Expect {
                out: None,
                ..Expect::ok("")
            }
            .allow(&["r.json", "r.sarif"]),
        );
        assert_eq!(o.code, Some(0));
    }
    case(
        fgft(
            &sb,
            &[
                "survey",
                "drv",
                "--no-progress",
                "--json",
                "r.json",
                "--sarif",
                "./r.json",
            ],
        ),
        Expect::refused(&["same file"]),
    );
}

// ---- 15. survey's bounds ------------------------------------------------------------

#[test]
fn item15_survey_jobs_are_capped_and_zero_refused() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let o = case(
        fgft(&sb, &["survey", "drv", "--no-progress", "-j", "20000"]),
        Expect {
            out: None,
            ..Expect::ok("")
        },
    );
    assert!(o.stderr.contains("capped at"), "{}", o.stderr);
    case(
        fgft(&sb, &["survey", "drv", "--no-progress", "-j", "0"]),
        Expect::refused(&["-j 0"]),
    );
}

#[test]
fn item15_an_unreadable_directory_is_skipped_and_listed() {
    let sb = Sandbox::new();
    sb.driver("tree/a");
    // A directory entry that cannot be read even by root: a link loop.
    std::os::unix::fs::symlink("loop2", sb.path("tree/loop1")).unwrap();
    std::os::unix::fs::symlink("loop1", sb.path("tree/loop2")).unwrap();
    // And a FIFO named like a source.
    let c = std::ffi::CString::new(sb.path("tree/a/fifo.c").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = case(
        fgft(&sb, &["survey", "tree", "--no-progress", "--json", "-"]).timeout(60),
        Expect {
            out: None,
            ..Expect::ok("")
        },
    );
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("a JSON report");
    let text = v.to_string();
    for name in ["loop1", "loop2", "fifo.c"] {
        assert!(text.contains(name), "{name} not listed: {text}");
    }
    // The readable driver is still surveyed.
    assert!(text.contains("drv_get_msglevel"), "{text}");
}

#[test]
fn item11_survey_of_deeply_nested_rust_is_listed_not_fatal() {
    let sb = Sandbox::new();
    sb.write(
        "rs/lib.rs",
        format!(
            "fn ok() {{}}\nfn f() {}{}\n",
            "{".repeat(5000),
            "}".repeat(5000)
        ),
    );
    let o = case(
        fgft(&sb, &["survey", "rs", "--no-progress"]),
        Expect {
            out: None,
            ..Expect::ok("")
        },
    );
    assert!(o.stderr.contains("nest deeper than 256"), "{}", o.stderr);
    assert!(hostile_common::has_location(&o.stderr), "{}", o.stderr);
}

// ---- 9. concurrent --force splits into one OUT ----------------------------------------

#[test]
fn item9_concurrent_force_splits_never_leave_a_partial_out() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let args = [
        "split",
        "drv",
        "-o",
        "out",
        "--force",
        "--no-kdir",
        "--no-checkpoint",
        "--isolate",
        "ethtool_ops.*",
    ];
    let bin = env!("CARGO_BIN_EXE_fgft-cc");
    let mut wins = 0;
    for pair in 0..25 {
        let spawn = || {
            std::process::Command::new(bin)
                .args(args)
                .current_dir(sb.root())
                .env("NO_COLOR", "1")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        for o in &outs {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                !err.contains("panicked") && o.status.code().is_some(),
                "pair {pair}: {err}"
            );
            match o.status.code() {
                Some(0) => wins += 1,
                Some(1) => assert!(
                    hostile_common::has_location(&err) && err.contains("out"),
                    "pair {pair}: a refusal without a located reason: {err}"
                ),
                c => panic!("pair {pair}: exit {c:?}: {err}"),
            }
        }
        assert!(
            outs.iter().any(|o| o.status.success()),
            "pair {pair}: neither run succeeded"
        );
        // Whoever won, OUT is whole, and nothing of a staging directory
        // is left beside it.
        assert_complete(&sb.path("out"));
        let mut names: Vec<_> = std::fs::read_dir(sb.root())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["drv", "out"], "pair {pair}");
    }
    assert!(wins >= 25, "{wins} successful runs in 25 pairs");
}

// ---- more of the same classes: other commands, other spellings ------------------

fn fifo(sb: &Sandbox, rel: &str) {
    let c = std::ffi::CString::new(sb.path(rel).to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn item13_roots_and_aspect_never_read_a_fifo() {
    let sb = aspect_sandbox();
    fifo(&sb, "drv/fifo.c");
    case(
        fgft(&sb, &["roots", "drv/fifo.c"]).timeout(60),
        Expect::refused(&["FIFO"]),
    );
    let o = case(
        fgft(&sb, &["roots", "drv"]).timeout(60),
        Expect {
            out: None,
            ..Expect::ok("")
        },
    );
    assert!(o.stdout.contains("drv_get_msglevel"), "{}", o.stdout);
    assert!(o.stderr.contains("FIFO"), "{}", o.stderr);
    case(
        fgft(&sb, &["aspect", "t.xml", "drv/fifo.c", "-o", "w"]).timeout(60),
        Expect::refused(&["FIFO"]),
    );
}

#[test]
fn item21_arguments_of_the_wrong_kind_are_shown() {
    let sb = aspect_sandbox();
    case(
        fgft(&sb, &["survey", "drv/drv.c", "--no-progress"]),
        Expect::refused(&["drv/drv.c", "not a directory"]),
    );
    case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "out",
                "--no-kdir",
                "--tables",
                "/nonexistent",
            ],
        ),
        Expect::refused(&["/nonexistent", "table directory does not exist"]),
    );
    sb.mkdir("empty");
    case(
        fgft(
            &sb,
            &["split", "empty", "-o", "out", "--no-kdir", "--isolate", "*"],
        ),
        Expect::refused(&["no C source"]),
    );
    case(
        fgft(&sb, &["inject", "empty", "-o", "inj", "--entry", "*"]),
        Expect::refused(&["no .c or .h files"]),
    );
}

#[test]
fn item16_latin1_bytes_in_a_source_are_read_not_refused() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let mut c = b"/* Copyright (c) 2001 J\xf6rg M\xfcller */\n".to_vec();
    c.extend_from_slice(hostile_common::DRIVER.as_bytes());
    sb.write("drv/drv.c", c);
    // A directory named like a source is skipped, not read.
    sb.mkdir("drv/x.c");
    let o = case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "out",
                "--no-kdir",
                "--no-checkpoint",
                "--isolate",
                "ethtool_ops.*",
            ],
        ),
        Expect::ok("out"),
    );
    assert!(o.stderr.contains("x.c"), "{}", o.stderr);
    assert_complete(&sb.path("out"));
}
