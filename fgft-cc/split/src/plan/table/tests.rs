use super::*;

/// A table file's text, as if read from x/compensations.toml.
fn src(text: &str) -> TableSource {
    TableSource {
        path: Some("x/compensations.toml".into()),
        text: text.into(),
    }
}

#[test]
fn builtin_table_loads() {
    let t = Table::from_sources(&[TableSource {
        path: None,
        text: BUILTIN.to_string(),
    }])
    .unwrap();
    let k = &t.apis["kmalloc"];
    assert_eq!(k.ret, "void *");
    assert_eq!(k.params.len(), 2);
    assert!(k.undo.is_some());
    assert!(t.apis["kfree"].commit);
    assert_eq!(
        t.apis["spin_lock_irqsave"].lock,
        Some(LockKind::SpinIrqsave)
    );
    assert_eq!(t.apis["ioremap"].memory, Memory::Io);
    assert_eq!(t.apis["dma_alloc_coherent"].memory, Memory::Shared);
    assert_eq!(t.apis["kmalloc"].memory, Memory::Plain);
    // strncmp reads at most n bytes of either string.
    let kinds: Vec<&ArgSpec> = t.apis["strncmp"].params.iter().map(|p| &p.kind).collect();
    assert_eq!(kinds[0], &ArgSpec::Str(Some("n".into())));
    assert_eq!(t.apis["strlen"].params[0].kind, ArgSpec::Str(None));
}

#[test]
fn arg_kinds_parse() {
    assert_eq!(parse_arg("str"), Some(ArgSpec::Str(None)));
    assert_eq!(
        parse_arg(" str( len ) "),
        Some(ArgSpec::Str(Some("len".into())))
    );
    assert_eq!(parse_arg("in(n)"), Some(ArgSpec::In("n".into())));
    assert_eq!(parse_arg("string"), None);
}

#[test]
fn checked_io_accessors_are_device_accessors_of_a_width_of_their_kind() {
    let t = Table::from_sources(&[TableSource {
        path: None,
        text: BUILTIN.to_string(),
    }])
    .unwrap();
    let io = |kind, bytes| IoAccess { kind, bytes };
    assert_eq!(t.io_checked["readl"], io(IoKind::MmioRead, 4));
    assert_eq!(t.io_checked["__writeq"], io(IoKind::MmioWrite, 8));
    assert_eq!(t.io_checked["insw"], io(IoKind::RepIn, 2));
    assert_eq!(t.io_checked["outsl"], io(IoKind::RepOut, 4));
    assert!(!t.io_checked.contains_key("__inb"));
    let ok = "[inline]\ndevice = [\"rd\"]\nmmio_read = { rd = 2 }\n";
    assert_eq!(
        Table::from_sources(&[src(ok)]).unwrap().io_checked["rd"],
        io(IoKind::MmioRead, 2)
    );
    for (text, want) in [
        (
            "[inline]\ndevice = [\"rd\"]\nmmio_write = { wr = 4 }\n",
            "[inline] mmio_write: `wr` is not in `device`",
        ),
        (
            "[inline]\ndevice = [\"rd\"]\nmmio_read = { rd = 3 }\n",
            "`rd` accesses 3 bytes; one of 1, 2, 4, 8 expected",
        ),
        (
            "[inline]\ndevice = [\"rd\"]\nrep_in = { rd = 8 }\n",
            "`rd` accesses 8 bytes; one of 1, 2, 4 expected",
        ),
    ] {
        match Table::from_sources(&[src(text)]) {
            Err(Error::Located(d)) => {
                assert!(d[0].message.contains(want), "{}", d[0].message);
                // On the accessor's line of its kind, not of `device`.
                assert!(d[0].range.start > text.find("device").unwrap() + 10);
            }
            other => panic!("expected a located error, got {other:?}"),
        }
    }
}

