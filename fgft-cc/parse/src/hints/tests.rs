use super::*;
use crate::tables::TableSource;
use crate::ParseError;
use std::collections::HashMap;

fn rw(s: &str) -> String {
    let t = HintTable::builtin().expect("built-in table parses");
    let out = t.rewrite(s);
    assert_eq!(out.len(), s.len(), "length preserved");
    for (a, b) in s.bytes().zip(out.bytes()) {
        assert_eq!(a == b'\n', b == b'\n', "newlines preserved");
    }
    out
}

#[test]
fn builtin_table_loads() {
    let t = HintTable::builtin().unwrap();
    assert!(t.blank.contains("__iomem"));
    assert!(t.blank.len() > 60);
    assert!(t.iterators.contains("list_for_each_entry_safe"));
    assert!(t.iterators.contains("netdev_for_each_mc_addr"));
    assert!(!t.iterators.contains("foreach"));
}

#[test]
fn glob() {
    let m = |p: &str, n: &str| Glob::new(p).matches(n.as_bytes());
    assert!(m("*for_each*", "list_for_each_entry"));
    assert!(m("*for_each*", "for_each"));
    assert!(!m("*for_each*", "for_eac"));
    assert!(m("a*b", "ab"));
    assert!(!m("ab*b", "ab"));
    assert!(m("SENSOR_DEVICE_ATTR*", "SENSOR_DEVICE_ATTR_2_RW"));
    assert!(!m("SENSOR_DEVICE_ATTR*", "SENSOR_DEVICE_ATT"));
}

/// `*` matches any run of bytes, by backtracking.
fn glob_reference(p: &[u8], n: &[u8]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some((b'*', rest)) => (0..=n.len()).any(|k| glob_reference(rest, &n[k..])),
        Some((c, rest)) => n.first() == Some(c) && glob_reference(rest, &n[1..]),
    }
}

/// All strings over `alphabet` of length up to `max`.
fn strings(alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::new()];
    let mut last = vec![Vec::new()];
    for _ in 0..max {
        let next: Vec<Vec<u8>> = last
            .iter()
            .flat_map(|s| {
                alphabet.iter().map(move |&c| {
                    let mut t = s.clone();
                    t.push(c);
                    t
                })
            })
            .collect();
        all.extend(next.iter().cloned());
        last = next;
    }
    all
}

#[test]
fn glob_agrees_with_backtracking() {
    let names = strings(b"ab", 7);
    let mut patterns = 0;
    for p in strings(b"ab*", 5) {
        if !p.contains(&b'*') {
            continue;
        }
        patterns += 1;
        let g = Glob::new(std::str::from_utf8(&p).unwrap());
        for n in &names {
            assert_eq!(
                g.matches(n),
                glob_reference(&p, n),
                "pattern {:?} name {:?}",
                String::from_utf8_lossy(&p),
                String::from_utf8_lossy(n)
            );
        }
    }
    assert!(patterns > 300);
}

#[test]
fn blanks_annotations() {
    assert_eq!(rw("void __iomem *p;"), "void         *p;");
    assert_eq!(
        rw("int f(void) __acquires(x) __releases(y);"),
        "int f(void)                            ;"
    );
    assert_eq!(rw("x __iomemx;"), "x __iomemx;");
}

#[test]
fn iterators_become_while() {
    assert_eq!(
        rw("{ list_for_each_entry(p, &h, m) { f(p); } }"),
        "{ while              (p, &h, m) { f(p); } }"
    );
    // Not at statement start, or followed by `;`: untouched.
    assert_eq!(rw("x = list_for_each(a);"), "x = list_for_each(a);");
    assert_eq!(rw("{ for_each_x(a); }"), "{ for_each_x(a); }");
    // A definition of such a function is not a statement.
    assert_eq!(
        rw("void foo_for_each(int a) { }"),
        "void foo_for_each(int a) { }"
    );
}

#[test]
fn type_arguments() {
    assert_eq!(
        rw("p = container_of(q, struct foo, m);"),
        "p = container_of(q, struct_foo, m);"
    );
    assert_eq!(
        rw("x = min_t(unsigned int, a, b);"),
        "x = min_t(unsigned_int, a, b);"
    );
    assert_eq!(rw("x = va_arg(ap, int);"), "x = va_arg(ap, in_);");
    // Generic rule: any call argument that is a type name.
    assert_eq!(
        rw("q = my_entry(p, struct foo *, m);"),
        "q = my_entry(p, struct_foo__, m);"
    );
    // Prototypes keep their parameter types.
    assert_eq!(rw("int f(struct foo *, int);"), "int f(struct foo *, int);");
    assert_eq!(rw("x = sizeof(struct foo);"), "x = sizeof(struct foo);");
}

