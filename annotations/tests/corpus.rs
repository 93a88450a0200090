//! Checks every sidecar under corpus/drivers/ and corpus/upstream/ against the sources it names:
//!
//! * it parses;
//! * every file it names exists (under $SRC612 for tree-relative drivers,
//!   and under $SRC61 for the lists in force for 6.1, when that tree is
//!   there);
//! * every isolate and exclude pattern matches a function *defined* in those
//!   sources (tree-sitter over the files), on each tree version checked;
//! * every hinted function is defined and has the hinted parameter, every
//!   hinted struct defined in the sources has the hinted field, and the
//!   checkpoint/restore functions are defined;
//! * each driver isolates at least 8 functions.
//!
//! Drivers kept beside their sidecar (`base = "sidecar"`) also contribute
//! their inline FGFT_* annotations.
//!
//! Without a 6.12 tree (SRC612 unset and no ~/.cache/fgft/linux-6.12) the
//! tree-relative checks are skipped with a message; CI always has the tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use fgft_annotations::{inline, Annotations, HintTarget, SourceBase};

const MIN_ISOLATED: usize = 8;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

fn tree(var: &str, cache_name: &str) -> Option<PathBuf> {
    let p = match std::env::var_os(var) {
        Some(v) => PathBuf::from(v),
        None => PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache/fgft")
            .join(cache_name),
    };
    p.join("Makefile").is_file().then_some(p)
}

fn sidecars(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sidecars(&p, out);
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
}

/// What the sources define.
#[derive(Default)]
struct Defs {
    /// function name -> parameter names
    functions: BTreeMap<String, Vec<String>>,
    /// struct name -> field names
    structs: BTreeMap<String, BTreeSet<String>>,
}

fn declared_name(pf: &fgft_parse::ParsedFile, mut d: tree_sitter::Node<'_>) -> Option<String> {
    loop {
        match d.kind() {
            "identifier" | "field_identifier" => return Some(pf.node_text(d).to_string()),
            "pointer_declarator"
            | "array_declarator"
            | "function_declarator"
            | "parenthesized_declarator"
            | "attributed_declarator" => {
                d = d
                    .child_by_field_name("declarator")
                    .or_else(|| d.named_child(0))?;
            }
            _ => return None,
        }
    }
}

fn function_params(pf: &fgft_parse::ParsedFile, def: tree_sitter::Node<'_>) -> Vec<String> {
    let mut d = def.child_by_field_name("declarator");
    while let Some(n) = d {
        if n.kind() == "function_declarator" {
            let mut out = Vec::new();
            if let Some(list) = n.child_by_field_name("parameters") {
                let mut c = list.walk();
                for p in list.named_children(&mut c) {
                    if let Some(name) = p
                        .child_by_field_name("declarator")
                        .and_then(|d| declared_name(pf, d))
                    {
                        out.push(name);
                    }
                }
            }
            return out;
        }
        d = n.child_by_field_name("declarator");
    }
    Vec::new()
}

fn struct_fields(
    pf: &fgft_parse::ParsedFile,
    body: tree_sitter::Node<'_>,
    out: &mut BTreeSet<String>,
) {
    let mut c = body.walk();
    for f in body.named_children(&mut c) {
        if f.kind() != "field_declaration" {
            continue;
        }
        let mut c2 = f.walk();
        let decls: Vec<_> = f.children_by_field_name("declarator", &mut c2).collect();
        if decls.is_empty() {
            // anonymous struct/union member: its fields are ours
            if let Some(inner) = f
                .child_by_field_name("type")
                .and_then(|t| t.child_by_field_name("body"))
            {
                struct_fields(pf, inner, out);
            }
        }
        for d in decls {
            if let Some(n) = declared_name(pf, d) {
                out.insert(n);
            }
        }
    }
}

