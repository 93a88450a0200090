//! File systems in the VM (issue 17), stock first: images made on the host
//! with the real tools (util-linux's mkfs.minix, dosfstools' mkfs.vfat),
//! attached as virtio disks, mounted with Debian's own minix and vfat
//! modules, worked by fgft-fsw (which checks every read, listing and, at
//! the end, every file against its model), remounted and verified against
//! the saved model, then checked on the host with fsck.minix and
//! fsck.vfat -n. This is the baseline the fault campaign compares with.

use fgft_vm::{run, Env, VmSpec};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn env() -> Env {
    Env::load().expect("fgft environment (scripts/setup.sh --print-env)")
}

/// A fresh `mb`-MiB image at `path`, formatted by `mkfs` with `args`.
fn image(path: &Path, mb: u64, mkfs: &str, args: &[&str]) {
    let _ = std::fs::remove_file(path);
    let f = std::fs::File::create(path).unwrap();
    f.set_len(mb << 20).unwrap();
    drop(f);
    let out = Command::new(mkfs).args(args).arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "{mkfs} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Attaches the images as virtio disks, in order (/dev/vda, /dev/vdb, ...).
fn attach(spec: &mut VmSpec, imgs: &[&Path]) {
    for (i, img) in imgs.iter().enumerate() {
        spec.qemu_args.extend([
            "-drive".to_string(),
            format!("file={},if=none,format=raw,id=d{i}", img.display()),
            "-device".to_string(),
            format!("virtio-blk-pci,drive=d{i}"),
        ]);
    }
}

/// Runs `fsck` with `args` on `path`; its exit code and output.
fn fsck(fsck: &str, args: &[&str], path: &Path) -> (Option<i32>, String) {
    let out = Command::new(fsck).args(args).arg(path).output().unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The guest part for one file system: mount, work, unmount, mount again,
/// verify against the model, unmount.
fn work(dev: &str, fstype: &str, seed: u32, ops: u32) -> String {
    format!(
        "mkdir -p /mnt/{fstype}\n\
         mount -t {fstype} {dev} /mnt/{fstype} || {{ echo \"FGFT-MARK fs-mount-failed fs={fstype}\"; exit 11; }}\n\
         fgft-fsw -n {ops} -s {seed} -m /tmp/{fstype}.model /mnt/{fstype} | sed 's/^FGFT-MARK fsw /FGFT-MARK fsw fs={fstype} /'\n\
         umount /mnt/{fstype}\n\
         mount -t {fstype} {dev} /mnt/{fstype}\n\
         fgft-fsw -c -m /tmp/{fstype}.model /mnt/{fstype} | sed 's/^FGFT-MARK fsw /FGFT-MARK fsw fs={fstype} /'\n\
         umount /mnt/{fstype} && echo \"FGFT-MARK fs-umounted fs={fstype}\"\n"
    )
}

#[test]
fn stock_minix_and_vfat_keep_every_completed_write() {
    let env = env();
    let dir: PathBuf = env.target_dir.join("fs-images");
    std::fs::create_dir_all(&dir).unwrap();
    let minix = dir.join("stock-minix.img");
    let vfat = dir.join("stock-vfat.img");
    image(&minix, 16, "mkfs.minix", &["-3"]);
    image(&vfat, 32, "mkfs.vfat", &[]);

    let mut spec = VmSpec::new("fs-stock");
    spec.add_tool(&env, "fgft-fsw").unwrap();
    // vfat's default codepage and iocharset (Debian: cp437, ascii) are
    // modules of their own; mount fails with EINVAL without them.
    spec.stock_modules = ["virtio_blk", "minix", "vfat", "nls_cp437", "nls_ascii"]
        .map(String::from)
        .to_vec();
    attach(&mut spec, &[&minix, &vfat]);
    spec.script = format!(
        "for m in virtio_blk minix vfat nls_cp437 nls_ascii; do modprobe $m || exit 10; done\n\
         for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vdb ] && break; sleep 0.2; done\n\
         {}{}",
        work("/dev/vda", "minix", 1, 1500),
        work("/dev/vdb", "vfat", 2, 1500)
    );
    spec.timeout = Duration::from_secs(240);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}");
    for fs in ["minix", "vfat"] {
        let runs: Vec<_> = out
            .markers_named("fsw")
            .into_iter()
            .filter(|m| m.get("fs") == Some(fs))
            .collect();
        assert_eq!(runs.len(), 2, "{fs}: {out}");
        let (w, c) = (runs[0], runs[1]);
        assert_eq!(w.get("mode"), Some("run"), "{fs}: {w}");
        assert_eq!(
            (w.get("failed"), w.get("bad")),
            (Some("0"), Some("0")),
            "{fs}: {w}"
        );
        assert!(w.parse::<u64>("ok").unwrap_or(0) > 1000, "{fs}: {w}");
        assert!(w.parse::<u64>("files").unwrap_or(0) > 0, "{fs}: {w}");
        assert_eq!(
            (c.get("mode"), c.get("bad")),
            (Some("check"), Some("0")),
            "{fs}: {c}"
        );
        assert!(
            out.markers_named("fs-umounted")
                .iter()
                .any(|m| m.get("fs") == Some(fs)),
            "{fs}: {out}"
        );
    }
    let (code, text) = fsck("fsck.minix", &["-f"], &minix);
    assert_eq!(code, Some(0), "fsck.minix: {text}");
    let (code, text) = fsck("fsck.vfat", &["-n"], &vfat);
    assert_eq!(code, Some(0), "fsck.vfat: {text}");
}

/// The runtime, and fs/minix of `tree` split by fgft-cc with its sidecar
/// (and the extra table directories `tables`) and built: (runtime build
/// directory, split build directory).
fn split_minix(env: &Env, tree: &Path, tables: Vec<PathBuf>, name: &str) -> (PathBuf, PathBuf) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // A build directory per test: the tests run in parallel.
    let rt = fgft_vm::kbuild(
        env,
        &format!("{name}-rt"),
        &repo.join("runtime-kmod"),
        &env.kdir,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = env.target_dir.join(format!("{name}-split"));
    let opts = fgft_split::Options {
        annotations: vec![repo.join("corpus/upstream/minix.toml")],
        tree: Some(tree.to_path_buf()),
        kdir: Some(env.kdir.clone()),
        tables,
        runtime_symvers: Some(rt.join("Module.symvers")),
        ..Default::default()
    };
    fgft_campaign::split::split(&opts, &out, "minix").unwrap_or_else(|e| panic!("{e}"));
    let built = fgft_vm::kbuild(env, &format!("{name}-fgft"), &out, &env.kdir, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    (rt, built)
}

/// The upstream minix, split by fgft-cc with its sidecar
/// (corpus/upstream/minix.toml: its directory operations, attribute and
/// statfs calls isolated), loaded in place of Debian's module: the same
/// workload completes and verifies, every isolated operation commits, the
/// remount finds every completed write, and fsck.minix finds no error.
#[test]
fn split_minix_keeps_every_completed_write_under_fgft() {
    let env = env();
    let (rt, built) = split_minix(&env, &env.src612, Vec::new(), "fs-minix");
    let (mut spec, img) = minix_vm(&env, "fs-minix-fgft", (&rt, &built), 16);
    spec.script += &format!(
        "{}\
         S=/sys/kernel/debug/fgft/stats\n\
         echo \"FGFT-MARK rtstats $(grep -E '^(txns|commits|aborts) ' $S | tr ' ' '=' | tr '\\n' ' ')\"\n",
        work("/dev/vda", "minix", 3, 1500)
    );
    spec.timeout = Duration::from_secs(300);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}\n{}", out.tail(80));
    let runs = out.markers_named("fsw");
    assert_eq!(runs.len(), 2, "{out}");
    let (w, c) = (runs[0], runs[1]);
    assert_eq!(
        (w.get("mode"), w.get("failed"), w.get("bad")),
        (Some("run"), Some("0"), Some("0")),
        "{w}"
    );
    assert!(w.parse::<u64>("ok").unwrap_or(0) > 1000, "{w}");
    assert_eq!(
        (c.get("mode"), c.get("bad")),
        (Some("check"), Some("0")),
        "{c}"
    );
    let st = out.markers_named("rtstats");
    let st = st
        .first()
        .unwrap_or_else(|| panic!("no runtime stats: {out}"));
    let n = |k: &str| st.parse::<u64>(k).unwrap_or(0);
    assert!(
        n("commits") > 1000,
        "isolated operations ran as transactions: {st}"
    );
    assert_eq!(n("aborts"), 0, "{st}");
    let (code, text) = fsck("fsck.minix", &["-f"], &img);
    assert_eq!(code, Some(0), "fsck.minix: {text}");
}

/// The fault-injection switch as the compensation table sees it (a pure
/// call of fgft_rt.ko, as fgft-campaign declares it).
const INJECT_TABLE: &str = "[api.fgft_inject_hit]\neffect = \"pure\"\nproto = \"bool fgft_inject_hit(int id)\"\nheader = \"fgft/runtime.h\"\nargs.id = \"val\"\n";

/// fs/minix of linux-source-6.12 copied to `target/NAME`, with the faults
/// `fgft-cc inject` (the fgft_inject library) plants in the entry points
/// `is_entry` accepts, chosen with `opts`; and a table directory that
/// declares the injection switch.  (tree, variants, tables).
fn inject_minix(
    env: &Env,
    name: &str,
    is_entry: &dyn Fn(&str) -> bool,
    opts: &fgft_inject::Options,
) -> (PathBuf, Vec<fgft_inject::Variant>, PathBuf) {
    let tree = env.target_dir.join(name);
    let dir = tree.join("fs/minix");
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(&dir).unwrap();
    let mut sources = Vec::new();
    for e in std::fs::read_dir(env.src612.join("fs/minix")).unwrap() {
        let p = e.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().to_string();
        std::fs::copy(&p, dir.join(&file)).unwrap();
        if file.ends_with(".c") {
            let text = std::fs::read_to_string(&p).unwrap();
            sources.push(fgft_inject::Source {
                rel: PathBuf::from("fs/minix").join(&file),
                file: fgft_parse::parse_text(&p, text).unwrap(),
            });
        }
    }
    let sites = fgft_inject::find_sites(&sources, is_entry);
    let variants = fgft_inject::select(&sources, &sites, opts);
    assert!(!variants.is_empty(), "no injection site");
    let texts = fgft_inject::apply(&sources, &variants).unwrap();
    for (s, t) in sources.iter().zip(texts) {
        std::fs::write(tree.join(&s.rel), t).unwrap();
    }
    let tables = env.target_dir.join(format!("{name}-tables"));
    std::fs::create_dir_all(&tables).unwrap();
    std::fs::write(tables.join("compensations.toml"), INJECT_TABLE).unwrap();
    (tree, variants, tables)
}

/// A VM named `name` with fgft-fsw, the runtime and the split minix
/// (`rt`, `built` from [`split_minix`]) and a fresh minix image of `mb`
/// MiB as /dev/vda; the script starts by loading the modules.  (spec,
/// image).
fn minix_vm(env: &Env, name: &str, (rt, built): (&Path, &Path), mb: u64) -> (VmSpec, PathBuf) {
    let imgs: PathBuf = env.target_dir.join("fs-images");
    std::fs::create_dir_all(&imgs).unwrap();
    let img = imgs.join(format!("{name}.img"));
    image(&img, mb, "mkfs.minix", &["-3"]);
    let mut spec = VmSpec::new(name);
    spec.add_tool(env, "fgft-fsw").unwrap();
    spec.stock_modules = vec!["virtio_blk".into()];
    spec.modules = vec![
        rt.join("fgft_rt.ko"),
        built.join("minix_sfi.ko"),
        built.join("minix_fgft.ko"),
    ];
    attach(&mut spec, &[&img]);
    spec.script = "modprobe virtio_blk || exit 10\n\
         insmod /lib/fgft/fgft_rt.ko || exit 12\n\
         insmod /lib/fgft/minix_sfi.ko || exit 13\n\
         insmod /lib/fgft/minix_fgft.ko || exit 14\n"
        .to_string();
    (spec, img)
}

/// The recovery policy `retry` (slots.toml: every inode operation): a NULL
/// dereference planted by fgft-cc inject into minix_getattr, fired once
/// (transient), is hidden from the workload, which completes and verifies
/// with no error; fired every time (persistent), `stat` gets the error
/// while the file system stays mounted, and once disarmed the next
/// operations succeed.  fsck.minix finds no error.
#[test]
fn split_minix_hides_a_transient_fault_and_survives_a_persistent_one() {
    let env = env();
    // NULL dereferences in minix_getattr.
    let (tree, variants, tables) = inject_minix(
        &env,
        "fs-minix-inj",
        &|n| n == "minix_getattr",
        &fgft_inject::Options {
            seed: 1,
            per_entry: 1,
            kinds: vec![fgft_inject::FaultKind::NullDeref],
        },
    );
    let v = &variants[0];
    let (rt, built) = split_minix(&env, &tree, vec![tables], "fs-minix-inj");
    let (mut spec, img) = minix_vm(&env, "fs-minix-inj", (&rt, &built), 16);
    let id = v.id;
    spec.script += &format!(
        "P=/sys/module/fgft_rt/parameters\n\
         S=/sys/kernel/debug/fgft/stats\n\
         st() {{ echo \"FGFT-MARK $1 $(grep -E '^(commits|aborts|retries) ' $S | tr ' ' '=' | tr '\\n' ' ')\"; }}\n\
         mkdir -p /mnt/minix\n\
         mount -t minix /dev/vda /mnt/minix || exit 11\n\
         echo 1 > $P/fgft_inject_once; echo {id} > $P/fgft_inject_id\n\
         fgft-fsw -n 300 -s 5 -m /tmp/minix.model /mnt/minix | sed 's/^FGFT-MARK fsw /FGFT-MARK fsw phase=transient /'\n\
         st transient\n\
         echo 0 > $P/fgft_inject_once; echo {id} > $P/fgft_inject_id\n\
         if stat /mnt/minix >/dev/null 2>&1; then r=0; else r=1; fi; echo \"FGFT-MARK persistent stat_failed=$r\"\n\
         echo 0 > $P/fgft_inject_id\n\
         fgft-fsw -c -m /tmp/minix.model /mnt/minix | sed 's/^FGFT-MARK fsw /FGFT-MARK fsw phase=after /'\n\
         st after\n\
         umount /mnt/minix && echo \"FGFT-MARK fs-umounted fs=minix\"\n"
    );
    spec.timeout = Duration::from_secs(240);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}\n{}", out.tail(60));
    let runs = out.markers_named("fsw");
    assert_eq!(runs.len(), 2, "{out}");
    let (w, c) = (runs[0], runs[1]);
    assert_eq!(
        (w.get("failed"), w.get("bad")),
        (Some("0"), Some("0")),
        "the transient fault is hidden from the workload: {w}"
    );
    let t = out.markers_named("transient");
    let t = t.first().unwrap_or_else(|| panic!("no stats: {out}"));
    let n = |k: &str| t.parse::<u64>(k).unwrap_or(0);
    assert_eq!((n("aborts"), n("retries")), (1, 1), "{t}");
    let p = out.markers_named("persistent");
    assert_eq!(
        p.first().and_then(|m| m.get("stat_failed")),
        Some("1"),
        "{out}"
    );
    assert_eq!(
        (c.get("mode"), c.get("bad")),
        (Some("check"), Some("0")),
        "{c}"
    );
    assert_eq!(out.markers_named("fs-umounted").len(), 1, "{out}");
    let (code, text) = fsck("fsck.minix", &["-f"], &img);
    assert_eq!(code, Some(0), "fsck.minix: {text}");
}

