//! Unit tests: the sidecar reader, the inline scanner, merging, and one
//! test per error kind.

use std::path::Path;

use crate::*;

fn side(text: &str) -> Result<Annotations, AnnotError> {
    parse_sidecar_str("dir/x.toml", text)
}

fn side_err(text: &str) -> AnnotError {
    match side(text) {
        Ok(a) => panic!("accepted bad sidecar:\n{text}\n=> {a:?}"),
        Err(e) => e,
    }
}

fn line_col(e: &AnnotError) -> (usize, usize) {
    let l = e.loc().expect("error has a location");
    (l.line, l.col)
}

/// The example of README.md parses and means what the README says.
#[test]
fn readme_example_parses() {
    let readme = include_str!("../README.md");
    let start = readme.find("```toml\n").expect("toml block") + 8;
    let len = readme[start..].find("```").expect("end of block");
    let a = parse_sidecar_str("corpus/upstream/e1000.toml", &readme[start..start + len])
        .unwrap_or_else(|e| panic!("{e}"));
    let d = a.driver.as_ref().unwrap();
    assert_eq!(d.name, "e1000");
    assert_eq!(d.module, "e1000");
    assert_eq!(d.base, SourceBase::Tree);
    assert_eq!(d.tree_version.as_deref(), Some("6.12"));
    assert_eq!(d.sources.len(), 4);
    assert_eq!(d.headers.len(), 2);
    assert_eq!(d.sources_for(Some("6.1")).len(), 1);
    assert_eq!(d.sources_for(Some("6.12")).len(), 4);
    assert_eq!(d.sources_for(None).len(), 4);
    assert!(a.is_isolated("e1000_get_regs"));
    assert!(a.is_isolated("e1000_set_ringparam"));
    assert!(!a.is_isolated("e1000_set_regs"));
    assert!(!a.is_isolated("e1000_get_stats64"), "excluded");
    assert_eq!(a.hints.len(), 10);
    let owner: Vec<_> = a.field_hints("ifb_dev_private", "tx_private").collect();
    assert_eq!(
        owner[0].kind,
        HintKind::Blob {
            len: format!(
                "{}->num_tx_queues * sizeof(struct ifb_q_private)",
                crate::OWNER_NETDEV
            )
        }
    );
    let sh: Vec<_> = a.field_hints("e1000_adapter", "rx_ring_buf").collect();
    assert_eq!(
        sh[0].kind,
        HintKind::Shared {
            len: "RX_RING_BYTES".into(),
            rights: Access::ReadWrite
        }
    );
    let p: Vec<_> = a.param_hints("e1000_get_regs", "p").collect();
    assert_eq!(
        p[0].kind,
        HintKind::Blob {
            len: "regs->len".into()
        }
    );
    assert_eq!(p[0].loc.line, 41, "the line of its [[hint]]");
    let f: Vec<_> = a.field_hints("e1000_hw", "hw_addr").collect();
    assert_eq!(f[0].kind, HintKind::NoDeref);
    assert!(a.hints.iter().any(|h| h.kind
        == HintKind::Container {
            outer: "net_device".into(),
            member: "dev".into()
        }));
    assert!(a.hints.iter().any(|h| h.kind
        == HintKind::Opaque {
            ty: "struct e1000_phy_info".into()
        }));
    assert_eq!(a.checkpoint.as_ref().unwrap().name, "e1000_fgft_checkpoint");
    assert_eq!(a.restore.as_ref().unwrap().name, "e1000_fgft_restore");
    assert_eq!(
        a.key_to_dev_of("e1000_get_regs").unwrap().expr,
        "((struct net_device *)key)->dev.parent"
    );
    assert_eq!(
        a.key_to_dev_of("e1000_show_foo").unwrap().expr,
        "((struct device *)key)->parent"
    );
    assert!(a.no_checkpoint.is_none());
    assert!(a.is_pure("ioread8"));
    assert!(!a.is_pure("kmalloc"));
    let defined = [
        "e1000_get_regs",
        "e1000_get_regs_len",
        "e1000_set_ringparam",
    ];
    let stale: Vec<&str> = a
        .unmatched_patterns(&defined)
        .iter()
        .map(|p| p.text())
        .collect();
    assert_eq!(stale, ["e1000_get_stats64"]);
    assert_eq!(
        a.isolated_among(&["e1000_get_regs", "e1000_open"]),
        ["e1000_get_regs"]
    );
}

