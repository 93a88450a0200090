use super::*;
use crate::plan::table::parse_proto;

#[test]
fn accessors_are_redefined_by_kind() {
    let table = Table::from_sources(&[fgft_parse::tables::TableSource {
        path: None,
        text: crate::plan::table::BUILTIN.to_string(),
    }])
    .unwrap();
    let used: BTreeSet<String> = ["readl", "__writeq", "insw", "outsl", "__inb"]
        .iter()
        .map(|n| n.to_string())
        .collect();
    let out = accessor_redefinitions(&used, &table);
    for line in [
        "#define readl(a) FGFT_MMIO_R(readl, 4, a)",
        "#define __writeq(v, a) FGFT_MMIO_W(__writeq, 8, v, a)",
        "#define insw(p, b, c) FGFT_REP(insw, 2, FGFT_W, p, b, c)",
        "#define outsl(p, b, c) FGFT_REP(outsl, 4, FGFT_R, p, b, c)",
        "#define __inb(...) (fgft_touch_sfi(), (__inb)(__VA_ARGS__))",
    ] {
        assert!(out.lines().any(|l| l == line), "{line} in:\n{out}");
    }
    assert_eq!(out.matches("#undef ").count(), 5);
    assert!(accessor_redefinitions(&BTreeSet::new(), &table).is_empty());
}

fn entry(proto: &str, undo: &str) -> ApiEntry {
    let name = proto[..proto.find('(').unwrap()]
        .split([' ', '*'])
        .next_back()
        .unwrap()
        .to_string();
    let (ret, params, variadic) = parse_proto(&name, proto).unwrap();
    ApiEntry {
        name,
        effect: "alloc".into(),
        inline: false,
        ret,
        params,
        variadic,
        header: None,
        model: None,
        returns: fgft_facts::model::Returns::Plain,
        grant: None,
        grant_more: vec![],
        reach: vec![],
        requires: vec![],
        save: None,
        undo: Some(undo.into()),
        undo_if: None,
        commit: false,
        commit_ret: None,
        lock: None,
        unlock: None,
        lock_arg: None,
        release: None,
        lock_ok: None,
        locks_result: None,
        sleeps: false,
        undo_unlocked: false,
        heap: None,
        callbacks: Vec::new(),
        raw: false,
        readonly: false,
        memory: crate::plan::table::Memory::Plain,
        makes: None,
        block_of: None,
        note: None,
        audit: None,
        source: "t".into(),
    }
}

#[test]
fn memory_reached_through_an_argument_is_checked_before_the_call() {
    let mut e = entry("void ethtool_puts(u8 **data, const char *str)", "");
    e.undo = None;
    e.effect = "pure".into();
    e.params[0].kind = ArgSpec::InOut("sizeof(u8 *)".into());
    e.reach = vec![crate::plan::table::Reach {
        addr: "*data".into(),
        len: "ETH_GSTRING_LEN".into(),
        rights: "FGFT_W",
    }];
    let mut s = String::new();
    wrapper(&mut s, "d", &e, None);
    let cursor = s.find("fgft_sfi_d_checked(data, sizeof(u8 *), FGFT_RW);");
    let bytes = s.find("fgft_check_or_fail(*data, ETH_GSTRING_LEN, FGFT_W);");
    let call = s.find("ethtool_puts(data, str);");
    assert!(
        cursor.is_some() && cursor < bytes && bytes < call,
        "cursor, then its bytes, then the call:\n{s}"
    );
    // Without a reach there is no such check.
    e.reach.clear();
    let mut s = String::new();
    wrapper(&mut s, "d", &e, None);
    assert!(!s.contains("fgft_check_or_fail"), "{s}");
}

#[test]
fn an_assertion_the_kernel_makes_is_tested_before_the_call() {
    let mut e = entry(
        "int __block_write_begin(struct folio *folio, loff_t pos, unsigned int len, get_block_t *get_block)",
        "",
    );
    e.undo = None;
    e.params[0].kind = ArgSpec::Kobj;
    e.requires = vec![crate::plan::table::Require {
        cond: "offset_in_folio(folio, pos) + len <= folio_size(folio)".into(),
        why: "fs/buffer.c: BUG_ON(to > folio_size(folio))".into(),
    }];
    let mut s = String::new();
    wrapper(&mut s, "d", &e, None);
    let kobj = s.find("folio = fgft_kobj_in(txn, (const void *)folio);");
    let test = s.find("if (!(offset_in_folio(folio, pos) + len <= folio_size(folio)))");
    let fail = s.find("\t\tfgft_fail_cause(FGFT_CAUSE_ASSERT);");
    let call = s.find("__block_write_begin(folio, pos, len, get_block);");
    assert!(
        kobj.is_some() && kobj < test && test < fail && fail < call,
        "the original, then the test, then the call:\n{s}"
    );
    assert!(
        s.contains("/* fs/buffer.c: BUG_ON(to > folio_size(folio)) */"),
        "{s}"
    );
    e.requires.clear();
    let mut s = String::new();
    wrapper(&mut s, "d", &e, None);
    assert!(!s.contains("FGFT_CAUSE_ASSERT"), "{s}");
}

#[test]
fn further_grants_are_mapped_under_their_condition() {
    let mut e = entry(
        "int pskb_expand_head(struct sk_buff *skb, int nhead, int ntail, gfp_t gfp_mask)",
        "",
    );
    e.undo = None;
    e.effect = "state".into();
    e.grant_more = vec![MoreGrant {
        addr: "skb->head".into(),
        len: "n".into(),
        rights: "new".into(),
        when: Some("!ret".into()),
    }];
    let mut s = String::new();
    call_body(&mut s, "d", &e);
    assert!(
        s.contains(
            "\tif (txn && (!ret))\n\t\tfgft_map(txn, skb->head, n, FGFT_RW | FGFT_NOLOG);\n"
        ),
        "{s}"
    );
    // Without a condition: a pointer result that is no error or NULL;
    // a void function's always.
    e.grant_more[0].when = None;
    let mut s = String::new();
    call_body(&mut s, "d", &e);
    assert!(s.contains("\tif (txn && !IS_ERR_OR_NULL(ret))\n"), "{s}");
    let mut v = entry("void skb_trim(struct sk_buff *skb, unsigned int len)", "");
    v.undo = None;
    v.grant_more = e.grant_more.clone();
    let mut s = String::new();
    call_body(&mut s, "d", &v);
    assert!(s.contains("\tif (txn)\n\t\tfgft_map(txn, skb->head"), "{s}");
}

#[test]
fn undo_captures_values_at_call_time() {
    let e = entry(
        "void *dma_alloc_coherent(struct device *dev, size_t size, dma_addr_t *dma_handle, gfp_t gfp)",
        "dma_free_coherent(dev, size, ret, *dma_handle)",
    );
    let caps = captures(&e, e.undo.as_deref().unwrap());
    let exprs: Vec<&str> = caps.iter().map(|c| c.expr.as_str()).collect();
    assert_eq!(exprs, vec!["dev", "size", "ret", "*dma_handle"]);
    assert_eq!(caps[3].ty, "dma_addr_t");
    assert_eq!(
        with_args(e.undo.as_deref().unwrap(), &caps),
        "dma_free_coherent(((struct device *)a0), ((size_t)a1), ((void *)a2), ((dma_addr_t)a3))"
    );
}

#[test]
fn substitution_respects_tokens() {
    assert_eq!(
        subst("dev + device", |i| (i == "dev").then(|| "X".into())),
        "X + device"
    );
}
