//! File systems in the VM (issue 17), stock first: images made on the host
//! with the real tools (util-linux's mkfs.minix, dosfstools' mkfs.vfat),
//! attached as virtio disks, mounted with Debian's own minix and vfat
//! modules, worked by fgft-fsw (which checks every read, listing and, at
//! the end, every file against its model), remounted and verified against
//! the saved model, then checked on the host with fsck.minix and
//! fsck.vfat -n. This is the baseline the fault campaign compares with.

use fgft_campaign::membrane::{self, Campaign};
use fgft_vm::{run, Env, VmSpec};
use std::path::PathBuf;
use std::time::Duration;

fn env() -> Env {
    Env::load().expect("fgft environment (scripts/setup.sh --print-env)")
}

/// The guest part for one file system: mount, work in a directory of its
/// own (mkfs.ext2 makes lost+found at the root), unmount, mount again,
/// verify against the model, unmount.
fn work(dev: &str, fstype: &str, seed: u32, ops: u32) -> String {
    format!(
        "mkdir -p /mnt/{fstype}\n\
         mount -t {fstype} {dev} /mnt/{fstype} || {{ echo \"FGFT-MARK fs-mount-failed fs={fstype}\"; exit 11; }}\n\
         mkdir -p /mnt/{fstype}/w\n\
         fgft-fsw -n {ops} -s {seed} -m /tmp/{fstype}.model /mnt/{fstype}/w | sed 's/^FGFT-MARK fsw /FGFT-MARK fsw fs={fstype} /'\n\
         umount /mnt/{fstype}\n\
         mount -t {fstype} {dev} /mnt/{fstype}\n\
         fgft-fsw -c -m /tmp/{fstype}.model /mnt/{fstype}/w | sed 's/^FGFT-MARK fsw /FGFT-MARK fsw fs={fstype} /'\n\
         umount /mnt/{fstype} && echo \"FGFT-MARK fs-umounted fs={fstype}\"\n"
    )
}

