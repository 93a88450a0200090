//! Hostile inputs to `split` and `inject` (issue 47): each case runs the
//! command as a careless or hostile user would and checks its exit code,
//! that nothing panicked or aborted, a located message naming the problem,
//! and the file system before and after (nothing outside OUT changed; OUT
//! absent, unchanged or complete).  The item numbers are the issue's.

mod hostile_common;
#[path = "roots_common.rs"]
mod roots_common;

use hostile_common::{assert_complete, case, fgft, Expect, Sandbox};

/// The isolation every split case asks for, without kernel headers (their
/// own cases give them) and without a device checkpoint (the fixture has
/// no PM code).
const ISO: [&str; 4] = ["--no-kdir", "--no-checkpoint", "--isolate", "ethtool_ops.*"];

fn args<'a>(head: &[&'a str]) -> Vec<&'a str> {
    let mut v = head.to_vec();
    v.extend(ISO);
    v
}

/// A finished split of the fixture at `out` (an earlier fgft output).
fn earlier_output(sb: &Sandbox, out: &str) {
    sb.driver("prev");
    case(
        fgft(sb, &args(&["split", "prev", "-o", out])),
        Expect::ok(out),
    );
    assert_complete(&sb.path(out));
}

// ---- 1. OUT is the current directory or above it -----------------------

#[test]
fn item1_force_into_the_current_directory_or_above_is_refused() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("work/notes.txt", "mine\n");
    for out in [".", ".."] {
        case(
            fgft(&sb, &args(&["split", "../drv", "-o", out, "--force"])).cwd("work"),
            Expect::refused(&["current directory", "refusing"]),
        );
    }
    case(
        fgft(
            &sb,
            &["inject", "../drv", "-o", ".", "--force", "--entry", "drv_*"],
        )
        .cwd("work"),
        Expect::refused(&["current directory"]),
    );
    // Even a current directory that fgft wrote is not replaced from inside.
    earlier_output(&sb, "gen");
    case(
        fgft(&sb, &args(&["split", "../drv", "-o", ".", "--force"])).cwd("gen"),
        Expect::refused(&["current directory"]),
    );
}

// ---- 2. --tables, --runtime-symvers and the sidecar are inputs ------------

#[test]
fn item2_force_never_replaces_tables_symvers_or_sidecar() {
    let sb = Sandbox::new();
    sb.driver("drv");
    // Each input dir is made to look like fgft's output, so only the input
    // rule stands between --force and the user's file.
    sb.write("tabs/.fgft-manifest", "# fgft output directory\n");
    sb.write(
        "tabs/profiles.toml",
        "[profile.mine]\nslots = [\"ethtool_ops.*\"]\n",
    );
    case(
        fgft(
            &sb,
            &args(&["split", "drv", "-o", "tabs", "--force", "--tables", "tabs"]),
        ),
        Expect::refused(&["holds input", "tabs"]),
    );
    sb.write("rt/.fgft-manifest", "# fgft output directory\n");
    sb.write(
        "rt/Module.symvers",
        "0x00000000\tfgft_rt_enter\tfgft_rt\tEXPORT_SYMBOL_GPL\t\n",
    );
    case(
        fgft(
            &sb,
            &args(&[
                "split",
                "drv",
                "-o",
                "rt",
                "--force",
                "--runtime-symvers",
                "rt/Module.symvers",
            ]),
        ),
        Expect::refused(&["holds input", "Module.symvers"]),
    );
    sb.write("side/.fgft-manifest", "# fgft output directory\n");
    sb.write(
        "side/drv.toml",
        "[driver]\nname = \"drv\"\nsources = [\"drv.c\"]\n",
    );
    case(
        fgft(
            &sb,
            &args(&[
                "split",
                "--annotations",
                "side/drv.toml",
                "--tree",
                "drv",
                "-o",
                "side",
                "--force",
            ]),
        ),
        Expect::refused(&["holds input", "drv.toml"]),
    );
}

// ---- 3. a header reached through #include is an input ----------------------

