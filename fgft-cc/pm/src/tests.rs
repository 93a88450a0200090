use super::*;
use std::path::Path;

/// A driver-shaped PM path of ours: suspend calls a shared shutdown helper
/// that disables the device; resume re-enables it and restarts the rings.
const FIXTURE: &str = r#"struct fx { int running; int irq; };

static void fx_down(struct fx *fx)
{
	fx->running = 0;
}

static int fx_shutdown(struct pci_dev *pdev, struct fx *fx)
{
	fx_down(fx);
	free_irq(fx->irq, fx);
	pci_save_state(pdev);
	pci_disable_device(pdev);
	return pci_set_power_state(pdev, 3);
}

static int fx_suspend(struct device *dev)
{
	struct pci_dev *pdev = to_pci_dev(dev);
	struct fx *fx = pci_get_drvdata(pdev);

	return fx_shutdown(pdev, fx);
}

static int fx_resume(struct device *dev)
{
	struct pci_dev *pdev = to_pci_dev(dev);
	struct fx *fx = pci_get_drvdata(pdev);
	int err;

	pci_set_power_state(pdev, 0);
	err = pci_enable_device(pdev);
	if (err)
		return err;
	if (request_irq(fx->irq, 0, 0, "fx", fx))
		return -1;
	fx->running = 1;
	return 0;
}
"#;

/// User-space stand-ins so the generated C can be compiled here.
const PRELUDE: &str = r#"struct device { int x; };
struct pci_dev { struct device dev; void *drv; };
#define to_pci_dev(d) ((struct pci_dev *)(d))
static void *pci_get_drvdata(struct pci_dev *p) { return p->drv; }
static void free_irq(int irq, void *d) { (void)irq; (void)d; }
static int request_irq(int irq, int h, int f, const char *n, void *d) { (void)irq; (void)h; (void)f; (void)n; (void)d; return 0; }
static void pci_save_state(struct pci_dev *p) { (void)p; }
static void pci_disable_device(struct pci_dev *p) { (void)p; }
static int pci_enable_device(struct pci_dev *p) { (void)p; return 0; }
static int pci_set_power_state(struct pci_dev *p, int s) { (void)p; return s; }
struct fgft_dev_ops { int (*checkpoint)(void *); void (*restore)(void *); };
struct list_head { struct list_head *next, *prev; };
#define LIST_HEAD(n) struct list_head n = { &n, &n }
#define DEFINE_SPINLOCK(n) int n
#define spin_lock_irqsave(l, f) ((void)(l), (f) = 0)
#define spin_unlock_irqrestore(l, f) ((void)(l), (void)(f))
#define list_first_entry_or_null(h, t, m) ((h)->next == (h) ? (t *)0 : (t *)(h)->next)
#define list_for_each_entry(p, h, m) for (p = (void *)(h)->next; &p->m != (h); p = (void *)p->m.next)
#include <stdbool.h>
static void list_del(struct list_head *e) { e->prev->next = e->next; e->next->prev = e->prev; }
static void list_add_tail(struct list_head *e, struct list_head *h) { e->next = h; e->prev = h->prev; h->prev->next = e; h->prev = e; }
struct work_struct { void (*fn)(struct work_struct *); };
#define DECLARE_WORK(n, f) struct work_struct n = { f }
static void schedule_work(struct work_struct *w) { w->fn(w); }
static void flush_work(struct work_struct *w) { (void)w; }
static int preemptible(void) { return 1; }
static int fgft_may_restore_now(void) { return preemptible(); }
#define GFP_ATOMIC 0
#define EAGAIN 11
void *kzalloc(unsigned long n, int f);
void kfree(void *p);
static struct device *get_device(struct device *d) { return d; }
static void put_device(struct device *d) { (void)d; }
void fgft_pm_flush_fx(void);
int fgft_pci_checkpoint(struct pci_dev *p);
void fgft_pci_restore(struct pci_dev *p);
"#;

fn parsed() -> Vec<ParsedFile> {
    vec![fgft_parse::parse_text(Path::new("fx.c"), FIXTURE.to_string()).unwrap()]
}

