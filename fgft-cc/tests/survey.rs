//! `fgft-cc survey` over a mini kernel tree of our own
//! (tests/fixtures/survey/tree): Makefile grouping, C and Rust drivers,
//! a malformed function, a binary file and a Rust syntax error.  The table,
//! the JSON report and the diagnostics are golden; the JSON's shape is held
//! separately so a schema change is always a deliberate one.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn fixtures() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/survey"
    ))
}

/// Runs `fgft-cc survey tree ARGS` in the fixtures directory, against the
/// fixture's own compensation table (the built-in one grows all the time).
fn survey(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fgft-cc"))
        .current_dir(fixtures())
        .arg("survey")
        .arg("tree")
        .args(["--api-table", "compensations.toml"])
        .args(args)
        .env("NO_COLOR", "1")
        .env("TERM", "dumb")
        .env_remove("FGFT_TABLES")
        .env_remove("FGFT_PARSE_BUDGET_MS")
        .output()
        .expect("fgft-cc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json() -> Value {
    let (code, out, err) = survey(&["--json", "-", "-j", "2"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("the report is JSON")
}

#[test]
fn survey_table() {
    let (code, out, err) = survey(&["-j", "2"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("survey_table", out);
    insta::assert_snapshot!("survey_diagnostics", err);
}

#[test]
fn survey_json() {
    let v = json();
    insta::assert_snapshot!(
        "survey_json",
        serde_json::to_string_pretty(&v).expect("serializes")
    );
}

#[test]
fn survey_is_deterministic_across_thread_counts() {
    let (_, one, _) = survey(&["--json", "-", "-j", "1"]);
    let (_, two, _) = survey(&["--json", "-", "-j", "2"]);
    let (_, four, _) = survey(&["--json", "-", "-j", "4"]);
    assert_eq!(one, two);
    assert_eq!(one, four);
}

/// What the fixture must show, independent of the snapshot's formatting.
#[test]
fn survey_facts() {
    let v = json();
    let module = |name: &str| -> Value {
        v["modules"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no module {name}"))
    };
    // Makefile grouping: composite module across a continuation line and a
    // config-dependent member.
    let nic = module("fxnic/fxnic");
    let files: Vec<&str> = nic["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        files,
        [
            "fxnic/fxnic_debug.c",
            "fxnic/fxnic_ethtool.c",
            "fxnic/fxnic_hw.c",
            "fxnic/fxnic_main.c"
        ]
    );
    assert_eq!(nic["configs"], serde_json::json!(["CONFIG_FX_NIC"]));
    assert_eq!(nic["pm"]["checkpoint"], true);
    assert_eq!(nic["verdict"], "needs-annotations");
    let apis: Vec<&str> = nic["unknown_apis"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    // Known to the compensation table: kzalloc, kfree. Driver macros from
    // the local header (fx_rd, fx_wr) and driver functions are not APIs.
    assert!(apis.contains(&"register_netdev"), "{apis:?}");
    for not in [
        "kzalloc",
        "kfree",
        "fx_rd",
        "fx_wr",
        "fxnic_hw_reset",
        "fxnic_read_reg",
    ] {
        assert!(!apis.contains(&not), "{not} listed: {apis:?}");
    }
    let hints: Vec<(&str, &str)> = nic["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["field"].as_str().unwrap(), h["hint"].as_str().unwrap()))
        .collect();
    assert!(hints.contains(&("fxnic_priv.rx_buf", "blob(LEN)")));
    assert!(hints.contains(&("fxnic_priv.fw_name", "nullterm")));
    // regs is an array member: sized, no hint; mmio is __iomem: passed
    // through, no hint.
    assert!(!hints.iter().any(|(f, _)| *f == "fxnic_priv.regs"));
    assert!(!hints.iter().any(|(f, _)| *f == "fxnic_priv.mmio"));
    assert_eq!(
        nic["library_slots"], 2,
        "eth_validate_addr, ethtool_op_get_link"
    );

    let core = module("fxcore");
    assert_eq!(core["kind"], "builtin");
    assert_eq!(core["verdict"], "parse-blocked");
    assert_eq!(core["parse"]["broken"][0]["function"], "fxcore_bad");

    let ch = module("fxchar");
    assert_eq!(ch["verdict"], "no-checkpoint");
    assert_eq!(ch["parse"]["broken"][0]["function"], "fxchar_unused");

    let rs = module("fxphy_rust");
    assert_eq!(rs["rust"], true);
    assert_eq!(rs["pm"]["checkpoint"], true);
    let fns: Vec<&str> = rs["entry_points"]["rust"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["function"].as_str())
        .collect();
    assert!(fns.contains(&"FxPhy::read_status") && fns.contains(&"FxPhyLite::soft_reset"));
    assert!(
        fns.contains(&"FxPhy") && fns.contains(&"FxPhyLite"),
        "{fns:?}"
    );

    for (name, kind) in [("junk/blob.c", "not-source"), ("junk/bad.rs", "syntax")] {
        let m = module(name);
        assert_eq!(m["kind"], "unassigned");
        assert_eq!(m["parse"]["failed_files"][0]["kind"], kind);
    }
    assert_eq!(v["totals"]["unassigned_files"], 3);
}

/// A budget too small for any file: every C file gets a located diagnostic,
/// the survey still completes with exit code 0.
#[test]
fn survey_budget_diagnostics() {
    let (code, out, err) = survey(&["--budget-ms", "0", "--json", "-"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let budget = v["totals"]["failed_files"]["budget"].as_u64().unwrap_or(0);
    assert!(budget >= 5, "{}", v["totals"]);
    assert!(err.contains("parse budget exceeded"), "{err}");
    assert!(err.contains("fxnic_main.c"), "{err}");
}

/// Objects whose keys are data (slot kinds, failure kinds, verdicts).
const KEYED_BY_DATA: &[&str] = &["entry_points", "failed_files", "verdicts"];

/// Reduces a JSON value to its shape: objects keep their keys, arrays the
/// union of their elements' shapes, scalars their type.
fn shape(v: &Value) -> Value {
    shape_in("", v)
}

fn shape_in(key: &str, v: &Value) -> Value {
    match v {
        Value::Null => Value::String("null".into()),
        Value::Bool(_) => Value::String("bool".into()),
        Value::Number(n) => Value::String(if n.is_f64() { "float" } else { "int" }.into()),
        Value::String(_) => Value::String("string".into()),
        Value::Array(a) => {
            let mut merged: Option<Value> = None;
            for x in a {
                let s = shape_in("", x);
                merged = Some(match merged {
                    None => s,
                    Some(m) => merge(m, s),
                });
            }
            Value::Array(merged.into_iter().collect())
        }
        Value::Object(o) => {
            // Maps keyed by data have one value shape.
            if KEYED_BY_DATA.contains(&key) {
                let mut merged: Option<Value> = None;
                for x in o.values() {
                    let s = shape_in("", x);
                    merged = Some(match merged {
                        None => s,
                        Some(m) => merge(m, s),
                    });
                }
                let mut m = serde_json::Map::new();
                m.insert("<key>".into(), merged.unwrap_or(Value::Null));
                Value::Object(m)
            } else {
                Value::Object(o.iter().map(|(k, x)| (k.clone(), shape_in(k, x))).collect())
            }
        }
    }
}

fn merge(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut x), Value::Object(y)) => {
            for (k, v) in y {
                let nv = match x.remove(&k) {
                    Some(old) => merge(old, v),
                    None => v,
                };
                x.insert(k, nv);
            }
            Value::Object(x)
        }
        (Value::Array(x), Value::Array(y)) => {
            let all: Vec<Value> = x.into_iter().chain(y).collect();
            let mut m: Option<Value> = None;
            for v in all {
                m = Some(match m {
                    None => v,
                    Some(p) => merge(p, v),
                });
            }
            Value::Array(m.into_iter().collect())
        }
        (Value::String(x), Value::String(y)) if x != y => {
            let mut parts: Vec<String> =
                x.split('|').chain(y.split('|')).map(String::from).collect();
            parts.sort();
            parts.dedup();
            Value::String(parts.join("|"))
        }
        (a, _) => a,
    }
}

#[test]
fn survey_json_schema() {
    let v = json();
    assert_eq!(v["schema"], "fgft-survey/1");
    insta::assert_snapshot!(
        "survey_json_schema",
        serde_json::to_string_pretty(&shape(&v)).unwrap()
    );
}

/// `--profile`: a module's verdict for an isolation profile is split's own
/// answer for that profile with no sidecar (ready exactly when split
/// accepts it), and an unknown profile is an error.
#[test]
fn survey_profile_verdicts_follow_split() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("corpus/drivers");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fgft-cc"))
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("FGFT_TABLES")
            .output()
            .expect("fgft-cc runs")
    };
    let d = dir.to_str().unwrap();
    let out = run(&["survey", d, "--profile", "ethtool", "--json", "-"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = v["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "fgft_ne2k/fgft_ne2k")
        .unwrap_or_else(|| panic!("no fgft_ne2k module in {v}"));
    let pv = &m["profiles"]["ethtool"];
    // The same split, run directly.
    let t = tempfile::tempdir().unwrap();
    let o = t.path().join("out");
    let ne2k = dir.join("fgft_ne2k");
    let split = run(&[
        "split",
        ne2k.to_str().unwrap(),
        "--profile",
        "ethtool",
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(pv["ready"], split.status.success(), "{pv} vs {split:?}");
    let bad = run(&["survey", d, "--profile", "nosuch"]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("unknown isolation profile `nosuch`"), "{err}");
}

/// `--sarif FILE`: the findings as a SARIF 2.1.0 log (read back with
/// serde-sarif's schema-generated types), each unknown kernel function at
/// the first call the JSON report names, relative to the tree's base URI.
#[test]
fn survey_sarif() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("survey.sarif");
    let (code, _out, err) = survey(&["--sarif", file.to_str().unwrap(), "-j", "2"]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    let _: serde_sarif::sarif::Sarif =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not SARIF 2.1.0: {e}\n{text}"));
    let log: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert!(run["originalUriBaseIds"]["SRCROOT"]["uri"]
        .as_str()
        .is_some_and(|u| u.starts_with("file:///") && u.ends_with("/tree/")));
    let report = json();
    let nic = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "fxnic/fxnic")
        .unwrap();
    let need = nic["unknown_apis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "register_netdev")
        .unwrap();
    let (f, line) = need["at"].as_str().unwrap().rsplit_once(':').unwrap();
    let r = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["message"]["text"].as_str().is_some_and(|m| {
                m.contains("module fxnic/fxnic: kernel function `register_netdev`")
            })
        })
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(r["ruleId"], "fgft/unknown-kernel-api");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], f);
    assert_eq!(loc["artifactLocation"]["uriBaseId"], "SRCROOT");
    assert_eq!(loc["region"]["startLine"], line.parse::<u64>().unwrap());
    // One result per need of every module.
    let needs: usize = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["unknown_apis"].as_array().unwrap().len() + m["hints"].as_array().unwrap().len())
        .sum();
    assert!(run["results"].as_array().unwrap().len() >= needs);
}