#[test]
fn item3_an_included_headers_directory_is_never_replaced() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let c = hostile_common::DRIVER.replace("#include \"drv.h\"", "#include \"../inc/h.h\"");
    sb.write("drv/drv.c", c);
    sb.write("inc/h.h", hostile_common::DRIVER_H);
    sb.write("inc/README", "the shared headers\n");
    sb.write("inc/.fgft-manifest", "# fgft output directory\n");
    case(
        fgft(&sb, &args(&["split", "drv/drv.c", "-o", "inc", "--force"])),
        Expect::refused(&["holds input", "h.h"]),
    );
}

// ---- 4. OUT and the driver's directory, with file sources -------------------

#[test]
fn item4_out_over_the_drivers_directory_is_refused_with_file_sources() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("drv/.fgft-manifest", "# fgft output directory\n");
    case(
        fgft(&sb, &args(&["split", "drv/drv.c", "-o", "drv", "--force"])),
        Expect::refused(&["holds input", "drv"]),
    );
}

#[test]
fn item4_an_output_inside_the_driver_is_never_read_back() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(&sb, &args(&["split", "drv/drv.c", "-o", "drv/out"])),
        Expect::ok("drv/out"),
    );
    assert_complete(&sb.path("drv/out"));
    // A recursive walk of drv (inject's) skips the output beside the
    // sources and lists it: it is never read back as input.
    let o = case(
        fgft(&sb, &["inject", "drv", "-o", "inj", "--entry", "drv_*"]),
        Expect::ok("inj"),
    );
    assert!(o.stderr.contains("fgft output directory"), "{}", o.stderr);
    let manifest = std::fs::read_to_string(sb.path("inj/.fgft-manifest")).unwrap();
    assert!(!manifest.contains("out/"), "{manifest}");
}

// ---- 5. inject counts every file under its input directories ---------------

#[test]
fn item5_inject_into_a_docs_directory_of_the_driver_is_refused() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("drv/docs/design.md", "# design\n");
    sb.write("drv/docs/.fgft-manifest", "# fgft output directory\n");
    case(
        fgft(
            &sb,
            &[
                "inject", "drv", "-o", "drv/docs", "--force", "--entry", "drv_*",
            ],
        ),
        Expect::refused(&["inside input", "drv/docs"]),
    );
}

// ---- 6. inject checks its arguments before OUT is touched -------------------

#[test]
fn item6_inject_bad_arguments_leave_an_earlier_out_unchanged() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(&sb, &["inject", "drv", "-o", "inj", "--entry", "drv_*"]),
        Expect::ok("inj"),
    );
    assert_complete(&sb.path("inj"));
    let bad: [(&[&str], &[&str]); 4] = [
        (
            &["--entry", "nomatch_*"],
            &["no injection site", "nomatch_*"],
        ),
        (
            &["--entry", "drv_*", "--per-entry", "0"],
            &["--per-entry 0"],
        ),
        (
            &["--entry", "drv_*", "--root", "/nonexistent"],
            &["--root", "not a directory"],
        ),
        (
            &["--entry", "drv_*", "--kinds", "nosuchkind"],
            &["nosuchkind"],
        ),
    ];
    for (extra, names) in bad {
        let mut a = vec!["inject", "drv", "-o", "inj", "--force"];
        a.extend(extra);
        // OUT is not named: it must stay exactly as it was.
        case(fgft(&sb, &a), Expect::refused(names));
    }
}

// ---- 10. --force and directories fgft did not write ------------------------

#[test]
fn item10_force_refuses_a_directory_without_the_manifest() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("home/.bashrc", "export PS1='$ '\n");
    sb.write("home/thesis/ch1.tex", "\\chapter{One}\n");
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "home", "--force"])),
        Expect::refused(&["not a directory fgft wrote", ".fgft-manifest"]),
    );
    case(
        fgft(
            &sb,
            &["inject", "drv", "-o", "home", "--force", "--entry", "drv_*"],
        ),
        Expect::refused(&[".fgft-manifest"]),
    );
}

#[test]
fn item10_force_replaces_fgfts_own_output_whole() {
    let sb = Sandbox::new();
    sb.driver("drv");
    earlier_output(&sb, "out");
    // Something fgft did not write, put there since: replaced with OUT.
    sb.write("out/stale.c", "int stale;\n");
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out", "--force"])),
        Expect::ok("out"),
    );
    assert_complete(&sb.path("out"));
    assert!(!sb.path("out/stale.c").exists());
    // Without --force, an earlier output is refused and kept.
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])),
        Expect::refused_out(&["--force"], "out"),
    );
}