#[test]
fn requires_needs_a_condition_and_a_reason_and_a_wrapper() {
    let base = "[api.wb]\neffect = \"state\"\nproto = \"int wb(unsigned int len)\"\n";
    let ok =
        format!("{base}requires = [{{ cond = \"len <= 4096\", why = \"BUG_ON(len > 4096)\" }}]\n");
    let t = Table::from_sources(&[src(&ok)]).unwrap();
    assert_eq!(
        t.apis["wb"].requires,
        vec![Require {
            cond: "len <= 4096".into(),
            why: "BUG_ON(len > 4096)".into()
        }]
    );
    for bad in [
        ok.replace("len <= 4096", " "),
        ok.replace("int wb(unsigned int len)", "int wb(const char *fmt, ...)"),
    ] {
        match Table::from_sources(&[src(&bad)]) {
            Err(Error::Located(d)) => {
                assert!(d[0].message.contains("requires"), "{d:?}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn reach_takes_r_w_or_rw_and_a_located_error_otherwise() {
    let base = "[api.puts8]\neffect = \"pure\"\nproto = \"void puts8(u8 **data, const char *s)\"\n";
    let ok = format!("{base}reach = [{{ addr = \"*data\", len = \"8\", rights = \"w\" }}]\n");
    let t = Table::from_sources(&[src(&ok)]).unwrap();
    assert_eq!(
        t.apis["puts8"].reach,
        vec![Reach {
            addr: "*data".into(),
            len: "8".into(),
            rights: "FGFT_W"
        }]
    );
    let bad = ok.replace("rights = \"w\"", "rights = \"x\"");
    match Table::from_sources(&[src(&bad)]) {
        Err(Error::Located(d)) => assert!(d[0].message.contains("reach rights"), "{d:?}"),
        other => panic!("expected a located error, got {other:?}"),
    }
    let empty = ok.replace("addr = \"*data\"", "addr = \" \"");
    assert!(matches!(
        Table::from_sources(&[src(&empty)]),
        Err(Error::Located(_))
    ));
}

#[test]
fn io_memory_takes_no_grant() {
    let io = "[api.mapit]\neffect = \"alloc\"\nproto = \"void *mapit(unsigned long size)\"\nmemory = \"io\"\n";
    assert_eq!(
        Table::from_sources(&[src(io)]).unwrap().apis["mapit"].memory,
        Memory::Io
    );
    let granted = format!("{io}grant = \"size\"\n");
    match Table::from_sources(&[src(&granted)]) {
        Err(Error::Located(d)) => {
            assert!(d[0].message.contains("\"io\", on one without `grant`"))
        }
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn heap_names_the_result_of_an_allocator_and_the_parameter_of_a_free_or_a_handover() {
    let alloc = "[api.getit]\neffect = \"alloc\"\nproto = \"void *getit(unsigned long size)\"\ngrant = \"size\"\n";
    let free = "[api.putit]\neffect = \"free\"\nproto = \"void putit(void *obj)\"\ncommit = true\n";
    let wrap = "[api.wrapit]\neffect = \"alloc\"\nproto = \"struct x *wrapit(void *data, unsigned int n)\"\ngrant = \"8\"\n";
    let t = Table::from_sources(&[src(&format!(
        "{alloc}heap = \"ret\"\n{free}heap = \"obj\"\n{wrap}heap = \"data\"\n"
    ))])
    .unwrap();
    assert_eq!(t.apis["getit"].heap.as_deref(), Some("ret"));
    assert_eq!(t.apis["putit"].heap.as_deref(), Some("obj"));
    assert_eq!(t.apis["wrapit"].heap.as_deref(), Some("data"));
    for bad in [
        format!("{alloc}heap = \"size\"\n"),
        format!("{free}heap = \"ptr\"\n"),
        format!("{wrap}heap = \"n\"\n"),
        "[api.getit]\neffect = \"alloc\"\nproto = \"void *getit(void)\"\nheap = \"ret\"\n"
            .to_string(),
    ] {
        match Table::from_sources(&[src(&bad)]) {
            Err(Error::Located(d)) => assert!(d[0].message.contains("`heap = ")),
            other => panic!("expected a located error, got {other:?}"),
        }
    }
}

#[test]
fn readonly_is_for_pure_functions_that_write_nothing() {
    let cmp = "[api.cmpit]\neffect = \"pure\"\nproto = \"int cmpit(const void *a, size_t n)\"\nargs.a = \"in(n)\"\nreadonly = true\n";
    assert!(Table::from_sources(&[src(cmp)]).unwrap().apis["cmpit"].readonly);
    assert!(Table::from_sources(&[src(BUILTIN)]).is_ok());
    for bad in [
        cmp.replace("in(n)", "out(n)"),
        cmp.replace("\"pure\"", "\"state\""),
        cmp.replace("int cmpit", "void cmpit"),
    ] {
        match Table::from_sources(&[src(&bad)]) {
            Err(Error::Located(d)) => assert!(d[0].message.contains("`readonly`"), "{d:?}"),
            other => panic!("expected a located error for {bad}, got {other:?}"),
        }
    }
}

#[test]
fn proto_parse() {
    let (r, p, _) = parse_proto(
        "dma_alloc_coherent",
        "void *dma_alloc_coherent(struct device *dev, size_t size, dma_addr_t *dma_handle, gfp_t gfp)",
    )
    .unwrap();
    assert_eq!(r, "void *");
    assert_eq!(p[0].ty, "struct device *");
    assert_eq!(p[2].name, "dma_handle");
    assert!(parse_proto("f", "int g(void)").is_err());
    assert!(parse_proto("f", "int f(const char *fmt, ...)").unwrap().2);
}

#[test]
fn bad_entries_are_located() {
    let bad = TableSource {
        path: Some("x/compensations.toml".into()),
        text: "[api.foo]\neffect = \"magic\"\nproto = \"void foo(void)\"\n".into(),
    };
    match Table::from_sources(&[bad]) {
        Err(Error::Located(d)) => {
            assert!(d[0].message.contains("unknown effect"));
            assert!(d[0].range.start > 0);
        }
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn a_locked_result_needs_its_release() {
    let src = |body: &str| TableSource {
        path: Some("x/compensations.toml".into()),
        text: body.into(),
    };
    let unlock = "[api.put_unlock]\neffect = \"unlock\"\nproto = \"void put_unlock(struct thing *t)\"\nunlock = \"call\"\n";
    let get = "[api.get_locked]\neffect = \"alloc\"\nproto = \"struct thing *get_locked(int flags)\"\nlocks_result = \"flags & 1\"\n";
    let ok = format!("{unlock}{get}release = \"put_unlock\"\n");
    let t = Table::from_sources(&[src(&ok)]).unwrap();
    assert_eq!(
        t.apis["get_locked"].locks_result.as_deref(),
        Some("flags & 1")
    );
    match Table::from_sources(&[src(&format!("{unlock}{get}"))]) {
        Err(Error::Located(d)) => assert!(d[0].message.contains("needs `release`"), "{d:?}"),
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn raw_is_for_spinning_locks_only() {
    let src = |body: &str| TableSource {
        path: Some("x/compensations.toml".into()),
        text: body.into(),
    };
    let ok = "[api.raw_spin_lock]\neffect = \"lock\"\nproto = \"void raw_spin_lock(raw_spinlock_t *lock)\"\nlock = \"spin\"\nraw = true\n";
    let t = Table::from_sources(&[src(ok)]).unwrap();
    assert!(t.apis.get("raw_spin_lock").is_some_and(|e| e.raw));
    let bad = "[api.m]\neffect = \"lock\"\nproto = \"void m(struct mutex *lock)\"\nlock = \"mutex\"\nraw = true\n";
    match Table::from_sources(&[src(bad)]) {
        Err(Error::Located(d)) => assert!(d[0].message.contains("raw_spinlock_t"), "{d:?}"),
        other => panic!("expected a located error, got {other:?}"),
    }
}
