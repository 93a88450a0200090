use super::*;
use std::path::Path;

/// A small driver-like file of ours exercising every site kind.
const FIXTURE: &str = r#"struct hw { int mac_type; int regs[8]; };
struct adapter { struct hw *hw; int msg_enable; int count; spinlock_t lock; };

static int fx_get_regs(struct adapter *adapter, int *buf, int len)
{
	struct hw *hw = adapter->hw;
	int i;

	spin_lock(&adapter->lock);
	for (i = 0; i < len; i++)
		buf[i] = hw->regs[i];
	adapter->count++;
	spin_unlock(&adapter->lock);
	return len / adapter->count;
}

static void fx_set_msglevel(struct adapter *adapter, int data)
{
	if (adapter->msg_enable != data)
		adapter->msg_enable = data;
}

static int fx_ioctl(struct adapter *adapter, int cmd)
{
	switch (cmd) {
	case 1:
		return adapter->count;
	default:
		adapter->msg_enable = cmd;
		break;
	}
	return 0;
}

static int fx_other(struct adapter *adapter)
{
	return adapter->count;
}

static int *fx_fill(struct adapter *adapter, int *buf)
{
	memcpy(buf, adapter->hw->regs, sizeof(adapter->hw->regs));
	return buf;
}
"#;

/// User-space stand-ins for the kernel names the fixture and guards use.
const PRELUDE: &str = r#"#include <string.h>
#include <stdbool.h>
typedef int spinlock_t;
#define NULL ((void *)0)
static void spin_lock(spinlock_t *l) { (void)l; }
static void spin_unlock(spinlock_t *l) { (void)l; }
#define BUG() __builtin_trap()
bool fgft_inject_hit(int id) { return id == 0; }
"#;

fn sources() -> Vec<Source> {
    let file = fgft_parse::parse_text(Path::new("fx.c"), FIXTURE.to_string()).unwrap();
    vec![Source {
        rel: PathBuf::from("drivers/fx/fx.c"),
        file,
    }]
}

fn is_fx_entry(n: &str) -> bool {
    n == "fx_get_regs" || n == "fx_set_msglevel" || n == "fx_ioctl" || n == "fx_fill"
}

#[test]
fn finds_every_kind_in_entries_only() {
    let src = sources();
    let sites = find_sites(&src, &is_fx_entry);
    for k in FaultKind::ALL {
        assert!(sites.iter().any(|s| s.kind == k), "no {k} site");
    }
    assert!(sites.iter().all(|s| s.entry != "fx_other"));
    // The boundary kinds: a returned value, a helper's count, a stored member.
    for k in FaultKind::BOUNDARY {
        assert!(sites.iter().any(|s| s.kind == k), "no {k} site");
    }
    for s in sites.iter().filter(|s| s.kind == FaultKind::CorruptLen) {
        assert!(
            s.target.starts_with("memcpy: ") || s.target.contains(": "),
            "{s:?}"
        );
    }
    // fx_set_msglevel returns nothing: no corrupt-ret there.
    assert!(!sites
        .iter()
        .any(|s| s.kind == FaultKind::CorruptRet && s.entry == "fx_set_msglevel"));
    // Guards in a switch go after the case label, never before it.
    for s in sites
        .iter()
        .filter(|s| s.entry == "fx_ioctl" && s.range.is_empty())
    {
        let line = FIXTURE.lines().nth(s.line - 1).unwrap();
        assert!(
            !line.trim_start().starts_with("case") && !line.trim_start().starts_with("default"),
            "{line}"
        );
    }
    // The loop bound is the off-by-one site; the division's right side a div-zero site.
    let obo = sites
        .iter()
        .find(|s| s.kind == FaultKind::OffByOne)
        .unwrap();
    assert_eq!(&FIXTURE[obo.range.clone()], "len");
    assert!(sites
        .iter()
        .any(|s| s.kind == FaultKind::DivZero && &FIXTURE[s.range.clone()] == "adapter->count"));
    // Wild writes only at stores.
    for s in sites.iter().filter(|s| s.kind == FaultKind::WildWrite) {
        let line = FIXTURE.lines().nth(s.line - 1).unwrap();
        assert!(line.contains('=') || line.contains("++"), "{line}");
    }
}

#[test]
fn selection_is_deterministic_and_seeded() {
    let src = sources();
    let sites = find_sites(&src, &is_fx_entry);
    let opts = |seed| Options {
        seed,
        per_entry: 6,
        kinds: vec![],
    };
    let a: Vec<String> = select(&src, &sites, &opts(7))
        .into_iter()
        .map(|v| v.label)
        .collect();
    let b: Vec<String> = select(&src, &sites, &opts(7))
        .into_iter()
        .map(|v| v.label)
        .collect();
    let c: Vec<String> = select(&src, &sites, &opts(8))
        .into_iter()
        .map(|v| v.label)
        .collect();
    assert_eq!(a, b);
    assert_ne!(a, c, "another seed should pick other sites");
    assert!(a.len() >= 8, "{a:?}");
    insta::assert_snapshot!(a.join("\n"));
}