#[test]
fn declaration_macros() {
    assert_eq!(
        rw("static DEFINE_SPINLOCK(lock);"),
        "static int             lock ;"
    );
    assert_eq!(
        rw("struct s { DECLARE_BITMAP(map, 64); };"),
        "struct s { int            map[ 64]; };"
    );
    assert_eq!(
        rw("static SIMPLE_DEV_PM_OPS(pm, s, r);"),
        "       SIMPLE_DEV_PM_OPS(pm, s, r);"
    );
}

#[test]
fn initializer_fragments() {
    assert_eq!(
        rw("{ SET_SYSTEM_SLEEP_PM_OPS(a, b)\n\t.x = c }"),
        "{ SET_SYSTEM_SLEEP_PM_OPS(a, b)\n,.x = c }"
    );
    assert_eq!(
        rw("{ SET_SYSTEM_SLEEP_PM_OPS(a, b) }"),
        "{ SET_SYSTEM_SLEEP_PM_OPS(a, b) }"
    );
}

#[test]
fn generic_rules() {
    assert_eq!(rw("{ case 1 ... 8: x; }"), "{ case 1  |  8: x; }");
    assert_eq!(rw("{ case A...B: x; }"), "{ case A | B: x; }");
    assert_eq!(rw("f(a, 10000baseT_Full);"), "f(a, _0000baseT_Full);");
    assert_eq!(
        rw("x = 0x1fUL + 1.5e-3f + 0b101 + 07;"),
        "x = 0x1fUL + 1.5e-3f + 0b101 + 07;"
    );
    assert_eq!(
        rw("printk(KERN_INFO DRV_NAME \": x\");"),
        "printk(KERN_INFO_DRV_NAME \": x\");"
    );
    assert_eq!(rw("{ f();\nout:\n#endif\n}"), "{ f();\nout;\n#endif\n}");
    assert_eq!(rw("{ f();\nout: }"), "{ f();\nout; }");
    assert_eq!(rw("{ out: f(); }"), "{ out: f(); }");
    assert_eq!(
        rw("{ my_walk(a, b) { f(); } }"),
        "{ while  (a, b) { f(); } }"
    );
    // At file scope a `NAME(args) {` is a macro-made function definition.
    assert_eq!(
        rw("SYSCALL_DEFINE1(x, int, a) { }"),
        "SYSCALL_DEFINE1(x, in_, a) { }"
    );
    assert_eq!(
        rw("n = offsetof(struct s, a.b[2]);"),
        "n = offsetoF(struct_s, a.b[2]);"
    );
    assert_eq!(
        rw("n = offsetof(struct s, a);"),
        "n = offsetof(struct s, a);"
    );
    // An empty type argument: respelled like `offsetof(,a.b)`, no panic.
    assert_eq!(rw("n = offsetof(,a.b);"), "n = offsetoF(,a.b);");
    assert_eq!(rw("n = offsetof( , a.b);"), "n = offsetoF( , a.b);");
}

#[test]
fn array_declarations() {
    assert_eq!(
        rw("struct t {\n\tDECLARE_BITMAP(flags, TG3_FLAG_NUMBER);\n};\n"),
        "struct t {\n\tint            flags[ TG3_FLAG_NUMBER];\n};\n"
    );
    assert_eq!(
        rw("static DEFINE_HASHTABLE(h, 4);"),
        "static int              h[ 4];"
    );
}

#[test]
fn directives_in_initializers() {
    let s = "static const struct x o = {\n\t.a = f,\n#ifdef CONFIG_PM\n\t.b = g,\n#endif\n};\n\
             void h(void) {\n#ifdef X\n\tf();\n#endif\n}\n";
    let out = rw(s);
    assert!(!out.contains("#ifdef CONFIG_PM") && out.contains("\t.b = g,"));
    assert!(out.contains("#ifdef X"));
    let z = "static struct x o = {\n\t.a = f,\n#if 0\t/* FIXME */\n\t.b = ,\n#else\n\t.c = g,\n#endif\n};\n";
    let out = rw(z);
    assert!(
        !out.contains(".b") && out.contains("\t.c = g,") && !out.contains("#"),
        "{out}"
    );
    assert_eq!(out.len(), z.len());
    assert_eq!(rw("CONFIGFS_ATTR(, release);"), "CONFIGFS_ATTR(  release);");
    let e = "enum { A = 1,\n#define A_X 3\n B };\n#define D(x, args...) f(x, ##args)\n";
    assert_eq!(
        rw(e),
        "enum { A = 1,\n             \n B };\n#define D(x, args   ) f(x, ##args)\n"
    );
}