/// `fs` split from linux-source-6.12 with its sidecar, loaded in place of
/// any stock module, under [`work`] (seed `seed`, 1,500 operations) on a
/// fresh image of `mb` MiB: the workload completes and verifies, every
/// isolated operation commits, the remount finds every completed write,
/// and the file system's fsck finds no error.
fn split_run_commits_and_verifies(fs: &membrane::Fs, seed: u32, mb: u64) {
    let env = env();
    let m = fs.name;
    let (rt, built) =
        membrane::split_fs(&env, fs, &env.src612, Vec::new(), &format!("fs-{m}")).unwrap();
    let (mut spec, img) =
        membrane::fs_vm(&env, fs, &format!("fs-{m}-fgft"), (&rt, &built), mb).unwrap();
    spec.script += &format!(
        "{}\
         S=/sys/kernel/debug/fgft/stats\n\
         echo \"FGFT-MARK rtstats $(grep -E '^(txns|commits|aborts) ' $S | tr ' ' '=' | tr '\\n' ' ')\"\n",
        work("/dev/vda", m, seed, 1500)
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
    let (code, text) = membrane::fsck(fs.fsck.0, fs.fsck.1, &img).unwrap();
    assert_eq!(code, Some(0), "{}: {text}", fs.fsck.0);
}

#[test]
fn stock_minix_and_vfat_keep_every_completed_write() {
    let env = env();
    let dir: PathBuf = env.target_dir.join("fs-images");
    std::fs::create_dir_all(&dir).unwrap();
    let minix = dir.join("stock-minix.img");
    let vfat = dir.join("stock-vfat.img");
    membrane::image(&minix, 16, "mkfs.minix", &["-3"]).unwrap();
    membrane::image(&vfat, 32, "mkfs.vfat", &[]).unwrap();

    let mut spec = VmSpec::new("fs-stock");
    spec.add_tool(&env, "fgft-fsw").unwrap();
    // vfat's default codepage and iocharset (Debian: cp437, ascii) are
    // modules of their own; mount fails with EINVAL without them.
    spec.stock_modules = ["virtio_blk", "minix", "vfat", "nls_cp437", "nls_ascii"]
        .map(String::from)
        .to_vec();
    membrane::attach(&mut spec, &[&minix, &vfat]);
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
    let (code, text) = membrane::fsck("fsck.minix", &["-f"], &minix).unwrap();
    assert_eq!(code, Some(0), "fsck.minix: {text}");
    let (code, text) = membrane::fsck("fsck.vfat", &["-n"], &vfat).unwrap();
    assert_eq!(code, Some(0), "fsck.vfat: {text}");
}

/// The upstream minix, split by fgft-cc with its sidecar
/// (corpus/upstream/minix.toml: its directory operations, attribute and
/// statfs calls isolated), loaded in place of Debian's module: the same
/// workload completes and verifies, every isolated operation commits, the
/// remount finds every completed write, and fsck.minix finds no error.
#[test]
fn split_minix_keeps_every_completed_write_under_fgft() {
    split_run_commits_and_verifies(&membrane::MINIX, 3, 16);
}

/// VFAT (fs/fat: fat.ko and vfat.ko split together as one module, with
/// corpus/upstream/vfat.toml: its directory operations but mkdir,
/// attributes, readdir and statfs isolated; fat_iget's walk of the inode
/// hash chains with unchecked reads), loaded in place of Debian's
/// fat and vfat modules: the workload completes and verifies, every
/// isolated operation commits, the remount finds every completed write,
/// and fsck.vfat -n finds no error.
#[test]
fn split_vfat_keeps_every_completed_write_under_fgft() {
    split_run_commits_and_verifies(&membrane::VFAT, 4, 32);
}

/// ext2 (fs/ext2 without extended attributes, corpus/upstream/ext2.toml:
/// the same operations isolated as for minix), the only ext2 in the guest
/// (Debian builds none): the workload completes and verifies in a
/// directory of its own (mkfs.ext2 makes lost+found at the root), every
/// isolated operation commits, the remount finds every completed write,
/// and fsck.ext2 -fn finds no error.  Its directory operations reach
/// kernel calls no other corpus driver makes (a new inode's hash entry,
/// the free-inode and free-block counters, quota), and its getattr
/// reaches the inode only through its container (`EXT2_I(inode)`).
#[test]
fn split_ext2_keeps_every_completed_write_under_fgft() {
    split_run_commits_and_verifies(&membrane::EXT2, 4, 32);
}

/// `fs` with a NULL dereference planted by fgft-cc inject into `entry`
/// (seed 1, the first variant), split, on a fresh image of `mb` MiB: the
/// VM's spec, the image and the variant's id (for fgft_inject_id).
fn null_deref_vm(env: &Env, fs: &membrane::Fs, entry: &str, mb: u64) -> (VmSpec, PathBuf, u32) {
    let name = format!("fs-{}-inj", fs.name);
    let (tree, variants, tables) = membrane::inject_fs(
        env,
        fs,
        &name,
        &|n| n == entry,
        &fgft_inject::Options {
            seed: 1,
            per_entry: 1,
            kinds: vec![fgft_inject::FaultKind::NullDeref],
        },
    )
    .unwrap();
    let v = variants
        .first()
        .unwrap_or_else(|| panic!("no NULL dereference to plant in {entry}"));
    let (rt, built) = membrane::split_fs(env, fs, &tree, vec![tables], &name).unwrap();
    let (spec, img) = membrane::fs_vm(env, fs, &name, (&rt, &built), mb).unwrap();
    (spec, img, v.id)
}

/// An aborted create leaves no trace in the file system's own counters: a
/// NULL dereference planted by fgft-cc inject into ext2_add_link, fired
/// every time, aborts ext2_create after ext2_new_inode took an inode
/// (`le16_add_cpu(&gdp->bg_free_inodes_count, -1)`, a read-modify-write
/// whose store gcc's sanitizer does not check on its own: sfi-as.sh makes
/// its load check a store check, which logs it).  The create and its retry
/// abort, the application gets the error, a create once disarmed succeeds,
/// and fsck.ext2 finds the group descriptors' free counts right.
#[test]
fn split_ext2_undoes_an_aborted_create_in_its_group_counters() {
    let env = env();
    let (mut spec, img, id) = null_deref_vm(&env, &membrane::EXT2, "ext2_add_link", 16);
    spec.script += &format!(
        "P=/sys/module/fgft_rt/parameters\n\
         S=/sys/kernel/debug/fgft/stats\n\
         mkdir -p /mnt/ext2\n\
         mount -t ext2 /dev/vda /mnt/ext2 || exit 11\n\
         mkdir /mnt/ext2/w && touch /mnt/ext2/w/a\n\
         a0=$(sed -n 's/^aborts //p' $S)\n\
         echo 1 > $P/fgft_inject_txn; echo 0 > $P/fgft_inject_once; echo {id} > $P/fgft_inject_id\n\
         if touch /mnt/ext2/w/b 2>/dev/null; then r=0; else r=1; fi\n\
         echo 0 > $P/fgft_inject_id\n\
         a1=$(sed -n 's/^aborts //p' $S)\n\
         if touch /mnt/ext2/w/c; then c=1; else c=0; fi\n\
         echo \"FGFT-MARK create failed=$r aborts=$((a1 - a0)) next=$c\"\n\
         umount /mnt/ext2 && echo \"FGFT-MARK fs-umounted fs=ext2\"\n"
    );
    spec.timeout = Duration::from_secs(240);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}\n{}", out.tail(60));
    let m = out.markers_named("create");
    let m = m.first().unwrap_or_else(|| panic!("no result: {out}"));
    assert_eq!(
        (m.get("failed"), m.get("aborts"), m.get("next")),
        (Some("1"), Some("2"), Some("1")),
        "the create and its retry abort, the error reaches touch, the next create works: {m}"
    );
    assert_eq!(out.markers_named("fs-umounted").len(), 1, "{out}");
    let (code, text) = membrane::fsck(membrane::EXT2.fsck.0, membrane::EXT2.fsck.1, &img).unwrap();
    assert_eq!(code, Some(0), "fsck.ext2: {text}");
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
    let (mut spec, img, id) = null_deref_vm(&env, &membrane::MINIX, "minix_getattr", 16);
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
    let (code, text) = membrane::fsck("fsck.minix", &["-f"], &img).unwrap();
    assert_eq!(code, Some(0), "fsck.minix: {text}");
}