// ---- 11. nesting that recursive walkers would overflow on --------------------

fn deep_case(name: &str, code: String) {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("drv/drv.c", format!("{}\n{code}\n", hostile_common::DRIVER));
    let o = case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])),
        Expect::refused_out(&["nests deeper than 1000 levels"], "out"),
    );
    assert!(!sb.path("out").exists(), "{name}: OUT written");
    assert!(o.stderr.contains("drv/drv.c:"), "{name}: {}", o.stderr);
}

#[test]
fn item11_ten_thousand_nested_braces_outside_the_closure() {
    deep_case(
        "braces",
        format!(
            "static void deep(void)\n{}{}",
            "{".repeat(10_000),
            "}".repeat(10_000)
        ),
    );
}

#[test]
fn item11_five_thousand_nested_parentheses() {
    deep_case(
        "parens",
        format!(
            "static int deep(int a)\n{{\n\treturn {}a{};\n}}",
            "(".repeat(5000),
            ")".repeat(5000)
        ),
    );
}

#[test]
fn item11_a_five_thousand_term_sum() {
    deep_case(
        "sum",
        format!(
            "static int deep(int a)\n{{\n\treturn {};\n}}",
            vec!["a"; 5000].join(" + ")
        ),
    );
}

#[test]
fn item11_ten_thousand_nested_ifs() {
    deep_case(
        "ifs",
        format!(
            "static void deep(int a)\n{{\n{};\n}}",
            "if (a) ".repeat(10_000)
        ),
    );
}

#[test]
fn item11_inject_on_deep_nesting() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write(
        "drv/drv.c",
        format!(
            "{}\nstatic void deep(void)\n{}{}\n",
            hostile_common::DRIVER,
            "{".repeat(10_000),
            "}".repeat(10_000)
        ),
    );
    case(
        fgft(&sb, &["inject", "drv", "-o", "inj", "--entry", "drv_*"]),
        Expect::refused_out(&["nests deeper"], "inj"),
    );
}

#[test]
fn item11_rust_crate_with_thousands_of_nested_blocks() {
    let sb = Sandbox::new();
    sb.write(
        "rs/Cargo.toml",
        "[package]\nname = \"deep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    sb.write(
        "rs/src/lib.rs",
        format!(
            "pub fn ok() {{}}\npub fn f() {}{}\n",
            "{".repeat(5000),
            "}".repeat(5000)
        ),
    );
    case(
        fgft(&sb, &["split", "rs", "-o", "out", "--isolate", "*"]),
        Expect::refused_out(&["nest deeper than 256"], "out"),
    );
    case(
        fgft(&sb, &["roots", "rs/src/lib.rs"]),
        Expect::refused(&["nest deeper than 256", "lib.rs:2:"]),
    );
}

// ---- 12. symbolic link loops -------------------------------------------------

#[test]
fn item12_inject_walks_each_directory_once() {
    let sb = Sandbox::new();
    sb.driver("tree/drv");
    std::os::unix::fs::symlink("..", sb.path("tree/drv/up")).unwrap();
    std::os::unix::fs::symlink("../..", sb.path("tree/drv/up2")).unwrap();
    std::os::unix::fs::symlink(".", sb.path("tree/drv/self")).unwrap();
    let o = case(
        fgft(
            &sb,
            &["inject", "tree/drv", "-o", "inj", "--entry", "drv_*"],
        )
        .timeout(60),
        Expect::ok("inj"),
    );
    assert!(o.stderr.contains("symbolic link"), "{}", o.stderr);
    assert_complete(&sb.path("inj"));
    // One copy of the source, not one per path through the links.
    let copies = hostile_common::snapshot(&sb.path("inj"))
        .keys()
        .filter(|p| p.file_name().is_some_and(|n| n == "drv.c"))
        .count();
    assert_eq!(copies, 1);
}

// ---- 13. FIFOs named *.c -------------------------------------------------------