#[test]
fn edits_keep_lines_and_compile() {
    let src = sources();
    let sites = find_sites(&src, &is_fx_entry);
    let vs = select(
        &src,
        &sites,
        &Options {
            seed: 1,
            per_entry: 100,
            kinds: FaultKind::ALL
                .iter()
                .chain(FaultKind::BOUNDARY.iter())
                .copied()
                .collect(),
        },
    );
    let out = apply(&src, &vs).unwrap();
    assert_eq!(out[0].lines().count(), FIXTURE.lines().count());
    for k in FaultKind::ALL.iter().chain(FaultKind::BOUNDARY.iter()) {
        assert!(vs.iter().any(|v| v.kind == *k), "{k} not selected");
    }
    // Every guard form must be valid C (gcc, user space).
    let dir = std::env::temp_dir().join(format!("fgft-inject-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("fx.c");
    std::fs::write(&c, format!("{PRELUDE}{}", out[0])).unwrap();
    let st = std::process::Command::new("gcc")
        .args([
            "-std=gnu11",
            "-fsyntax-only",
            "-Wall",
            "-Wimplicit-fallthrough",
            "-Werror",
            "-Wno-unused-function",
        ])
        .arg(&c)
        .output()
        .expect("gcc runs");
    assert!(
        st.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&st.stderr),
        out[0]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unknown_kind_is_an_error() {
    assert!(matches!(
        FaultKind::parse("nope"),
        Err(InjectError::UnknownKind(_))
    ));
    assert_eq!(FaultKind::parse("div-zero").unwrap(), FaultKind::DivZero);
}

/// Kernel forms that broke early guards: a bit-field member read in a
/// condition (`__auto_type` refuses a bit-field initializer) and an access
/// whose statement sits in an `#ifdef` branch (a guard before the directive
/// would leave `#` in the middle of a line).
const FIXTURE_FORMS: &str = r#"struct priv { unsigned int mii:1, fdx:1; int count; };

static int fy_get(struct priv *p, int *out)
{
	if (p->mii)
		*out = 1;
#ifdef FY_EXTRA
	p->count = 2;
#endif
	return p->fdx;
}

static int fy_len(struct priv *p)
{
#ifdef FY_EXTRA
	if (p->count == 3)
		return 1 << 16;
#endif
	return p->count;
}
"#;

#[test]
fn bit_fields_and_ifdef_branches_compile() {
    let file = fgft_parse::parse_text(Path::new("fy.c"), FIXTURE_FORMS.to_string()).unwrap();
    let src = vec![Source {
        rel: PathBuf::from("drivers/fy/fy.c"),
        file,
    }];
    // fy_len's body opens with a directive (fs/ext2's
    // ext2_rec_len_to_disk()): the stack overrun goes after it.
    let sites = find_sites(&src, &|n| n == "fy_get" || n == "fy_len");
    assert!(
        sites
            .iter()
            .any(|s| s.entry == "fy_len" && s.kind == FaultKind::StackOverrun),
        "{sites:?}"
    );
    let vs = select(
        &src,
        &sites,
        &Options {
            seed: 3,
            per_entry: 100,
            kinds: vec![],
        },
    );
    assert!(
        vs.iter()
            .any(|v| v.kind == FaultKind::CorruptField && v.target.contains("mii")),
        "{:?}",
        vs.iter().map(|v| &v.label).collect::<Vec<_>>()
    );
    assert!(
        vs.iter().any(|v| v.line == 8),
        "a variant in the #ifdef branch: {:?}",
        vs.iter().map(|v| &v.label).collect::<Vec<_>>()
    );
    let out = apply(&src, &vs).unwrap();
    assert_eq!(out[0].lines().count(), FIXTURE_FORMS.lines().count());
    for l in out[0].lines() {
        if let Some(at) = l.find('#') {
            assert!(l[..at].trim().is_empty(), "directive not first: {l}");
        }
    }
    let dir = std::env::temp_dir().join(format!("fgft-inject-forms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("fy.c");
    for def in ["-DFY_EXTRA", "-UFY_EXTRA"] {
        std::fs::write(&c, format!("{PRELUDE}{}", out[0])).unwrap();
        let st = std::process::Command::new("gcc")
            .args(["-std=gnu11", "-fsyntax-only", "-Wall", "-Werror"])
            .args(["-Wno-unused-function", def])
            .arg(&c)
            .output()
            .expect("gcc runs");
        assert!(
            st.status.success(),
            "{def}: {}\n{}",
            String::from_utf8_lossy(&st.stderr),
            out[0]
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