/// Asserts what issue 17 asks of a campaign: no crash; at least 95% of
/// the fired transient faults hidden (their workloads complete and verify
/// with no error); a persistent fault reaches the application while the
/// file system stays usable (the next workload has no error); after a
/// remount every workload's tree verifies; fsck.minix finds no error.
fn assert_campaign(c: &Campaign) {
    let out = &c.out;
    assert!(out.is_clean(), "{out}\n{}", out.tail(60));
    let faults = out.markers_named("fault");
    assert_eq!(faults.len(), c.variants.len(), "{out}");
    let fired = c.fired();
    assert!(
        fired.len() * 2 >= c.variants.len(),
        "most variants fire: {out}"
    );
    let hidden = fired.iter().filter(|f| c.hidden(f)).count();
    assert!(
        hidden * 100 >= fired.len() * 95,
        "transient faults hidden: {hidden} of {}\n{out}",
        fired.len()
    );
    assert!(
        out.markers_named("pfsw")
            .iter()
            .any(|p| p.parse::<u64>("failed").unwrap_or(0) > 0),
        "a persistent fault reaches the application: {out}"
    );
    // Every persistent variant that aborted its transactions reached the
    // application as an error (an abort is retried once; the second
    // returns the error); the pass counts its fires.
    for p in out.markers_named("pexit") {
        let id = p.get("id").unwrap_or("?");
        assert!(p.get("fires").is_some(), "{p}");
        if p.parse::<u64>("aborts").unwrap_or(0) > 0 {
            assert!(
                c.persistent_seen(id),
                "persistent variant {id} aborted with no error seen: {p}\n{out}"
            );
        }
    }
    for a in out.markers_named("after") {
        assert_eq!(
            (a.get("failed"), a.get("bad")),
            (Some("0"), Some("0")),
            "{a}"
        );
    }
    let checks = out.markers_named("check");
    assert_eq!(checks.len(), c.variants.len(), "{out}");
    for k in checks {
        assert_eq!(k.get("bad"), Some("0"), "{k}");
    }
    assert_eq!(out.markers_named("fs-umounted").len(), 1, "{out}");
    let (code, text) = membrane::fsck("fsck.minix", &["-f"], &c.img).unwrap();
    assert_eq!(code, Some(0), "fsck.minix: {text}");
}

/// The campaign's small sample (one variant per function the isolated
/// operations reach, about 40; `FGFT_FS_FAULTS_PER_ENTRY` for more):
/// see [`assert_campaign`].  The full campaign with the native comparison
/// and the overhead is a benchmark (`scripts/bench-membrane.sh`).
#[test]
fn split_minix_campaign_sample() {
    let per_entry = std::env::var("FGFT_FS_FAULTS_PER_ENTRY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let c = membrane::fs_campaign(&env(), &membrane::MINIX, "fs-minix-camp", per_entry, 5).unwrap();
    assert_campaign(&c);
}