#[test]
fn item13_a_fifo_in_the_driver_directory_is_skipped_and_listed() {
    let sb = Sandbox::new();
    sb.driver("drv");
    mkfifo(&sb.path("drv/fifo.c"));
    let o = case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])).timeout(60),
        Expect::ok("out"),
    );
    assert!(o.stderr.contains("FIFO"), "{}", o.stderr);
    let o = case(
        fgft(&sb, &["inject", "drv", "-o", "inj", "--entry", "drv_*"]).timeout(60),
        Expect::ok("inj"),
    );
    assert!(o.stderr.contains("FIFO"), "{}", o.stderr);
}

#[test]
fn item13_a_fifo_given_as_a_source_is_refused() {
    let sb = Sandbox::new();
    sb.driver("drv");
    mkfifo(&sb.path("drv/fifo.c"));
    case(
        fgft(&sb, &args(&["split", "drv/fifo.c", "-o", "out"])).timeout(60),
        Expect::refused(&["FIFO", "not a regular file"]),
    );
}

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

// ---- 14. a large source: edits linear in its size ------------------------------

#[test]
fn item14_a_two_megabyte_source_splits() {
    let sb = Sandbox::new();
    sb.driver("drv");
    // 2 MB of small functions after the fixture: each is rewritten (hints
    // and line markers), none isolated.
    let mut c = hostile_common::DRIVER.to_string();
    let mut i = 0;
    while c.len() < 2 << 20 {
        c.push_str(&format!(
            "\nstatic int filler_{i}(int a)\n{{\n\treturn a * {i} + 1;\n}}\n"
        ));
        i += 1;
    }
    sb.write("drv/drv.c", c);
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])).timeout(300),
        Expect::ok("out"),
    );
    assert_complete(&sb.path("out"));
}

// ---- 16. syntax errors --------------------------------------------------------

#[test]
fn item16_an_isolated_function_inside_an_unterminated_comment() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let c = hostile_common::DRIVER.replace(
        "static u32 drv_get_msglevel",
        "/* this comment never ends\nstatic u32 drv_get_msglevel",
    );
    sb.write("drv/drv.c", c);
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])),
        Expect::refused_out(&["comment never ends"], "out"),
    );
}

#[test]
fn item16_garbage_inside_an_isolated_function() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let c = hostile_common::DRIVER.replace("\ta->count++;", "\ta->count++;\n@@@ @@@ @@@");
    sb.write("drv/drv.c", c);
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])),
        Expect::refused_out(&["drv_set_msglevel", "does not parse"], "out"),
    );
}

#[test]
fn item16_cpp_saved_as_c() {
    let sb = Sandbox::new();
    sb.driver("drv");
    // The isolated functions written as C++ (a reference parameter, a
    // member function call on a class).
    let c = hostile_common::DRIVER
        .replace(
            "static void drv_set_msglevel(struct net_device *netdev, u32 data)",
            "static void drv_set_msglevel(struct net_device &netdev, u32 data)",
        )
        .replace(
            "\tstruct adapter *a = netdev_priv(netdev);\n\n\ta->msg_enable = data;",
            "\tauto a = std::make_unique<adapter>();\n\n\ta->msg_enable = data;",
        );
    sb.write("drv/drv.c", c);
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])),
        Expect::refused_out(&["does not parse", "drv_set_msglevel"], "out"),
    );
}

#[test]
fn item16_garbage_outside_the_closure_is_a_warning() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write(
        "drv/drv.c",
        format!("{}\n@@@ not C @@@\n", hostile_common::DRIVER),
    );
    let o = case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])),
        Expect::ok("out"),
    );
    assert!(o.stderr.contains("do not parse"), "{}", o.stderr);
    assert!(hostile_common::has_location(&o.stderr), "{}", o.stderr);
}

// ---- 17. module names ---------------------------------------------------------

#[test]
fn item17_a_directory_name_kbuild_rejects() {
    let sb = Sandbox::new();
    sb.driver("dïr ü");
    std::fs::remove_file(sb.path("dïr ü/Makefile")).unwrap();
    case(
        fgft(&sb, &args(&["split", "dïr ü", "-o", "out"])),
        Expect::refused(&["module name", "dïr ü", "--module"]),
    );
}

#[test]
fn item17_a_module_name_that_escapes_out() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(
            &sb,
            &args(&["split", "drv", "-o", "out", "--module", "../../escape"]),
        ),
        Expect::refused(&["module name", "../../escape"]),
    );
}

// ---- 18. the sidecar's module name ------------------------------------------