#[test]
fn empty_sidecar_is_empty() {
    assert_eq!(side("").unwrap(), Annotations::default());
    assert_eq!(side("# nothing\n").unwrap(), Annotations::default());
}

#[test]
fn sidecar_base_is_its_directory() {
    let a = side("[driver]\nname = \"x\"\nbase = \"sidecar\"\nsources = [\"x.c\"]\n").unwrap();
    assert_eq!(a.driver.unwrap().base, SourceBase::Sidecar("dir".into()));
    let a = parse_sidecar_str(
        "x.toml",
        "[driver]\nname=\"x\"\nbase=\"sidecar\"\nsources=[\"x.c\"]",
    )
    .unwrap();
    assert_eq!(a.driver.unwrap().base, SourceBase::Sidecar(".".into()));
}

// ---- one test per error kind -------------------------------------------

#[test]
fn error_io() {
    let e = Annotations::from_sidecar(Path::new("/nonexistent/fgft/x.toml")).unwrap_err();
    assert!(matches!(e, AnnotError::Io { .. }), "{e:?}");
    assert!(e.loc().is_none());
    assert!(e.to_string().contains("/nonexistent/fgft/x.toml"));
}

#[test]
fn error_toml_syntax() {
    let e = side_err("[driver]\nname = \"x\"\nsources = [\"a.c\"\n");
    assert!(matches!(e, AnnotError::Toml { .. }), "{e:?}");
    assert!(e.to_string().starts_with("dir/x.toml:"), "{e}");
    let e = side_err("[isolate]\nentry = [\"a\"]\nentry = [\"b\"]\n");
    assert!(matches!(e, AnnotError::Toml { .. }), "{e:?}");
    assert_eq!(line_col(&e).0, 3, "{e}");
}

#[test]
fn error_toml_wrong_type() {
    let e = side_err("[driver]\nname = \"x\"\nsources = \"a.c\"\n");
    assert!(matches!(e, AnnotError::Toml { .. }), "{e:?}");
    assert_eq!(line_col(&e), (3, 11), "{e}");
    let e = side_err("[isolate]\nentry = [1]\n");
    assert_eq!(line_col(&e).0, 2, "{e}");
}

#[test]
fn error_unknown_key() {
    let e = side_err("[driver]\nname = \"x\"\nsource = [\"a.c\"]\n");
    match &e {
        AnnotError::UnknownKey { key, expected, loc } => {
            assert_eq!(key, "source");
            assert!(expected.contains(&"sources".to_string()), "{expected:?}");
            assert_eq!(loc.line, 3);
        }
        _ => panic!("{e:?}"),
    }
    assert!(e.to_string().contains("unknown key `source`"), "{e}");
    let e = side_err("[isolation]\nentry = []\n");
    assert!(
        matches!(&e, AnnotError::UnknownKey { key, .. } if key == "isolation"),
        "{e:?}"
    );
    assert_eq!(line_col(&e).0, 1);
    let e = side_err("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"blob\"\nlength = \"3\"\n");
    assert!(
        matches!(&e, AnnotError::UnknownKey { key, .. } if key == "length"),
        "{e:?}"
    );
    assert_eq!(line_col(&e).0, 5);
    let e = side_err(
        "[driver]\nname = \"x\"\nsources = [\"a.c\"]\n[driver.version.\"6.1\"]\nsrc = []\n",
    );
    assert!(
        matches!(&e, AnnotError::UnknownKey { key, .. } if key == "src"),
        "{e:?}"
    );
}

#[test]
fn error_missing_key() {
    let e = side_err("[driver]\nsources = [\"a.c\"]\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "name"),
        "{e:?}"
    );
    assert!(e.to_string().contains("[driver]"), "{e}");
    let e = side_err("[[hint]]\nstruct = \"a\"\nfield = \"b\"\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "kind"),
        "{e:?}"
    );
    let e = side_err("\n[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"blob\"\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "len"),
        "{e:?}"
    );
    assert!(line_col(&e).0 >= 2, "{e}");
    let e = side_err("[[hint]]\nstruct = \"a\"\nkind = \"nullterm\"\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "field"),
        "{e:?}"
    );
    let e = side_err("[[hint]]\nfunction = \"f\"\nkind = \"nullterm\"\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "param"),
        "{e:?}"
    );
    let e =
        side_err("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"container\"\nouter = \"o\"\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "member"),
        "{e:?}"
    );
    let e = side_err("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"opaque\"\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "type"),
        "{e:?}"
    );
}

