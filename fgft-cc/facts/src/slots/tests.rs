use super::*;
use fgft_parse::tables::TableSource;
use fgft_parse::{walk, ParseError, ParsedFile};
use std::collections::HashMap;
use std::path::Path;
use tree_sitter::Node;

fn roots_of(src: &str) -> Vec<String> {
    let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
    let t = SlotTable::builtin().unwrap();
    roots(&pf, &FactSet::from(facts_of(&pf)), &t)
        .iter()
        .map(|r| {
            format!(
                "{} {}.{} {} {}",
                r.function, r.struct_name, r.field, r.line, r.var
            )
        })
        .collect()
}

#[test]
fn builtin_table_loads() {
    let t = SlotTable::builtin().unwrap();
    assert!(t.structs["net_device_ops"]
        .functions
        .contains(&"ndo_open".to_string()));
    assert_eq!(t.fn_field_owners["ndo_open"], ["net_device_ops"]);
    assert!(t.macros.contains_key("SIMPLE_DEV_PM_OPS"));
}

#[test]
fn designated_nested_positional_and_arrays() {
    let r = roots_of(
        "static const struct net_device_ops ops = {\n\t.ndo_open = a_open,\n\t.ndo_stop = NULL,\n};\n\
         static struct pci_driver drv = {\n\t.name = \"x\",\n\t.probe = a_probe,\n\t.driver = { .shutdown = a_shut, .pm = &a_pm },\n\t.remove = __exit_p(a_remove),\n};\n\
         static struct header_ops h = { a_create, a_parse };\n\
         static const struct snd_kcontrol_new ctl[] = {\n\t{ .info = c_info, .get = c_get },\n\t{ .put = c_put },\n};\n",
    );
    assert_eq!(
        r,
        [
            "a_open net_device_ops.ndo_open 2 ops",
            "a_probe pci_driver.probe 7 drv",
            "a_shut pci_driver.driver.shutdown 8 drv",
            "a_remove pci_driver.remove 9 drv",
            "a_create header_ops.create 11 h",
            "a_parse header_ops.parse 11 h",
            "c_get snd_kcontrol_new.get 13 ctl",
            "c_info snd_kcontrol_new.info 13 ctl",
            "c_put snd_kcontrol_new.put 14 ctl",
        ]
    );
}

#[test]
fn assignments_macros_and_calls() {
    let r = roots_of(
        "struct priv { struct timer_list t; struct input_dev *in; };\n\
         static struct ethtool_ops eops;\n\
         static int probe(struct psmouse *psmouse, struct priv *p)\n{\n\
         \tint (*local)(void) = 0;\n\
         \tpsmouse->protocol_handler = m_process;\n\
         \tp->in->open = m_open;\n\
         \teops.get_link = m_link;\n\
         \tp->t.function = m_timer;\n\
         \tpsmouse->disconnect = local;\n\
         \ttimer_setup(&p->t, m_tick, 0);\n\
         \tirq_handler_t h = m_intr;\n\
         \trequest_irq(1, h, 0, \"x\", p);\n\
         \treturn 0;\n}\n\
         static SIMPLE_DEV_PM_OPS(m_pm, m_suspend, m_resume);\n\
         static DEVICE_ATTR_RW(speed);\n\
         module_init(m_init);\n",
    );
    assert_eq!(
        r,
        [
            "m_process psmouse.protocol_handler 6 psmouse",
            "m_open input_dev.open 7 p->in",
            "m_link ethtool_ops.get_link 8 eops",
            "m_timer timer_list.function 9 p->t",
            "m_tick timer_list.function 11 ",
            "m_intr irqaction.handler 12 ",
            "m_resume dev_pm_ops.restore 16 m_pm",
            "m_resume dev_pm_ops.resume 16 m_pm",
            "m_resume dev_pm_ops.thaw 16 m_pm",
            "m_suspend dev_pm_ops.freeze 16 m_pm",
            "m_suspend dev_pm_ops.poweroff 16 m_pm",
            "m_suspend dev_pm_ops.suspend 16 m_pm",
            "speed_show device_attribute.show 17 speed",
            "speed_store device_attribute.store 17 speed",
            "m_init module.init 18 ",
        ]
    );
}