fn cb() -> PmCallbacks {
    PmCallbacks {
        suspend: "fx_suspend".into(),
        resume: "fx_resume".into(),
        pci_bus: false,
        key_to_dev: Some("(struct device *)key".into()),
    }
}

#[test]
fn derives_filtered_restore_and_pci_checkpoint() {
    let files = parsed();
    let d = derive(&files, &cb(), &Rules::default_rules(), "fx").unwrap();
    assert!(d.pci);
    // The power transition, disable and enable are gone; irq free/request and
    // the driver's own down/up logic stay.
    let dropped: Vec<_> = d
        .decisions
        .iter()
        .filter(|x| x.action == "dropped")
        .map(|x| x.call.as_str())
        .collect();
    assert!(dropped.contains(&"pci_disable_device"));
    assert!(dropped.contains(&"pci_enable_device"));
    assert!(dropped.contains(&"pci_set_power_state"));
    assert!(!dropped.contains(&"free_irq") && !dropped.contains(&"request_irq"));
    assert!(d.c.contains("fgft_pm_fx_shutdown(pdev, fx)"));
    assert!(!d.c.contains("fgft_pm_fx_down"), "fx_down needs no copy");
    assert!(d
        .c
        .contains("err = 0 /* fgft-pm: dropped pci_enable_device(pdev) */"));
    // The copies hold driver text; the glue only what fgft writes.
    assert!(d.copies.contains("fgft_pm_fx_shutdown") && !d.glue.contains("fx->running"));
    assert_eq!(d.c, format!("{}{}", d.copies, d.glue));
    assert_eq!(d.checkpoint_fn.as_deref(), Some("fgft_checkpoint_fx"));
    assert_eq!(d.dev_restore_fn, "fgft_restore_dev_fx");
    // Without a key conversion: device-level functions only, no ops.
    let mut plain = cb();
    plain.key_to_dev = None;
    let p = derive(&files, &plain, &Rules::default_rules(), "fx").unwrap();
    assert!(!p.c.contains("fgft_dev_ops_fx") && p.c.contains("fgft_restore_dev_fx"));
    assert_eq!(p.restore_fn, "fgft_restore_dev_fx");
    insta::assert_snapshot!(d.c);
}

#[test]
fn generated_c_compiles() {
    let files = parsed();
    let d = derive(&files, &cb(), &Rules::default_rules(), "fx").unwrap();
    let dir = std::env::temp_dir().join(format!("fgft-pm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("fx.c");
    std::fs::write(&c, format!("{PRELUDE}{FIXTURE}{}", d.c)).unwrap();
    let out = std::process::Command::new("gcc")
        .args([
            "-std=gnu11",
            "-fsyntax-only",
            "-Wall",
            "-Werror",
            "-Wno-unused-function",
        ])
        .arg(&c)
        .output()
        .expect("gcc runs");
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn missing_callback_and_bad_signature_are_errors() {
    let files = parsed();
    let bad = PmCallbacks {
        suspend: "nope".into(),
        resume: "fx_resume".into(),
        pci_bus: false,
        key_to_dev: None,
    };
    assert!(matches!(
        derive(&files, &bad, &Rules::default_rules(), "fx"),
        Err(PmError::Missing { .. })
    ));
    let odd = fgft_parse::parse_text(
        Path::new("odd.c"),
        "static int s(int x) { return x; }\nstatic int r(int x) { return x; }\n".into(),
    )
    .unwrap();
    let cb = PmCallbacks {
        suspend: "s".into(),
        resume: "r".into(),
        pci_bus: false,
        key_to_dev: None,
    };
    assert!(matches!(
        derive(&[odd], &cb, &Rules::default_rules(), "odd"),
        Err(PmError::Signature { .. })
    ));
}

#[test]
fn rules_reject_unknown_keys() {
    let e = Rules::parse(&[(
        "x.toml",
        "[restore]\ndrop = []\nbogus = 1\n[checkpoint]\npci_markers = []\n",
    )]);
    assert!(matches!(e, Err(PmError::Rules { .. })));
    let r = Rules::default_rules();
    assert_eq!(
        r.key_to_dev("struct net_device"),
        Some("((struct net_device *)key)->dev.parent")
    );
    assert_eq!(r.key_to_dev("struct snd_kcontrol"), None);
}