fn collect_defs(file: &Path, defs: &mut Defs) -> Result<(), String> {
    let pf = fgft_parse::parse_file(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut stack = vec![pf.tree.root_node()];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "function_definition" => {
                if let Some(name) = fgft_parse::function_name(&pf, n) {
                    defs.functions
                        .entry(name.to_string())
                        .or_insert_with(|| function_params(&pf, n));
                }
                continue;
            }
            "struct_specifier" | "union_specifier" => {
                if let (Some(name), Some(body)) =
                    (n.child_by_field_name("name"), n.child_by_field_name("body"))
                {
                    let fields = defs
                        .structs
                        .entry(pf.node_text(name).to_string())
                        .or_default();
                    struct_fields(&pf, body, fields);
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    Ok(())
}

/// The slots (`struct.field`) each function of `sources` is stored in.
fn slots_of(sources: &[PathBuf]) -> BTreeMap<String, Vec<String>> {
    let dirs = fgft_parse::tables::TableDirs::none();
    let table = fgft_facts::slots::SlotTable::load(&dirs).expect("slot table");
    let popts = fgft_parse::Options {
        hints: Some(std::sync::Arc::new(
            fgft_parse::HintTable::load(&dirs).expect("macro hints"),
        )),
        budget: Default::default(),
    };
    let cache = fgft_facts::headers::HeaderCache::new(&popts);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for src in sources {
        let Ok(pf) = fgft_parse::parse_file_with(src, &popts) else {
            continue;
        };
        let facts = cache.facts_with_headers(&pf);
        for r in fgft_facts::slots::roots(&pf, &facts, &table) {
            let v = out.entry(r.function.clone()).or_default();
            let sl = format!("{}.{}", r.struct_name, r.field);
            if !v.contains(&sl) {
                v.push(sl);
            }
        }
    }
    out
}

/// Checks one sidecar against one tree (None: sidecar-relative driver) for
/// one kernel version. Returns the problems found and the isolated
/// functions.
fn check_one(path: &Path, tree: Option<&Path>, version: &str) -> Result<Vec<String>, Vec<String>> {
    let mut problems = Vec::new();
    let annots = Annotations::from_sidecar(path).map_err(|e| vec![e.to_string()])?;
    let Some(driver) = annots.driver.clone() else {
        return Err(vec![format!("{}: no [driver] section", path.display())]);
    };
    let files = driver
        .resolve(tree, Some(version))
        .map_err(|e| vec![e.to_string()])?;
    let mut annots = annots;
    if matches!(driver.base, SourceBase::Sidecar(_)) {
        for src in &files.sources {
            match inline::scan_file(src).and_then(|inl| annots.clone().merge(inl)) {
                Ok(m) => annots = m,
                Err(e) => problems.push(e.to_string()),
            }
        }
    }
    let mut defs = Defs::default();
    for f in files.sources.iter().chain(&files.headers) {
        if let Err(e) = collect_defs(f, &mut defs) {
            problems.push(e);
        }
    }
    let names: Vec<&str> = defs.functions.keys().map(String::as_str).collect();
    // Each function with the slots it is stored in (`ethtool_ops.get_regs`),
    // for slot patterns, from fgft's own slot finder.
    let slots = slots_of(&files.sources);
    let defined: Vec<(&str, Vec<String>)> = names
        .iter()
        .map(|n| (*n, slots.get(*n).cloned().unwrap_or_default()))
        .collect();
    for p in annots.unmatched_entries(&defined) {
        problems.push(format!(
            "{}: pattern `{}` matches no function defined in the {version} sources of {}",
            p.loc,
            p.text(),
            driver.name
        ));
    }
    for h in &annots.hints {
        match &h.target {
            HintTarget::Param { function, param } => match defs.functions.get(function) {
                None => problems.push(format!(
                    "{}: hinted function `{function}` is not defined in the {version} sources",
                    h.loc
                )),
                Some(params) if !params.contains(param) => problems.push(format!(
                    "{}: `{function}` has no parameter `{param}` (it has: {})",
                    h.loc,
                    params.join(", ")
                )),
                _ => {}
            },
            HintTarget::Field { strukt, field } => {
                if let Some(fields) = defs.structs.get(strukt) {
                    if !fields.contains(field) {
                        problems.push(format!(
                            "{}: struct {strukt} has no field `{field}` in the {version} sources",
                            h.loc
                        ));
                    }
                }
            }
        }
    }
    for f in annots.checkpoint.iter().chain(&annots.restore) {
        if !defs.functions.contains_key(&f.name) {
            problems.push(format!(
                "{}: `{}` is not defined in the sources",
                f.loc, f.name
            ));
        }
    }
    let isolated = annots.isolated_entries(&defined);
    if isolated.len() < MIN_ISOLATED {
        problems.push(format!(
            "{}: {} isolates {} functions on {version}, fewer than {MIN_ISOLATED}: {}",
            path.display(),
            driver.name,
            isolated.len(),
            isolated.join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(isolated.into_iter().map(str::to_string).collect())
    } else {
        Err(problems)
    }
}

#[test]
fn every_sidecar_matches_its_sources() {
    // Sidecars live in corpus/drivers/<name>/ and corpus/upstream/; other
    // TOML files under corpus/ (campaign configurations) are not sidecars.
    let mut files = Vec::new();
    sidecars(&corpus_dir().join("drivers"), &mut files);
    sidecars(&corpus_dir().join("upstream"), &mut files);
    assert!(
        files.len() >= 8,
        "expected the 6 upstream and 2 own sidecars under {}, found {files:?}",
        corpus_dir().display()
    );
    let t612 = tree("SRC612", "linux-6.12");
    let t61 = tree("SRC61", "linux-6.1");
    if t612.is_none() {
        eprintln!(
            "SKIP: no linux-6.12 tree (set SRC612 or run scripts/setup.sh): \
             tree-relative sidecars are only parsed"
        );
    }
    if t61.is_none() {
        eprintln!("SKIP: no linux-6.1 tree (set SRC61): 6.1 lists not checked");
    }
    let mut problems = Vec::new();
    for f in &files {
        let a = match Annotations::from_sidecar(f) {
            Ok(a) => a,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        let tree_relative = matches!(
            a.driver.as_ref().map(|d| &d.base),
            Some(SourceBase::Tree) | None
        );
        let runs: Vec<(Option<&Path>, &str)> = if tree_relative {
            let mut r = Vec::new();
            if let Some(t) = &t612 {
                r.push((Some(t.as_path()), "6.12"));
            }
            if let Some(t) = &t61 {
                r.push((Some(t.as_path()), "6.1"));
            }
            r
        } else {
            vec![(None, "6.12")]
        };
        for (tree, version) in runs {
            match check_one(f, tree, version) {
                Ok(isolated) => eprintln!(
                    "{} ({version}): {} isolated entry points",
                    f.strip_prefix(corpus_dir()).unwrap_or(f).display(),
                    isolated.len()
                ),
                Err(p) => problems.extend(p),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "corpus problems:\n{}",
        problems.join("\n")
    );
}

/// The checker finds each kind of problem (so the test above can fail).
#[test]
fn checker_reports_problems() {
    let dir = std::env::temp_dir().join(format!("fgft-corpus-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("d.c"),
        "struct d_priv {\n\tint a;\n};\n\
         int d_get_a(struct d_priv *p)\n{\n\treturn p->a;\n}\n\
         FGFT_ISOLATE\nint d_set_a(struct d_priv *p, int v)\n{\n\tp->a = v;\n\treturn 0;\n}\n",
    )
    .unwrap();
    let side = dir.join("d.toml");
    let write = |body: &str| {
        std::fs::write(
            &side,
            format!("[driver]\nname = \"d\"\nbase = \"sidecar\"\nsources = [\"d.c\"]\n{body}"),
        )
        .unwrap()
    };

    write("[isolate]\nentry = [\"d_get_*\", \"d_reset\"]\n");
    let p = check_one(&side, None, "6.12").unwrap_err();
    let all = p.join("\n");
    assert!(
        all.contains("pattern `d_reset` matches no function"),
        "{all}"
    );
    assert!(all.contains("isolates 2 functions"), "{all}");
    assert!(!all.contains("`d_get_*`"), "{all}");

    write(
        "[[hint]]\nfunction = \"d_set_a\"\nparam = \"w\"\nkind = \"nullterm\"\n\
           [[hint]]\nfunction = \"d_nope\"\nparam = \"p\"\nkind = \"nullterm\"\n\
           [[hint]]\nstruct = \"d_priv\"\nfield = \"b\"\nkind = \"noderef\"\n\
           [checkpoint]\nrestore = \"d_restore\"\n",
    );
    let all = check_one(&side, None, "6.12").unwrap_err().join("\n");
    assert!(
        all.contains("`d_set_a` has no parameter `w` (it has: p, v)"),
        "{all}"
    );
    assert!(all.contains("`d_nope` is not defined"), "{all}");
    assert!(all.contains("struct d_priv has no field `b`"), "{all}");
    assert!(all.contains("`d_restore` is not defined"), "{all}");

    std::fs::write(
        &side,
        "[driver]\nname = \"d\"\nbase = \"sidecar\"\nsources = [\"d.c\", \"gone.c\"]\n",
    )
    .unwrap();
    let all = check_one(&side, None, "6.12").unwrap_err().join("\n");
    assert!(all.contains("d.toml:4:") && all.contains("gone.c"), "{all}");

    // A driver that isolates enough passes.
    let fns: String = (0..8)
        .map(|i| format!("int d_get_{i}(void)\n{{\n\treturn {i};\n}}\n"))
        .collect();
    std::fs::write(dir.join("d.c"), fns).unwrap();
    write("[isolate]\nentry = [\"d_get_*\"]\n");
    assert_eq!(check_one(&side, None, "6.12").unwrap().len(), 8);
    std::fs::remove_dir_all(&dir).unwrap();
}