#[test]
fn error_invalid_values() {
    let cases: &[(&str, usize, &str)] = &[
        // key that does not apply to the kind
        ("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"nullterm\"\nlen = \"4\"\n", 5, "applies only"),
        // unknown kind
        ("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"string\"\n", 4, "unknown hint kind"),
        // both targets
        ("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nfunction = \"f\"\nparam = \"p\"\nkind = \"nullterm\"\n", 1, "not both"),
        // no target
        ("[[hint]]\nkind = \"nullterm\"\n", 1, "needs"),
        // bad identifiers and expressions
        ("[[hint]]\nstruct = \"a b\"\nfield = \"b\"\nkind = \"nullterm\"\n", 2, "struct name"),
        ("[[hint]]\nstruct = \"a\"\nfield = \"b-c\"\nkind = \"nullterm\"\n", 3, "field"),
        ("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"blob\"\nlen = \"regs->\"\n", 5, "not a C expression"),
        ("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"blob\"\nlen = \"x); y = (1\"\n", 5, "not a C expression"),
        ("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"opaque\"\ntype = \"struct\"\n", 5, "not a C type"),
        ("[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"container\"\nouter = \"o\"\nmember = \"a..b\"\n", 6, "member"),
        // driver section
        ("[driver]\nname = \"x y\"\nsources = [\"a.c\"]\n", 2, "driver name"),
        ("[driver]\nname = \"x\"\nsources = []\n", 3, "lists no file"),
        ("[driver]\nname = \"x\"\nsources = [\"/abs/a.c\"]\n", 3, "relative path"),
        ("[driver]\nname = \"x\"\nsources = [\"../a.c\"]\n", 3, "relative path"),
        ("[driver]\nname = \"x\"\nsources = [\"a.h\"]\n", 3, "not a .c file"),
        ("[driver]\nname = \"x\"\nsources = [\"a.c\"]\nheaders = [\"a.s\"]\n", 4, "not a .h or .c file"),
        ("[driver]\nname = \"x\"\nbase = \"home\"\nsources = [\"a.c\"]\n", 3, "base"),
        ("[driver]\nname = \"x\"\ntree-version = \"6\"\nsources = [\"a.c\"]\n", 3, "MAJOR.MINOR"),
        ("[driver]\nname = \"x\"\nsources = [\"a.c\"]\n[driver.version.\"six\"]\nsources = [\"b.c\"]\n", 4, "MAJOR.MINOR"),
        ("[checkpoint]\ncheckpoint = \"do it\"\n", 2, "checkpoint function"),
        ("[kernel-api]\npure = [\"io*\"]\n", 2, "kernel function"),
    ];
    for (text, line, needle) in cases {
        let e = side_err(text);
        assert!(matches!(e, AnnotError::Invalid { .. }), "{text}\n=> {e:?}");
        assert_eq!(line_col(&e).0, *line, "{text}\n=> {e}");
        assert!(e.to_string().contains(needle), "{text}\n=> {e}");
    }
}

#[test]
fn error_bad_pattern() {
    for (pat, needle) in [
        ("e1000_get_[", "e1000_get_["),
        ("foo bar", "cannot appear"),
        ("", "empty"),
        ("9lives", "not a C identifier"),
        ("a/b*", "cannot appear"),
    ] {
        let e = side_err(&format!("[isolate]\nentry = [\"ok\",\n  \"{pat}\"]\n"));
        assert!(matches!(e, AnnotError::BadPattern { .. }), "{pat}: {e:?}");
        assert_eq!(line_col(&e), (3, 3), "{pat}: {e}");
        assert!(e.to_string().contains(needle), "{pat}: {e}");
    }
    let e = side_err("[isolate]\nexclude = [\"a b\"]\n");
    assert!(matches!(e, AnnotError::BadPattern { .. }), "{e:?}");
    assert!(Pattern::from_cli("x y").is_err());
}