#[test]
fn pm_fragments_and_pointer_inference() {
    let r = roots_of(
        "static const struct dev_pm_ops pm = {\n\
         \tSET_SYSTEM_SLEEP_PM_OPS(s_susp, s_res)\n\
         \t.runtime_idle = s_idle,\n};\n\
         static my_ops_t o = { .ndo_open = o_open };\n\
         void f(struct net_device *nd) { nd->netdev_ops = &o; }\n",
    );
    assert!(
        r.contains(&"s_susp dev_pm_ops.suspend 2 pm".to_string()),
        "{r:?}"
    );
    assert!(
        r.contains(&"s_res dev_pm_ops.restore 2 pm".to_string()),
        "{r:?}"
    );
    assert!(
        r.contains(&"s_idle dev_pm_ops.runtime_idle 3 pm".to_string()),
        "{r:?}"
    );
    assert!(
        r.contains(&"o_open net_device_ops.ndo_open 5 o".to_string()),
        "{r:?}"
    );
}

#[test]
fn table_errors_are_located() {
    let bad = SlotTable::from_sources(&[TableSource {
        path: Some("x/slots.toml".into()),
        text: "[call]\nfoo = [[1, \"nodot\"]]\n".into(),
    }]);
    match bad {
        Err(ParseError::Table {
            range: Some(r),
            text,
            ..
        }) => assert_eq!(&text[r], "nodot"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn abort_statements_and_restored_aborts_load_and_are_checked() {
    let t = SlotTable::builtin().unwrap();
    let x = t.slot_abort("net_device_ops.ndo_start_xmit").unwrap();
    assert_eq!(x.value, "NETDEV_TX_OK");
    assert!(x.run.as_deref().unwrap().contains("dev_kfree_skb_any($1)"));
    let p = t.slot_abort("napi_struct.poll").unwrap();
    assert_eq!(p.restored.as_ref().unwrap().value, "0");
    assert_eq!(t.abort_restored["irqreturn_t"].value, "IRQ_HANDLED");
    // A `$` with no parameter number, in a statement or a restored value.
    for text in [
        "[struct.s]\nfunctions = [\"f\"]\naborts.f = { value = \"0\", why = \"w\", run = \"g($);\" }\n",
        "[struct.s]\nfunctions = [\"f\"]\naborts.f = { value = \"0\", why = \"w\", restored = { value = \"$x\", why = \"w\" } }\n",
        "[aborts.restored]\nt = { value = \"$0\", why = \"w\" }\n",
    ] {
        let bad = SlotTable::from_sources(&[TableSource {
            path: Some("x/slots.toml".into()),
            text: text.into(),
        }]);
        match bad {
            Err(ParseError::Table { message, .. }) => {
                assert!(message.contains("parameter number"), "{message}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn trusted_returns_load_and_are_checked() {
    let t = SlotTable::builtin().unwrap();
    let r = t.slot_return("ethtool_ops.set_phys_id").unwrap();
    assert!(r.ok.contains("$ret"), "{r:?}");
    assert!(t.slot_return("ethtool_ops.get_link").is_none());
    for (text, what) in [
        (
            "[struct.s]\nfunctions = [\"f\"]\nreturns.g = { ok = \"$ret > 0\", why = \"w\" }\n",
            "names no function field",
        ),
        (
            "[struct.s]\nfunctions = [\"f\"]\nreturns.f = { ok = \"1\", why = \"w\" }\n",
            "condition over `$ret`",
        ),
        (
            "[struct.s]\nfunctions = [\"f\"]\nreturns.f = { ok = \"$ret < $x\", why = \"w\" }\n",
            "condition over `$ret`",
        ),
    ] {
        let bad = SlotTable::from_sources(&[TableSource {
            path: Some("x/slots.toml".into()),
            text: text.into(),
        }]);
        match bad {
            Err(ParseError::Table { message, .. }) => {
                assert!(message.contains(what), "{message}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

/// The walk before pruning: every node, no marks (so `visit` enters
/// everything `walk::skippable` lets it).
fn full_scan<'t>(pf: &'t ParsedFile, table: &'t SlotTable) -> (Facts, Candidates<'t>) {
    let mut s = Scan::new(pf, Some(table));
    s.marks = None;
    walk::preorder(pf.tree.root_node(), |n, d| s.visit(n, d));
    s.finish()
}

fn sorted<K: Ord + Clone, V: Clone>(m: &HashMap<K, V>) -> Vec<(K, V)> {
    let mut v: Vec<(K, V)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Checks the pruned scan against the full one on `src`: the same facts,
/// candidates among the full walk's (only declarations of number lists
/// may be missing), the same roots.
fn same_as_full_walk(src: &str) -> Vec<String> {
    let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
    let t = SlotTable::builtin().unwrap();
    let (facts, cands) = scan(&pf, &t);
    let (full_facts, full_cands) = full_scan(&pf, &t);
    let mut fields: Vec<(String, Vec<(String, String)>)> = facts
        .struct_fields
        .iter()
        .map(|(k, v)| (k.clone(), sorted(v)))
        .collect();
    let mut full_fields: Vec<(String, Vec<(String, String)>)> = full_facts
        .struct_fields
        .iter()
        .map(|(k, v)| (k.clone(), sorted(v)))
        .collect();
    fields.sort();
    full_fields.sort();
    assert_eq!(fields, full_fields, "struct fields of {src}");
    assert_eq!(sorted(&facts.typedefs), sorted(&full_facts.typedefs));
    assert_eq!(sorted(&facts.globals), sorted(&full_facts.globals));
    assert_eq!(facts.functions, full_facts.functions);
    let k = walk::kinds();
    for n in &full_cands.nodes {
        if !cands.nodes.contains(n) {
            // Only declarations whose lists hold numbers only.
            let numbers = |v: Node<'_>| {
                pf.node_text(v)
                    .bytes()
                    .all(|c| c.is_ascii_whitespace() || c.is_ascii_digit() || b"{},".contains(&c))
            };
            let trivial = n.kind_id() == k.declaration
                && children_by_field(*n, k.f_declarator)
                    .filter_map(|d| k.child(d, k.f_value))
                    .filter(|v| v.kind_id() == k.initializer_list)
                    .all(numbers);
            assert!(trivial, "candidate `{}` missed in {src}", pf.node_text(*n));
        }
    }
    assert!(cands.nodes.iter().all(|n| full_cands.nodes.contains(n)));
    let fs = FactSet::from(facts);
    let show = |rs: Vec<Root>| -> Vec<String> {
        rs.iter()
            .map(|r| format!("{} {}.{} {}", r.function, r.struct_name, r.field, r.line))
            .collect()
    };
    let got = show(roots_of_candidates(&pf, &fs, &t, &cands));
    let want = show(roots_of_candidates(&pf, &fs, &t, &full_cands));
    assert_eq!(got, want, "roots of {src}");
    got
}

fn roots_of_candidates<'t>(
    pf: &'t ParsedFile,
    fs: &FactSet,
    t: &SlotTable,
    c: &Candidates<'t>,
) -> Vec<Root> {
    super::roots_of(pf, fs, t, c)
}

#[test]
fn pruned_scan_finds_what_the_full_walk_finds() {
    // Stores split by newlines, comments and line continuations; local
    // initializers behind comments; compound operators; number lists.
    let r = same_as_full_walk(
        "struct priv { struct net_device *nd; struct timer_list t; };\n\
         static void a(struct net_device *dev, struct priv *p)\n{\n\
         \tint x = 0, y[2] = { 0, 1 };\n\
         \tif (x == 1 && y[0] <= 2)\n\t\tx <<= 1;\n\
         \tdev->\n\t\tnetdev_ops = &a_ops;\n\
         \tdev->ethtool_ops /* c */ = &a_eops;\n\
         \tp->t.function // c\n\t\t= a_timer;\n\tp->t.function = a_timer2;\n\
         \tp->nd->netdev_ops // from q.x\n\t\t= &a_ops2;\n\
         \tp->nd->header_ops \\\n\t= &a_hops;\n\
         \tstruct net_device_ops o = /* c */ { .ndo_open = a_open };\n\
         \tstruct net_device_ops q = {};\n\
         \tif (x) {\n\t\tINIT_WORK(&p->w, a_work);\n\t}\n\
         \tp->nd->watchdog_timeo = 5;\n\
         }\n\
         static const struct net_device_ops a_ops = { .ndo_stop = a_stop, };\n",
    );
    assert_eq!(
        r,
        [
            "a_timer2 timer_list.function 12",
            "a_open net_device_ops.ndo_open 17",
            "a_work work_struct.func 20",
            "a_stop net_device_ops.ndo_stop 24"
        ]
    );
    // Facts behind statement expressions and in data tables outside
    // functions; typedefs and globals around them.
    same_as_full_walk(
        "static int v = ({ struct inner { int (*f)(void); } i = { 0 }; 0; });\n\
         static int w[] = { ({ typedef struct { int a; } t2; 1; }), 2 };\n\
         static int w2[] = { 1, ({ typedef foo_t bar_t; int nested(void) { return 0; } 2; }) };\n\
         static int w3[] = { 1, FOO(2, { typedef foo_t qux_t; int nested2(void) { return 0; } }) };\n\
         DEFINE_THING(x, { typedef foo_t baz_t; });\n\
         static const struct pci_device_id ids[] = {\n\
         \t{ PCI_DEVICE(1, 2), .driver_data = 3 },\n\
         \t{ (struct s3 { int b; } *)0 },\n};\n\
         typedef struct outer { struct inner2 { int c; } in; } outer_t;\n\
         struct outer *g1, g2;\n\
         int proto(int (*cb)(struct outer *o), long n);\n\
         static void f(void)\n{\n\tstruct local { int d; } l = { 1 };\n}\n",
    );
    // Registering calls and table macros with locals and casts.
    same_as_full_walk(
        "static int p(struct pci_dev *pdev)\n{\n\
         \tirq_handler_t h = b_intr;\n\
         \tint (*cb)(int h) = 0;\n\
         \ttimer_setup(&t, (void (*)(struct timer_list *))b_tick, 0);\n\
         \treturn request_irq(1, h, 0, \"b\", pdev);\n}\n\
         static SIMPLE_DEV_PM_OPS(b_pm, b_suspend, b_resume);\n\
         module_init(b_init);\n",
    );
    // A syntax error inside a function: entered whatever the marks say.
    same_as_full_walk(
        "static void e(struct net_device *dev)\n{\n\
         \tdev->netdev_ops = &e_ops;\n\tfoo(;\n\tdev->ethtool_ops = &e_eops\n}\n",
    );
}

/// The local scope as the finder first built it: a stack walk of the
/// named nodes, the last declaration met winning.
fn scope_by_stack<'a>(pf: &'a ParsedFile, f: Node<'_>) -> HashMap<&'a str, &'a str> {
    let k = walk::kinds();
    let mut m = HashMap::new();
    let mut stack = vec![f];
    while let Some(x) = stack.pop() {
        let xid = x.kind_id();
        if xid == k.parameter_declaration || xid == k.declaration {
            let t = k
                .child(x, k.f_type)
                .and_then(|t| type_name(pf, t))
                .unwrap_or("");
            for d in children_by_field(x, k.f_declarator) {
                if let Some((name, _, _)) = declarator_name(pf, d) {
                    m.insert(name, t);
                }
            }
        }
        stack.extend(walk::named_children(x));
    }
    m
}

#[test]
fn local_types_match_the_stack_walk() {
    let src = "static int f(struct a *p, b_t q)\n{\n\
               \tstruct c *x, *p2;\n\
               \tint (*cb)(struct d *p, e_t x) = 0;\n\
               \tif (p) {\n\t\tstruct e *x = 0;\n\t\tfor (f_t i = 0; i < 2; i++)\n\t\t\t;\n\t}\n\
               \t{ struct g q; }\n\
               \tx = (void *)sizeof(int (*)(struct h *hh));\n\
               \treturn ({ struct i *x2 = 0; 0; });\n}\n";
    let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
    let k = walk::kinds();
    let f = walk::named_children(pf.tree.root_node())
        .find(|n| n.kind_id() == k.function_definition)
        .unwrap();
    let want = scope_by_stack(&pf, f);
    assert_eq!(scope_map(&pf, f), want);
    assert_eq!(want.get("x"), Some(&"c"), "{want:?}");
    let mut names: Vec<&str> = Vec::new();
    walk::preorder(f, |n, _| {
        if n.kind_id() == k.identifier {
            names.push(pf.node_text(n));
        }
        true
    });
    names.extend(["hh", "nope", "", "i"]);
    for name in names {
        assert_eq!(local_type(&pf, f, name), want.get(name).copied(), "{name}");
    }
}

#[test]
fn lexical_marks() {
    let h = b"a == b; c != d; e <= f; g >= h; i <<= 1; j >>= 2; k = 3;";
    let eqs: Vec<usize> = memchr::memchr_iter(b'=', h)
        .filter(|&i| !is_comparison(h, i))
        .collect();
    assert_eq!(eqs.len(), 3);
    assert!(may_open_initializer(b"x = /* c */ {", 2));
    assert!(may_open_initializer(b"x =\n\t{ .a = b }", 2));
    assert!(!may_open_initializer(b"x = { 0, 1 }", 2));
    assert!(!may_open_initializer(b"x = {}", 2));
    assert!(!may_open_initializer(b"x = y", 2));
    let t = SlotTable::builtin().unwrap();
    let check = |src: &str| {
        let pf = fgft_parse::parse_text(Path::new("t.c"), src.to_string()).unwrap();
        let i = src.rfind('=').unwrap();
        may_store_slot_field(&pf, &t, i)
    };
    assert!(check("void f(void) { p->ndo_open = g; }"));
    assert!(check("void f(void) { p . ndo_open |= g; }"));
    assert!(check("void f(void) { p->\n ndo_open = g; }"));
    assert!(check("void f(void) { p->ndo_open // c\n = g; }"));
    assert!(check("void f(void) { p->ndo_open // from q.x\n = g; }"));
    assert!(!check("void f(void) { p->count = g; }"));
    assert!(!check("void f(void) {\n\tret = g; }"));
    assert!(!check("void f(void) { a[ndo_open] = g; }"));
}