/// A fault campaign on the split minix (issue 17), in one boot: every
/// variant `fgft-cc inject` plants in the isolated operations (`per_entry`
/// of each; FGFT_FS_FAULTS_PER_ENTRY overrides) is fired once (transient)
/// under a short workload of its own, then the first few again on every
/// pass (persistent); the workloads' trees are checked after a remount,
/// and the image with fsck.minix.  Returns the guest's markers.
fn minix_campaign(per_entry: usize) -> (fgft_vm::Outcome, Vec<fgft_inject::Variant>, PathBuf) {
    let env = env();
    let entries: Vec<String> = {
        let side = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/upstream/minix.toml"),
        )
        .unwrap();
        let t: toml::Value = side.parse().unwrap();
        t["isolate"]["entry"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let (tree, variants, tables) = inject_minix(
        &env,
        "fs-minix-camp",
        &|n| entries.iter().any(|e| e == n),
        &fgft_inject::Options {
            seed: 17,
            per_entry,
            kinds: Vec::new(),
        },
    );
    let (rt, built) = split_minix(&env, &tree, vec![tables], "fs-minix-camp");
    let (mut spec, img) = minix_vm(&env, "fs-minix-camp", (&rt, &built), 32);
    let ids: Vec<String> = variants.iter().map(|v| v.id.to_string()).collect();
    let persistent: Vec<String> = ids.iter().take(5).cloned().collect();
    spec.script += &format!(
        "P=/sys/module/fgft_rt/parameters\n\
         S=/sys/kernel/debug/fgft/stats\n\
         v() {{ grep \"^$1 \" $S | cut -d' ' -f2; }}\n\
         mkdir -p /mnt/minix\n\
         mount -t minix /dev/vda /mnt/minix || exit 11\n\
         echo 1 > $P/fgft_inject_once\n\
         for id in {ids}; do\n\
           a0=$(v aborts); r0=$(v recovery_ns_sum)\n\
           mkdir /mnt/minix/t$id\n\
           echo $id > $P/fgft_inject_id\n\
           fgft-fsw -n 60 -s $id -m /tmp/t$id.model /mnt/minix/t$id | sed \"s/^FGFT-MARK fsw /FGFT-MARK fsw id=$id /\"\n\
           f=1; [ \"$(cat $P/fgft_inject_id)\" = 0 ] || f=0\n\
           echo 0 > $P/fgft_inject_id\n\
           echo \"FGFT-MARK fault id=$id fired=$f aborts=$(( $(v aborts) - a0 )) rec_ns=$(( $(v recovery_ns_sum) - r0 ))\"\n\
         done\n\
         echo 0 > $P/fgft_inject_once\n\
         for id in {persistent}; do\n\
           echo $id > $P/fgft_inject_id\n\
           mkdir /mnt/minix/p$id 2>/dev/null\n\
           fgft-fsw -n 30 -s $id /mnt/minix/p$id | sed \"s/^FGFT-MARK fsw /FGFT-MARK pfsw id=$id /\"\n\
           echo 0 > $P/fgft_inject_id\n\
           mkdir /mnt/minix/q$id\n\
           fgft-fsw -n 30 -s $id /mnt/minix/q$id | sed \"s/^FGFT-MARK fsw /FGFT-MARK after id=$id /\"\n\
         done\n\
         umount /mnt/minix || exit 15\n\
         mount -t minix /dev/vda /mnt/minix || exit 16\n\
         for id in {ids}; do\n\
           fgft-fsw -c -m /tmp/t$id.model /mnt/minix/t$id | sed \"s/^FGFT-MARK fsw /FGFT-MARK check id=$id /\"\n\
         done\n\
         umount /mnt/minix && echo \"FGFT-MARK fs-umounted fs=minix\"\n",
        ids = ids.join(" "),
        persistent = persistent.join(" ")
    );
    spec.timeout = Duration::from_secs(600);
    let out = run(&env, &spec).unwrap();
    (out, variants, img)
}

/// The campaign's small sample (2 variants per isolated operation): no
/// crash; every fired transient fault is hidden (its workload completes and
/// verifies with no error); a persistent fault leaves the file system
/// usable (the next workload has no error); after a remount every
/// workload's tree verifies; fsck.minix finds no error.
#[test]
fn split_minix_campaign_sample() {
    let per_entry = std::env::var("FGFT_FS_FAULTS_PER_ENTRY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let (out, variants, img) = minix_campaign(per_entry);
    assert!(out.is_clean(), "{out}\n{}", out.tail(60));
    let faults = out.markers_named("fault");
    assert_eq!(faults.len(), variants.len(), "{out}");
    let fired: Vec<_> = faults
        .iter()
        .filter(|f| f.get("fired") == Some("1"))
        .collect();
    assert!(
        fired.len() * 2 >= variants.len(),
        "most variants fire: {out}"
    );
    let runs = out.markers_named("fsw");
    let mut hidden = 0;
    for f in &fired {
        let id = f.get("id").unwrap();
        let r = runs.iter().find(|r| r.get("id") == Some(id)).unwrap();
        if r.get("failed") == Some("0") && r.get("bad") == Some("0") {
            hidden += 1;
        }
    }
    assert!(
        hidden * 100 >= fired.len() * 95,
        "transient faults hidden: {hidden} of {}\n{out}",
        fired.len()
    );
    // A persistent fault: the application sees the error.
    assert!(
        out.markers_named("pfsw")
            .iter()
            .any(|p| p.parse::<u64>("failed").unwrap_or(0) > 0),
        "{out}"
    );
    for a in out.markers_named("after") {
        assert_eq!(
            (a.get("failed"), a.get("bad")),
            (Some("0"), Some("0")),
            "{a}"
        );
    }
    for c in out.markers_named("check") {
        assert_eq!(c.get("bad"), Some("0"), "{c}");
    }
    assert_eq!(out.markers_named("fs-umounted").len(), 1, "{out}");
    let (code, text) = fsck("fsck.minix", &["-f"], &img);
    assert_eq!(code, Some(0), "fsck.minix: {text}");
}
