//! Join points found in C source: member types resolved through locals,
//! parameters, struct field types, casts, typedefs and container_of; the
//! access kind; execution entries and every exit; call sites.

use fgft_aspect::{scan::Driver, weave, Aspect, Options};
use std::path::Path;

const HEADER: &str = r#"
struct inner { int x; int arr[4]; };
struct outer {
	struct inner in;
	struct inner *pin;
	int count;
	int vec[8];
	int *ptr;
	struct outer *next;
	struct { int a; } anon;
	union { int u1; long u2; };
};
typedef struct outer outer_t;
typedef outer_t *outer_p;
struct holder { int pad; struct outer o; };
"#;

const SOURCE: &str = r#"
#include "t.h"
#define container_of(p, t, m) ((t *)((char *)(p) - __builtin_offsetof(t, m)))

int reads(struct outer *o, outer_p op, void *raw)
{
	outer_t local;
	struct holder *h = container_of(o, struct holder, o);
	int s = o->count;

	s += op->count;
	s += ((struct outer *)raw)->count;
	s += local.count;
	s += o->next->count;
	s += o->in.x;
	s += o->pin->x;
	s += h->o.count;
	s += o->vec[2];
	s += *o->ptr;
	s += o->anon.a;
	s += o->u1;
	s += sizeof(o->count);
	return s;
}

void writes(struct outer *o, int v)
{
	int *p;

	o->count = v;
	o->count += v;
	o->count++;
	o->vec[1] = v;
	o->in.arr[0] = v;
	p = &o->count;
	o->ptr[0] = v;
	if (v)
		return;
	*p = 0;
}
"#;

fn weave_with(aspect: &str) -> fgft_aspect::Woven {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.h"), HEADER).unwrap();
    std::fs::write(dir.path().join("t.c"), SOURCE).unwrap();
    let a = Aspect::parse(Path::new("t.xml"), aspect).unwrap();
    let d = Driver::load(&[dir.path().to_path_buf()]).unwrap();
    weave(&a, &d, &Options::default()).unwrap()
}

fn listing(aspect: &str) -> Vec<String> {
    weave_with(aspect)
        .joinpoints
        .iter()
        .map(|j| {
            let t = j.line_text();
            // Drop the id and the file name: "kind line func what access".
            let mut f: Vec<&str> = t.split_whitespace().collect();
            f.remove(0);
            f.join(" ")
        })
        .collect()
}

#[test]
fn accesses_are_typed_and_classified() {
    let l = listing(
        "<aspect name=\"t\"><advice name=\"a\"><pointcut>access(outer.%) OR access(inner.%)</pointcut><before></before></advice></aspect>",
    );
    let text = l.join("\n");
    let expect = [
        "t.c:9 reads outer.count read",  // parameter
        "t.c:11 reads outer.count read", // typedef'd pointer parameter
        "t.c:12 reads outer.count read", // cast
        "t.c:13 reads outer.count read", // local of typedef type, `.`
        "t.c:14 reads outer.next read",  // field type ...
        "t.c:14 reads outer.count read", // ... of a field
        "t.c:15 reads outer.in read",    // embedded struct: the outer read
        "t.c:15 reads inner.x read",
        "t.c:16 reads inner.x read",     // through a pointer field
        "t.c:17 reads outer.count read", // container_of local
        "t.c:18 reads outer.vec read",   // array member
        "t.c:19 reads outer.ptr read",   // pointer member
        "t.c:20 reads outer.anon read",
        "t.c:21 reads outer.u1 read", // anonymous union member
        "t.c:30 writes outer.count write",
        "t.c:31 writes outer.count read-write",
        "t.c:32 writes outer.count read-write",
        "t.c:33 writes outer.vec write", // element of an array member
        "t.c:34 writes outer.in write",
        "t.c:34 writes inner.arr write",
        "t.c:35 writes outer.count address",
        "t.c:36 writes outer.ptr read", // the pointer is read, not written
    ];
    for e in expect {
        assert!(l.iter().any(|x| x.contains(e)), "missing `{e}` in:\n{text}");
    }
    // sizeof is not evaluated: line 22 has no join point.
    assert!(!text.contains("t.c:22"), "{text}");
    assert_eq!(l.len(), expect.len() + 1, "and t.c:16 outer.pin\n{text}");
}

#[test]
fn execution_entry_and_every_exit() {
    let w = weave_with(
        "<aspect name=\"t\"><advice name=\"a\"><pointcut>execution(%)</pointcut><before></before><after></after></advice></aspect>",
    );
    let l: Vec<String> = w.joinpoints.iter().map(|j| j.line_text()).collect();
    let text = l.join("\n");
    // reads: entry + one return; writes: entry + return inside if + fall-off.
    assert_eq!(
        l.iter().filter(|x| x.contains(" entry ")).count(),
        2,
        "{text}"
    );
    assert_eq!(
        l.iter()
            .filter(|x| x.contains(" exit ") && x.contains(" reads "))
            .count(),
        1,
        "{text}"
    );
    assert_eq!(
        l.iter()
            .filter(|x| x.contains(" exit ") && x.contains(" writes "))
            .count(),
        2,
        "{text}"
    );
    let c = &w.files["t.c"];
    assert!(c.contains("{ FGFT_T_"), "{c}");
    assert!(c.contains("return FGFT_T_"), "{c}");
    assert!(
        c.contains("\t\t{ FGFT_T_"),
        "a bare return gets braces: {c}"
    );
}

#[test]
fn pointcut_filters_and_bindings() {
    let w = weave_with(
        "<aspect name=\"t\"><advice name=\"a\"><pointcut>access(outer.count) AND within_function(writes) AND args(o, v) AND local(p) AND target(t)</pointcut><before></before></advice></aspect>",
    );
    assert_eq!(w.joinpoints.len(), 4, "{}", w.listing());
    let h = &w.files["fgft_aspect_t.h"];
    assert!(
        h.contains("void fgft_aspect_t_a_before(const struct fgft_aspect_jp *jp,"),
        "{h}"
    );
    assert!(
        h.contains("struct outer *o,") && h.contains("int v,") && h.contains("int *p,"),
        "{h}"
    );
    assert!(h.contains("void *t);"), "{h}");
    // Locals may be read before they are set: the hook says so to gcc.
    assert!(h.contains("-Wuninitialized"), "{h}");
}

#[test]
fn fall_off_hook_after_comments_and_directives() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("f.c"),
        "void a(int *p)\n{\n\t*p = 1;\n\t/* done */\n}\n\nvoid b(int *p)\n{\n\t*p = 2; // done\n}\n\nvoid c(int *p)\n{\n#ifdef X\n\t*p = 3;\n#endif\n}\n\nvoid d(int *p)\n{\n\t*p = 4;\n}\n",
    )
    .unwrap();
    let a = Aspect::parse(
        Path::new("t.xml"),
        "<aspect name=\"t\"><advice name=\"a\"><pointcut>execution(%)</pointcut><after></after></advice></aspect>",
    )
    .unwrap();
    let d = Driver::load(&[dir.path().to_path_buf()]).unwrap();
    let w = weave(&a, &d, &Options::default()).unwrap();
    let f = &w.files["f.c"];
    // Never inside a comment or on a directive's line.
    assert!(f.contains("/* done */\n FGFT_T_0();}"), "{f}");
    assert!(f.contains("// done\n FGFT_T_1();}"), "{f}");
    assert!(f.contains("#endif\n FGFT_T_2();}"), "{f}");
    assert!(f.contains("*p = 4; FGFT_T_3();\n}"), "{f}");
}