#[test]
fn error_conflict() {
    let e = side_err(
        "[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"nullterm\"\n\
         [[hint]]\nstruct = \"struct a\"\nfield = \"b\"\nkind = \"noderef\"\n",
    );
    match &e {
        AnnotError::Conflict { loc, previous, .. } => {
            assert_eq!(previous.line, 1);
            assert_eq!(loc.line, 5);
        }
        _ => panic!("{e:?}"),
    }
    // Identical repeats are fine.
    let a = side(
        "[[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"nullterm\"\n\
                  [[hint]]\nstruct = \"a\"\nfield = \"b\"\nkind = \"nullterm\"\n",
    )
    .unwrap();
    assert_eq!(a.hints.len(), 1);
    let e = side_err("[driver]\nname = \"x\"\nsources = [\"a.c\", \"b.c\", \"a.c\"]\n");
    assert!(matches!(e, AnnotError::Conflict { .. }), "{e:?}");
    // merge: different checkpoint functions
    let a = side("[checkpoint]\ncheckpoint = \"f\"\n").unwrap();
    let b = parse_sidecar_str("y.toml", "\n[checkpoint]\ncheckpoint = \"g\"\n").unwrap();
    let e = a.clone().merge(b).unwrap_err();
    assert!(matches!(e, AnnotError::Conflict { .. }), "{e:?}");
    assert!(e.to_string().starts_with("y.toml:3:"), "{e}");
    assert!(e.to_string().contains("dir/x.toml:2"), "{e}");
    // merge: same one is fine
    let b = side("[checkpoint]\ncheckpoint = \"f\"\nrestore = \"r\"\n").unwrap();
    let m = a.merge(b).unwrap();
    assert_eq!(m.restore.unwrap().name, "r");
}