#[test]
fn comments_strings_and_directives_untouched() {
    let s = "/* __iomem */ char *s = \"__user\";\n#define X __init\n// __init\n";
    assert_eq!(rw(s), s);
}

#[test]
fn utf8_survives() {
    let s = "/* Grüße */ void __iomem *p; /* ü */\nint x = min_t(unsigned /* é */ int, a, b);";
    let out = rw(s);
    assert!(out.contains("void         *p"));
}

#[test]
fn extension_table_extends() {
    let t = HintTable::from_sources(&[
        TableSource {
            path: None,
            text: BUILTIN.to_string(),
        },
        TableSource {
            path: Some("ext/macro-hints.toml".into()),
            text: "blank = [\"__my_attr\"]\niterators = [\"my_walk\"]\n".into(),
        },
    ])
    .unwrap();
    assert!(t.blank.contains("__my_attr"));
    assert!(t.blank.contains("__iomem"));
    assert!(t.iterators.contains("my_walk"));
    let bad = HintTable::from_sources(&[TableSource {
        path: Some("bad.toml".into()),
        text: "blank = 3\n".into(),
    }]);
    assert!(matches!(bad, Err(ParseError::Table { .. })));
    let unknown = HintTable::from_sources(&[TableSource {
        path: Some("bad.toml".into()),
        text: "blanc = []\n".into(),
    }]);
    assert!(matches!(unknown, Err(ParseError::Table { .. })));
}

/// Small deterministic generator for the randomized tests.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn table(text: &str) -> HintTable {
    HintTable::from_sources(&[TableSource {
        path: None,
        text: text.into(),
    }])
    .unwrap()
}

#[test]
fn index_agrees_with_name_sets() {
    let t = table(
        "blank = [\"__a\", \"x_*\", \"both\"]\n\
         blank_call = [\"*_y\", \"both\", \"__builtin_q\"]\n\
         iterators = [\"*for_each*\", \"*_foreach*\", \"for_all_*\", \"a*b*c\", \"walk_it\"]\n\
         [decl_call]\nnames = [\"DEV_ATTR*\", \"DEVICE_ATTR\", \"*\"]\n\
         [init_fragment]\nnames = [\"PM_OPS\", \"*__*__*\"]\n",
    );
    let mut names: Vec<String> = [
        "__a",
        "x_",
        "x_1",
        "ax_",
        "q_y",
        "_y",
        "y",
        "both",
        "__builtin_q",
        "list_for_each",
        "for_each",
        "for_eac",
        "hlist_foreach_x",
        "for_all_cpus",
        "for_all",
        "abc",
        "ac",
        "a_b_c_",
        "walk_it",
        "DEV_ATTR",
        "DEV_ATTR_RW",
        "DEVICE_ATTR",
        "PM_OPS",
        "a__b__c",
        "a____",
        "____",
        "if",
        "case",
        "struct",
        "offsetof",
        "do",
        "else",
        "sizeof",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let alphabet = b"_abcfhoreyx1";
    for _ in 0..5000 {
        let len = 1 + rng.below(14);
        names.push(
            (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())] as char)
                .collect(),
        );
    }
    for n in &names {
        let w = n.as_bytes();
        for (set, bit) in t.sets() {
            let indexed = t.index.flags(w) & bit != 0 || t.index.glob(bit, w);
            assert_eq!(indexed, set.contains(n), "{n} in set {bit}");
        }
        let lists: [(&[&str], u16); 4] = [
            (KEYWORDS, KEYWORD),
            (NOT_CALLS, NOT_CALL),
            (EXPR_KEYWORDS, EXPR_KEYWORD),
            (TYPE_START, TYPE_WORD),
        ];
        for (list, bit) in lists {
            assert_eq!(
                t.index.flags(w) & bit != 0,
                list.contains(&n.as_str()),
                "{n}"
            );
        }
        let fixed = [
            (TAG, &["struct", "union", "enum"][..]),
            (CASE, &["case"]),
            (OFFSETOF, &["offsetof", "__builtin_offsetof"]),
            (ELSE_DO, &["else", "do"]),
        ];
        for (bit, words) in fixed {
            assert_eq!(
                t.index.flags(w) & bit != 0,
                words.contains(&n.as_str()),
                "{n}"
            );
        }
    }
}