#[test]
fn item18_the_sidecars_module_is_honoured_with_a_source_directory() {
    let sb = Sandbox::new();
    sb.driver("drv");
    std::fs::remove_file(sb.path("drv/Makefile")).unwrap();
    sb.write(
        "side.toml",
        "[driver]\nname = \"drv\"\nmodule = \"sidemod\"\nbase = \"sidecar\"\nsources = [\"drv/drv.c\"]\n",
    );
    case(
        fgft(
            &sb,
            &args(&["split", "drv", "--annotations", "side.toml", "-o", "out"]),
        ),
        Expect::ok("out"),
    );
    let kbuild = std::fs::read_to_string(sb.path("out/Kbuild")).unwrap();
    assert!(
        kbuild.contains("obj-m += sidemod_fgft.o sidemod_sfi.o"),
        "{kbuild}"
    );
}

// ---- 19. --kdir ------------------------------------------------------------------

/// `$KDIR` (scripts/setup.sh), else the newest generic headers installed.
fn kdir() -> std::path::PathBuf {
    let k = std::env::var_os("KDIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            let mut v: Vec<_> = std::fs::read_dir("/usr/src")
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy().into_owned();
                    n.starts_with("linux-headers-") && n.ends_with("-amd64") && !n.contains("-rt-")
                })
                .collect();
            v.sort();
            v.pop().unwrap_or_default()
        });
    assert!(
        k.join("Makefile").is_file(),
        "kernel headers not found at {} (run scripts/setup.sh)",
        k.display()
    );
    k
}

#[test]
fn item19_a_relative_kdir_is_made_absolute() {
    let sb = Sandbox::new();
    sb.driver("drv");
    std::os::unix::fs::symlink(kdir(), sb.path("kd")).unwrap();
    case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "out",
                "--kdir",
                "kd",
                "--no-checkpoint",
                "--isolate",
                "ethtool_ops.*",
            ],
        ),
        Expect::ok("out"),
    );
    let mk = std::fs::read_to_string(sb.path("out/Makefile")).unwrap();
    let line = mk
        .lines()
        .find(|l| l.starts_with("KDIR ?="))
        .expect("a KDIR line");
    let k = line.trim_start_matches("KDIR ?=").trim();
    assert!(std::path::Path::new(k).is_absolute(), "{line}");
    assert!(std::path::Path::new(k).join("Makefile").is_file(), "{line}");
}

#[test]
fn item19_a_kdir_that_is_not_a_kernel_build_directory() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("notk/README", "not a kernel\n");
    let base = ["split", "drv", "-o", "out", "--no-checkpoint", "--kdir"];
    let mut a = base.to_vec();
    a.push("/nonexistent");
    case(
        fgft(&sb, &a),
        Expect::refused(&["--kdir", "/nonexistent", "No such file"]),
    );
    let mut a = base.to_vec();
    a.push("notk");
    case(
        fgft(&sb, &a),
        Expect::refused(&["not a kernel build directory"]),
    );
}

// ---- 20. accepted means it compiles, with or without --kdir -------------------

fn upstream(rel: &str) -> String {
    let p = roots_common::src612().join(rel);
    assert!(p.is_file(), "{}", p.display());
    p.display().to_string()
}

#[test]
fn item20_without_headers_a_copy_of_kernel_members_is_refused() {
    for drv in [
        "drivers/net/ethernet/sis/sis900.c",
        "drivers/net/ethernet/natsemi/natsemi.c",
    ] {
        let sb = Sandbox::new();
        let src = upstream(drv);
        case(
            fgft(
                &sb,
                &[
                    "split",
                    &src,
                    "-o",
                    "out",
                    "--no-kdir",
                    "--no-checkpoint",
                    "--isolate",
                    "ethtool_ops.*",
                ],
            ),
            Expect::refused(&["only the kernel's headers tell", "--kdir"]),
        );
    }
}