#[test]
fn error_missing_file() {
    let dir = std::env::temp_dir().join(format!("fgft-annot-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("drivers/x")).unwrap();
    std::fs::write(dir.join("drivers/x/a.c"), "int a;\n").unwrap();
    std::fs::write(dir.join("Makefile"), "VERSION = 6\nPATCHLEVEL = 1\n").unwrap();
    let a = side(
        "[driver]\nname = \"x\"\nsources = [\"drivers/x/a.c\", \"drivers/x/b.c\"]\n\
         [driver.version.\"6.1\"]\nsources = [\"drivers/x/a.c\"]\n",
    )
    .unwrap();
    let d = a.driver.unwrap();
    // The default list misses b.c ...
    let e = d.resolve(Some(&dir), Some("6.12")).unwrap_err();
    match &e {
        AnnotError::Missing { loc, path } => {
            assert_eq!((loc.line, loc.col), (3, 29));
            assert!(path.ends_with("drivers/x/b.c"));
        }
        _ => panic!("{e:?}"),
    }
    // ... the 6.1 list (picked from the tree's Makefile) does not.
    assert_eq!(tree_version(&dir).as_deref(), Some("6.1"));
    let r = d.resolve(Some(&dir), None).unwrap();
    assert_eq!(r.sources, [dir.join("drivers/x/a.c")]);
    // A tree-relative driver needs a tree.
    let e = d.resolve(None, None).unwrap_err();
    assert!(matches!(e, AnnotError::Invalid { .. }), "{e:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- patterns ----------------------------------------------------------

#[test]
fn glob_patterns() {
    let l = Loc::file_start(Path::new("t"));
    let p = Pattern::new("rtl8169_[gs]et_*", l.clone()).unwrap();
    assert!(p.matches("rtl8169_get_regs"));
    assert!(p.matches("rtl8169_set_wol"));
    assert!(!p.matches("rtl8169_reset"));
    assert!(!p.is_literal());
    let p = Pattern::new("{show,store}_*", l.clone()).unwrap();
    assert!(p.matches("show_rate") && p.matches("store_rate") && !p.matches("set_rate"));
    let p = Pattern::new("e1000_get_regs", l.clone()).unwrap();
    assert!(p.is_literal());
    assert!(p.matches("e1000_get_regs") && !p.matches("e1000_get_regs_len"));
    let p = Pattern::new("psmouse_?et_*", l).unwrap();
    assert!(p.matches("psmouse_set_rate") && !p.matches("psmouse_reset"));
}

// ---- inline ------------------------------------------------------------

const SAMPLE: &str = r#"// SPDX-License-Identifier: GPL-2.0
#include "fgft.h"
#define NOT_AN_ANNOTATION FGFT_ISOLATE	/* preprocessor lines are skipped */

FGFT_PURE(ioread8);

struct foo_priv {
	const char *fw_name FGFT_NULLTERM;
	u8 *prom FGFT_BLOB(prom_len);
	unsigned int prom_len;
	void __iomem *ioaddr FGFT_NODEREF;
	FGFT_OPAQUE(struct foo_stats) void *stats, *stats2;
	struct list_head *list FGFT_RECURSIVE;
	struct device *parent FGFT_CONTAINER(pci_dev, dev);
	struct {
		char *label FGFT_NULLTERM;
	};
};

typedef struct {
	char *name FGFT_NULLTERM, *other;
} foo_t;

/* FGFT_ISOLATE in a comment is not an annotation */
static const char *msg = "FGFT_ISOLATE";

static void foo_get_regs(struct net_device *dev, struct ethtool_regs *regs,
			 void *p FGFT_BLOB(regs->len));

FGFT_ISOLATE
static int foo_get_regs_len(struct net_device *dev)
{
	return 64;
}

FGFT_ISOLATE
static void foo_get_regs(struct net_device *dev, struct ethtool_regs *regs,
			 void *p FGFT_BLOB(regs->len))
{
}

static int FGFT_ISOLATE foo_set_name(struct net_device *dev,
				     FGFT_NULLTERM const char *name)
{
	return 0;
}

FGFT_ISOLATE int foo_proto(int x);

FGFT_CHECKPOINT
static int foo_save(struct device *d)
{
	return 0;
}

/* the restore function */
FGFT_RESTORE /* with a comment in between */
static int foo_load(struct device *d)
{
	return 0;
}
"#;

#[test]
fn inline_sample() {
    let a = inline::scan(Path::new("foo.c"), SAMPLE).unwrap_or_else(|e| panic!("{e}"));
    let iso: Vec<&str> = a.isolate.iter().map(|p| p.text()).collect();
    assert_eq!(
        iso,
        [
            "foo_get_regs_len",
            "foo_get_regs",
            "foo_set_name",
            "foo_proto"
        ]
    );
    assert_eq!(a.isolate[0].loc.line, 30);
    assert_eq!(a.checkpoint.as_ref().unwrap().name, "foo_save");
    assert_eq!(a.restore.as_ref().unwrap().name, "foo_load");
    assert_eq!(a.pure_apis, ["ioread8"]);
    let hints: Vec<String> = a
        .hints
        .iter()
        .map(|h| format!("{} {:?} @{}", h.target, h.kind, h.loc.line))
        .collect();
    let want = [
        "struct foo_priv.fw_name NullTerm @8",
        "struct foo_priv.prom Blob { len: \"prom_len\" } @9",
        "struct foo_priv.ioaddr NoDeref @11",
        "struct foo_priv.stats Opaque { ty: \"struct foo_stats\" } @12",
        "struct foo_priv.stats2 Opaque { ty: \"struct foo_stats\" } @12",
        "struct foo_priv.list Recursive @13",
        "struct foo_priv.parent Container { outer: \"pci_dev\", member: \"dev\" } @14",
        "struct foo_priv.label NullTerm @16",
        "struct foo_t.name NullTerm @21",
        "foo_get_regs(p) Blob { len: \"regs->len\" } @28",
        "foo_set_name(name) NullTerm @43",
    ];
    assert_eq!(hints, want);
}

#[test]
fn inline_header_itself_has_no_annotations() {
    let h = include_str!("../include/fgft.h");
    let a = inline::scan(Path::new("fgft.h"), h).unwrap();
    assert_eq!(a, Annotations::default());
}

#[test]
fn inline_equals_sidecar() {
    let c = "struct s {\n\tchar *n FGFT_NULLTERM;\n};\nFGFT_ISOLATE\nint f(void *p FGFT_BLOB(4), int q)\n{\n\treturn 0;\n}\n";
    let a = inline::scan(Path::new("a.c"), c).unwrap();
    let b = side(
        "[isolate]\nentry = [\"f\"]\n[[hint]]\nstruct = \"s\"\nfield = \"n\"\nkind = \"nullterm\"\n\
         [[hint]]\nfunction = \"f\"\nparam = \"p\"\nkind = \"blob\"\nlen = \"4\"\n",
    )
    .unwrap();
    let strip = |a: &Annotations| {
        (
            a.isolate
                .iter()
                .map(|p| p.text().to_string())
                .collect::<Vec<_>>(),
            a.hints
                .iter()
                .map(|h| (h.target.clone(), h.kind.clone()))
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(strip(&a), strip(&b));
    // merging the two forms of the same thing is a no-op
    let m = a.clone().merge(b).unwrap();
    assert_eq!(strip(&m), strip(&a));
}

fn inline_err(c: &str) -> AnnotError {
    match inline::scan(Path::new("bad.c"), c) {
        Ok(a) => panic!("accepted:\n{c}\n=> {a:?}"),
        Err(e) => e,
    }
}

#[test]
fn error_inline() {
    let cases: &[(&str, (usize, usize), &str)] = &[
        (
            "int x;\nFGFT_ISOLATE\nint y;\n",
            (2, 1),
            "right before a function",
        ),
        ("FGFT_ISOLATE\n", (1, 1), "right before a function"),
        (
            "struct s {\n\tu8 *p FGFT_BLOB;\n};\n",
            (2, 8),
            "FGFT_BLOB(len_expr)",
        ),
        (
            "struct s {\n\tu8 *p FGFT_BLOB(a, b);\n};\n",
            (2, 8),
            "takes 1 argument",
        ),
        (
            "struct s {\n\tu8 *p FGFT_CONTAINER(a);\n};\n",
            (2, 8),
            "takes 2 arguments",
        ),
        (
            "struct s {\n\tu8 *p FGFT_BLOB();\n};\n",
            (2, 8),
            "takes 1 argument",
        ),
        (
            "struct s {\n\tu8 *p FGFT_NULLTERM(x);\n};\n",
            (2, 8),
            "takes no arguments",
        ),
        (
            "struct s {\n\tu8 *p FGFT_BLOB(len;\n};\n",
            (2, 8),
            "no closing parenthesis",
        ),
        (
            "FGFT_ISOLATED\nint f(void) { return 0; }\n",
            (1, 1),
            "did you mean `FGFT_ISOLATE`",
        ),
        (
            "int f(void)\n{\n\tchar *s FGFT_NULLTERM = 0;\n\treturn 0;\n}\n",
            (3, 10),
            "struct field or a function parameter",
        ),
        (
            "char *g FGFT_NULLTERM;\n",
            (1, 9),
            "struct field or a function parameter",
        ),
        (
            "struct {\n\tchar *s FGFT_NULLTERM;\n} v;\n",
            (2, 10),
            "unnamed struct",
        ),
        ("int f(char * FGFT_NULLTERM);\n", (1, 14), "no name"),
        (
            "int (*fp)(char *s FGFT_NULLTERM);\n",
            (1, 19),
            "named functions",
        ),
        (
            "FGFT_CHECKPOINT int a(void);\nFGFT_CHECKPOINT int b(void);\n",
            (2, 1),
            "conflicts",
        ),
        (
            "struct s {\n\tchar *p FGFT_NULLTERM FGFT_NODEREF;\n};\n",
            (2, 24),
            "contradicts",
        ),
        ("FGFT_PURE(io read8);\n", (1, 11), "kernel function"),
    ];
    for (c, lc, needle) in cases {
        let e = inline_err(c);
        assert_eq!(line_col(&e), *lc, "{c}\n=> {e}");
        assert!(e.to_string().contains(needle), "{c}\n=> {e}");
        assert!(e.to_string().starts_with("bad.c:"), "{e}");
    }
    // invalid argument contents are `Invalid` with the argument's location
    let e = inline_err("struct s {\n\tu8 *p FGFT_BLOB(a +);\n};\n");
    assert!(matches!(e, AnnotError::Invalid { .. }), "{e:?}");
    assert_eq!(line_col(&e), (2, 18));
    let e = inline_err("struct s {\n\tu8 *p FGFT_OPAQUE(1 + 2 +);\n};\n");
    assert!(matches!(e, AnnotError::Invalid { .. }), "{e:?}");
    let e = inline_err("struct s {\n\tu8 *p FGFT_CONTAINER(a b, c);\n};\n");
    assert!(matches!(e, AnnotError::Invalid { .. }), "{e:?}");
}

#[test]
fn inline_ignores_runtime_constants() {
    let a = inline::scan(
        Path::new("gen.c"),
        "int f(void)\n{\n\treturn FGFT_RW | FGFT_CAUSE_OOPS;\n}\n",
    )
    .unwrap();
    assert_eq!(a, Annotations::default());
}

// ---- robustness: no input panics -------------------------------------------

#[test]
fn truncations_never_panic() {
    let readme = include_str!("../README.md");
    let start = readme.find("```toml\n").unwrap() + 8;
    let toml_text = &readme[start..start + readme[start..].find("```").unwrap()];
    // Every 9th position keeps the test fast in debug builds; the fuzz
    // target covers the rest.
    for (i, _) in toml_text.char_indices().step_by(9) {
        let _ = parse_sidecar_str("t.toml", &toml_text[..i]);
        let mut s = toml_text.to_string();
        s.remove(i);
        let _ = parse_sidecar_str("t.toml", &s);
    }
    for (i, _) in SAMPLE.char_indices().step_by(3) {
        let _ = inline::scan(Path::new("t.c"), &SAMPLE[..i]);
        let mut s = SAMPLE.to_string();
        s.replace_range(i..i + SAMPLE[i..].chars().next().unwrap().len_utf8(), "(");
        let _ = inline::scan(Path::new("t.c"), &s);
    }
    for junk in [
        "\u{feff}FGFT_BLOB(\"é\")",
        "FGFT_PURE(",
        "FGFT_ISOLATE FGFT_ISOLATE",
        "\"unterminated\nFGFT_ISOLATE",
        "/* open",
        "#define x \\\n FGFT_ISOLATE",
    ] {
        let _ = inline::scan(Path::new("t.c"), junk);
    }
}

#[test]
fn checkpoint_keys_and_none() {
    let a = parse_sidecar_str(
        "x.toml",
        "[checkpoint]\nnone = true\n[[checkpoint.key]]\nentries = [\"a_*\"]\nkey-to-dev = \"&((struct s *)key)->dev\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.no_checkpoint.as_ref().unwrap().line, 2);
    assert_eq!(
        a.key_to_dev_of("a_b").unwrap().expr,
        "&((struct s *)key)->dev"
    );
    assert!(a.key_to_dev_of("b").is_none());
    // Errors, located.
    for (text, line, what) in [
        (
            "[checkpoint]\nkey-to-dev = \"dev->parent\"\n",
            2,
            "does not use `key`",
        ),
        (
            "[checkpoint]\nkey-to-dev = \"key->(\"\n",
            2,
            "not a C expression",
        ),
        (
            "[checkpoint]\nrestore = \"r\"\nnone = true\n",
            3,
            "`none = true` with",
        ),
        (
            "[checkpoint]\n[[checkpoint.key]]\nentries = []\nkey-to-dev = \"key\"\n",
            2,
            "at least one entry",
        ),
    ] {
        let e = parse_sidecar_str("x.toml", text).unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
        assert_eq!(e.loc().unwrap().line, line, "{e}");
    }
    // Inline form, and a conflict between two conversions.
    let i = inline::scan(
        Path::new("k.c"),
        "FGFT_KEY_TO_DEV(&((struct pci_dev *)key)->dev);\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        i.key_to_dev.as_ref().unwrap().expr,
        "&((struct pci_dev *)key)->dev"
    );
    let s = parse_sidecar_str("y.toml", "[checkpoint]\nkey-to-dev = \"key\"\n").unwrap();
    assert!(s.merge(i).is_err());
}

#[test]
fn shared_hints() {
    // Field and parameter targets, rights default to rw.
    let a = side(
        "[[hint]]\nstruct = \"p\"\nfield = \"ring\"\nkind = \"shared\"\nlen = \"RING_LEN\"\n\
         [[hint]]\nfunction = \"f\"\nparam = \"buf\"\nkind = \"shared\"\nlen = \"n * 4\"\nrights = \"r\"\n",
    )
    .unwrap();
    assert_eq!(
        a.field_hints("p", "ring").next().unwrap().kind,
        HintKind::Shared {
            len: "RING_LEN".into(),
            rights: Access::ReadWrite
        }
    );
    assert_eq!(
        a.param_hints("f", "buf").next().unwrap().kind,
        HintKind::Shared {
            len: "n * 4".into(),
            rights: Access::Read
        }
    );
    assert_eq!(a.hints[1].kind.name(), "shared");
    // The inline forms mean the same.
    let c = "struct p {\n\tu8 *ring FGFT_SHARED(RING_LEN);\n};\n\
             int f(const u8 *buf FGFT_SHARED_RO(n * 4), int n);\n";
    let b = inline::scan(Path::new("a.c"), c).unwrap();
    let kinds = |a: &Annotations| {
        a.hints
            .iter()
            .map(|h| (h.target.clone(), h.kind.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(&a), kinds(&b));
    // A different length on the same target conflicts.
    let e = a
        .merge(
            side("[[hint]]\nstruct = \"p\"\nfield = \"ring\"\nkind = \"shared\"\nlen = \"8\"\n")
                .unwrap(),
        )
        .unwrap_err();
    assert!(matches!(e, AnnotError::Conflict { .. }), "{e:?}");
    assert!(e.to_string().contains("shared(8, rw)"), "{e}");
}

#[test]
fn shared_hint_errors() {
    // Missing len: located at the [[hint]].
    let e = side_err("\n[[hint]]\nstruct = \"p\"\nfield = \"ring\"\nkind = \"shared\"\n");
    assert!(
        matches!(&e, AnnotError::MissingKey { key, .. } if key == "len"),
        "{e:?}"
    );
    assert_eq!(line_col(&e).0, 2);
    let cases: &[(&str, usize, &str)] = &[
        ("[[hint]]\nstruct = \"p\"\nfield = \"r\"\nkind = \"shared\"\nlen = \"4\"\nrights = \"w\"\n", 6, "not one of: r, rw"),
        ("[[hint]]\nstruct = \"p\"\nfield = \"r\"\nkind = \"shared\"\nlen = \"a +\"\n", 5, "shared length"),
        ("[[hint]]\nstruct = \"p\"\nfield = \"r\"\nkind = \"blob\"\nlen = \"4\"\nrights = \"r\"\n", 6, "applies only to kind = \"shared\""),
    ];
    for (text, line, needle) in cases {
        let e = side_err(text);
        assert_eq!(line_col(&e).0, *line, "{text}: {e}");
        assert!(e.to_string().contains(needle), "{text}: {e}");
    }
    let e = inline_err("struct s {\n\tu8 *p FGFT_SHARED;\n};\n");
    assert!(e.to_string().contains("FGFT_SHARED(len_expr)"), "{e}");
}

#[test]
fn slot_patterns_select_by_the_slots_a_function_fills() {
    let p = Pattern::from_cli("ethtool_ops.*").unwrap();
    assert!(p.is_slot() && !p.is_literal());
    let regs = vec!["ethtool_ops.get_regs".to_string()];
    assert!(p.matches_entry("e1000_get_regs", &regs));
    assert!(!p.matches_entry("e1000_open", &["net_device_ops.ndo_open".into()]));
    assert!(
        !p.matches("ethtool_ops.get_regs"),
        "a slot pattern matches no bare name"
    );
    let exact = Pattern::from_cli("net_device_ops.ndo_get_stats64").unwrap();
    assert!(exact.matches_entry("f", &["net_device_ops.ndo_get_stats64".into()]));
    assert!(!exact.matches_entry("f", &["net_device_ops.ndo_get_stats".into()]));
    for bad in ["a.b.c", ".x", "ethtool_ops.", "eth tool.x", "1x.y"] {
        assert!(Pattern::from_cli(bad).is_err(), "{bad} accepted");
    }
    let mut a = Annotations::default();
    a.isolate.push(p);
    a.exclude.push(Pattern::from_cli("*_get_regs").unwrap());
    let defined = vec![
        ("e1000_get_regs", regs.clone()),
        (
            "e1000_get_drvinfo",
            vec!["ethtool_ops.get_drvinfo".to_string()],
        ),
        ("e1000_open", vec!["net_device_ops.ndo_open".to_string()]),
    ];
    assert_eq!(a.isolated_entries(&defined), ["e1000_get_drvinfo"]);
    assert!(a.unmatched_entries(&defined).is_empty());
    a.isolate.push(Pattern::from_cli("dev_pm_ops.*").unwrap());
    let stale: Vec<&str> = a
        .unmatched_entries(&defined)
        .iter()
        .map(|p| p.text())
        .collect();
    assert_eq!(stale, ["dev_pm_ops.*"]);
}

#[test]
fn unchecked_reads_are_patterns_of_the_isolate_section() {
    let a =
        side("[isolate]\nentry = [\"vfat_*\"]\nunchecked-reads = [\"fat_iget\", \"fat_iget\"]\n")
            .unwrap();
    let names: Vec<&str> = a.unchecked_reads.iter().map(|p| p.text()).collect();
    assert_eq!(names, ["fat_iget"]);
    assert!(a.unchecked_reads[0].matches("fat_iget"));
    // A misspelt key is an error, as every unknown key is.
    let e = side_err("[isolate]\nunchecked-read = [\"fat_iget\"]\n");
    assert_eq!(line_col(&e).0, 2, "{e}");
}