#[test]
fn word_table_finds_exactly_its_words() {
    let mut words: Vec<Vec<u8>> = Vec::new();
    for len in 1..40 {
        // Same first and last eight bytes, different middles.
        for mid in [b'a', b'b', b'c'] {
            let mut w = vec![b'_'; len];
            w[len / 2] = mid;
            words.push(w);
        }
        words.push((0..len).map(|k| b'A' + (k % 26) as u8).collect());
    }
    let map: HashMap<&[u8], u16, FxBuild> = words
        .iter()
        .enumerate()
        .filter(|(k, _)| k % 2 == 0)
        .map(|(k, w)| (w.as_slice(), k as u16 + 1))
        .collect();
    let table = WordTable::new(map.clone());
    for w in &words {
        assert_eq!(table.get(w), map.get(w.as_slice()).copied().unwrap_or(0));
    }
    assert_eq!(table.get(b""), 0);
    assert_eq!(table.get(b"__builtin_offsetof_x"), 0);
}

#[test]
fn identifier_scan_agrees_with_bytes() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let samples = b"aZ_09\x80\xff(- Q\n";
    for _ in 0..20000 {
        let len = rng.below(24);
        let mut b: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(4) == 0 {
                    rng.below(256) as u8
                } else {
                    samples[rng.below(samples.len())]
                }
            })
            .collect();
        b.insert(0, b'K');
        let want_end = 1 + b[1..].iter().take_while(|&&c| is_ident_char(c)).count();
        let want_upper = b[..want_end]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_');
        assert_eq!(ident_end(&b, 1, true), (want_end, want_upper), "{b:?}");
        for from in 0..b.len() {
            let want = b[from..].iter().position(|&c| c == b'\n').map(|p| from + p);
            assert_eq!(find_byte(&b, from, b'\n'), want, "{b:?}");
        }
    }
}

/// The brace context and `)` of every token, computed as the rewrite did
/// before the lexer tracked them.
#[test]
fn token_context_agrees_with_rescans() {
    let index = HintTable::default().index;
    let pieces = [
        "(",
        ")",
        "{",
        "}",
        ";",
        ",",
        "=",
        "a",
        "int",
        "struct",
        " ",
        "\n#if x\n",
        "[",
        "]",
    ];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..3000 {
        let text: String = (0..rng.below(60))
            .map(|_| pieces[rng.below(pieces.len())])
            .collect();
        let (toks, _) = lex(text.as_bytes(), &index);
        let mut stack: Vec<bool> = Vec::new();
        for (k, t) in toks.iter().enumerate() {
            assert_eq!(t.nested, !stack.is_empty(), "{text:?} token {k}");
            assert_eq!(
                t.in_init,
                stack.last().copied().unwrap_or(false),
                "{text:?}"
            );
            match t.kind {
                Kind::Punct(b'{') => {
                    let init = match k.checked_sub(1).map(|p| toks[p].kind) {
                        Some(Kind::Punct(b'=')) => true,
                        Some(Kind::Punct(b',' | b'{')) => stack.last().copied().unwrap_or(false),
                        _ => false,
                    };
                    stack.push(init);
                }
                Kind::Punct(b'}') => {
                    stack.pop();
                }
                Kind::Punct(b'(') => {
                    let mut depth = 0usize;
                    let mut close = None;
                    for (j, u) in toks.iter().enumerate().skip(k).take(MAX_ARG_TOKENS) {
                        match u.kind {
                            Kind::Punct(b'(') => depth += 1,
                            Kind::Punct(b')') => {
                                depth -= 1;
                                if depth == 0 {
                                    close = Some(j);
                                    break;
                                }
                            }
                            Kind::Punct(b';') => break,
                            _ => {}
                        }
                    }
                    let expect = close.map_or(0, |c| c - k);
                    assert_eq!(usize::from(t.close), expect, "{text:?} token {k}");
                    if let Some(c) = close {
                        let typed = toks[k + 1..c]
                            .iter()
                            .any(|u| u.kind == Kind::Ident && u.flags & TYPE_WORD != 0);
                        assert_eq!(t.flags & TYPE_INSIDE != 0, typed, "{text:?} token {k}");
                    }
                }
                _ => {}
            }
        }
    }
}

#[test]
fn sets_replaced_after_loading_are_used() {
    let mut t = HintTable::builtin().unwrap();
    let ext = table("blank = [\"__my_attr\"]\n");
    assert_eq!(t.rewrite("int __iomem *p;"), "int         *p;");
    t.blank = ext.blank.clone();
    assert_eq!(t.rewrite("int __iomem *p;"), "int __iomem *p;");
    assert_eq!(t.rewrite("int __my_attr x;"), "int           x;");
    std::mem::swap(&mut t.blank, &mut t.blank_call);
    assert_eq!(t.rewrite("int __my_attr(3) x;"), "int              x;");
    assert_eq!(t.rewrite("int __aligned(8) x;"), "int          (8) x;");
    let fresh = HintTable::builtin().unwrap();
    assert_eq!(fresh.rewrite("int __aligned(8) x;"), "int              x;");
}