#[test]
fn item20_with_the_default_headers_sis900_builds() {
    let sb = Sandbox::new();
    let src = upstream("drivers/net/ethernet/sis/sis900.c");
    // No --kdir: the running kernel's headers, or the newest installed.
    let o = case(
        fgft(
            &sb,
            &[
                "split",
                &src,
                "-o",
                "out",
                "--no-checkpoint",
                "--isolate",
                "ethtool_ops.*",
                "--check",
            ],
        )
        .timeout(600),
        Expect::ok("out"),
    );
    assert!(o.stdout.contains("builds with no warning"), "{}", o.stdout);
    // The check built OUT's staging directory before it was put in place:
    // the modules are there, and the manifest lists them with the rest.
    assert_complete(&sb.path("out"));
    assert!(sb.path("out/sis900_fgft.ko").is_file());
    assert!(sb.path("out/sis900_sfi.ko").is_file());
}

#[test]
fn item20_check_without_any_headers_is_refused() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out", "--check"])),
        Expect::refused(&["--check", "no kernel build directory"]),
    );
}

// ---- 21. diagnostics ------------------------------------------------------------

#[test]
fn item21_a_bad_isolate_pattern_is_shown() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let o = case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "out",
                "--no-kdir",
                "--isolate",
                "ethtool_ops.[",
            ],
        ),
        Expect::refused(&["bad function pattern", "unclosed"]),
    );
    assert!(o.stderr.contains("--isolate ethtool_ops.["), "{}", o.stderr);
    assert!(!o.stderr.contains("<command line>:1:1:"), "{}", o.stderr);
}

#[test]
fn item21_a_slot_pattern_that_matches_nothing() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "out",
                "--no-kdir",
                "--isolate",
                "nosuch_ops.*",
            ],
        ),
        Expect::refused(&["nosuch_ops.*", "matches no slot"]),
    );
    // A slot that exists, but that this driver does not fill.
    case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "out",
                "--no-kdir",
                "--isolate",
                "net_device_ops.*",
            ],
        ),
        Expect::refused(&["nothing to isolate"]),
    );
}

#[test]
fn item21_an_unknown_profile_is_shown() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "out",
                "--no-kdir",
                "--profile",
                "storage",
            ],
        ),
        Expect::refused(&["unknown isolation profile", "management"]),
    );
}

#[test]
fn item21_a_nul_byte_is_located() {
    let sb = Sandbox::new();
    sb.driver("drv");
    let mut c = hostile_common::DRIVER.as_bytes().to_vec();
    let at = c.len() - 3;
    c.insert(at, 0);
    sb.write("drv/drv.c", c);
    let o = case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])),
        Expect::refused(&["NUL"]),
    );
    assert!(!o.stderr.contains("drv.c:1:1"), "{}", o.stderr);
}

#[test]
fn item21_a_parse_budget_that_is_not_a_number() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "out"])).env("FGFT_PARSE_BUDGET_MS", "abc"),
        Expect::refused(&["FGFT_PARSE_BUDGET_MS", "abc"]),
    );
}

#[test]
fn item21_a_kernel_version_that_is_not_one() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(
            &sb,
            &args(&["split", "drv", "-o", "out", "--kernel-version", "zz..9"]),
        ),
        Expect::refused(&["zz..9", "not a kernel version"]),
    );
}

// ---- OUT itself ------------------------------------------------------------------

#[test]
fn out_a_regular_file_or_a_symbolic_link_is_refused() {
    let sb = Sandbox::new();
    sb.driver("drv");
    sb.write("afile", "mine\n");
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "afile"])),
        Expect::refused(&["afile", "not a directory"]),
    );
    sb.mkdir("empty");
    std::os::unix::fs::symlink("empty", sb.path("alink")).unwrap();
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "alink", "--force"])),
        Expect::refused(&["alink", "symbolic link"]),
    );
}

#[test]
fn out_a_refused_run_leaves_no_parent_directories_behind() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(
            &sb,
            &[
                "split",
                "drv",
                "-o",
                "new/deep/out",
                "--no-kdir",
                "--isolate",
                "nosuch.*",
            ],
        ),
        Expect::refused(&["nosuch.*"]),
    );
    assert!(!sb.path("new").exists());
}

#[test]
fn out_a_fresh_split_is_complete() {
    let sb = Sandbox::new();
    sb.driver("drv");
    case(
        fgft(&sb, &args(&["split", "drv", "-o", "a/b/out"])),
        Expect::ok("a/b/out"),
    );
    assert_complete(&sb.path("a/b/out"));
    // Nothing of the staging left beside it.
    let names: Vec<_> = std::fs::read_dir(sb.path("a/b"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("out")]);
}
