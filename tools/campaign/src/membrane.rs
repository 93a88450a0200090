//! Restartable file systems (issue 17, after Membrane): fs/minix of
//! linux-source-6.12 split by fgft with its sidecar
//! (`corpus/upstream/minix.toml`), and the fault campaign that checks it
//! hides its own faults from applications.
//!
//! - [`minix_campaign`]: faults from fgft-inject planted in every function
//!   the isolated operations reach ([`minix_targets`]), each fired once
//!   (transient) under a self-checking workload (`fgft-fsw`), the first few
//!   again on every pass (persistent); then a remount, every workload's tree
//!   checked against its model, and `fsck.minix -f` on the host. One boot.
//! - [`native_outcome`]: the same variant in the same injected tree built
//!   without fgft, one boot each: crash, hang, corruption, error or nothing.
//! - [`overhead`]: the workload on Debian's own minix module and on the
//!   split one, alternating in one boot.
//! - [`report`]: `results/membrane.md` from the three
//!   (`scripts/bench-membrane.sh`).
//!
//! Invariant: the variant set depends only on the tree, the sidecar, the
//! seed and `per_entry`; a variant's workload is seeded by its id, so the
//! native and the fgft run of one variant do the same operations.

use crate::{io, CampaignError};
use fgft_vm::{Env, InsnProfile, InsnSpan, Marker, Outcome, VmSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The fault-injection switch as the compensation table sees it (a pure
/// call of fgft_rt.ko).
pub const INJECT_TABLE: &str = "[api.fgft_inject_hit]\neffect = \"pure\"\nproto = \"bool fgft_inject_hit(int id)\"\nheader = \"fgft/runtime.h\"\nargs.id = \"val\"\n";

/// The seed of the campaign's variant choice.
pub const SEED: u64 = 17;

/// A file system fgft splits, and how the campaign works it.
#[derive(Debug, Clone, Copy)]
pub struct Fs {
    /// The file-system type (mount -t) and the mount point's name.
    pub name: &'static str,
    /// Its directory in linux-source-6.12.
    pub dir: &'static str,
    /// Its sidecar in the repository.
    pub sidecar: &'static str,
    /// The split module's name (the sidecar's `module`).
    pub module: &'static str,
    /// Makes an image: tool and arguments.
    pub mkfs: (&'static str, &'static [&'static str]),
    /// Checks an image and repairs nothing: tool and arguments.
    pub fsck: (&'static str, &'static [&'static str]),
    /// Debian modules mounting it needs besides the file system's own.
    pub deps: &'static [&'static str],
    /// Debian's own modules of the file system, in load order.
    pub stock: &'static [&'static str],
    /// The Kbuild of a native build of an injected tree (with
    /// fgft_inject.o, and fgft_inject_export.o where another module of it
    /// calls the switch).
    pub native_kbuild: &'static str,
    /// The native build's modules, in load order.
    pub native: &'static [&'static str],
    /// The native module whose parameters hold the switch.
    pub native_switch: &'static str,
}

/// fs/minix: minix.ko.
pub const MINIX: Fs = Fs {
    name: "minix",
    dir: "fs/minix",
    sidecar: "corpus/upstream/minix.toml",
    module: "minix",
    mkfs: ("mkfs.minix", &["-3"]),
    fsck: ("fsck.minix", &["-f"]),
    deps: &[],
    stock: &["minix"],
    native_kbuild: "obj-m := minix.o\nminix-y := bitmap.o itree_v1.o itree_v2.o namei.o inode.o file.o dir.o fgft_inject.o\n",
    native: &["minix"],
    native_switch: "minix",
};

/// fs/fat: fat.ko and vfat.ko, split as one module (corpus/upstream/vfat.toml).
pub const VFAT: Fs = Fs {
    name: "vfat",
    dir: "fs/fat",
    sidecar: "corpus/upstream/vfat.toml",
    module: "vfat",
    mkfs: ("mkfs.vfat", &[]),
    fsck: ("fsck.vfat", &["-n"]),
    // vfat's default codepage and iocharset (Debian: cp437, ascii).
    deps: &["nls_cp437", "nls_ascii"],
    stock: &["fat", "vfat"],
    native_kbuild: "obj-m := fat.o vfat.o\nfat-y := cache.o dir.o fatent.o file.o inode.o misc.o nfs.o fgft_inject.o fgft_inject_export.o\nvfat-y := namei_vfat.o\n",
    native: &["fat", "vfat"],
    native_switch: "fat",
};

/// fs/ext2: ext2.ko, without extended attributes (corpus/upstream/ext2.toml).
/// Debian builds none (its ext4 mounts ext2): the native build of the
/// same sources is the only other ext2.
pub const EXT2: Fs = Fs {
    name: "ext2",
    dir: "fs/ext2",
    sidecar: "corpus/upstream/ext2.toml",
    module: "ext2",
    mkfs: ("mkfs.ext2", &["-q", "-F"]),
    fsck: ("fsck.ext2", &["-f", "-n"]),
    deps: &[],
    stock: &[],
    native_kbuild: "obj-m := ext2.o\next2-y := balloc.o dir.o file.o ialloc.o inode.o ioctl.o namei.o super.o symlink.o trace.o fgft_inject.o\n",
    native: &["ext2"],
    native_switch: "ext2",
};

/// The shell lines that load `fs`'s Debian dependencies.
fn load_deps(fs: &Fs) -> String {
    fs.deps
        .iter()
        .map(|m| format!("modprobe {m} || exit 10\n"))
        .collect()
}

fn msg(s: String) -> CampaignError {
    CampaignError::Msg(s)
}

/// A fresh `mb`-MiB image at `path`, formatted by `mkfs` with `args`.
pub fn image(path: &Path, mb: u64, mkfs: &str, args: &[&str]) -> Result<(), CampaignError> {
    let _ = std::fs::remove_file(path);
    let f = std::fs::File::create(path).map_err(io(path))?;
    f.set_len(mb << 20).map_err(io(path))?;
    drop(f);
    let out = Command::new(mkfs)
        .args(args)
        .arg(path)
        .output()
        .map_err(io(Path::new(mkfs)))?;
    if !out.status.success() {
        return Err(msg(format!(
            "{mkfs} {args:?} {}: {}{}",
            path.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

/// Attaches the images as virtio disks, in order (/dev/vda, /dev/vdb, ...).
pub fn attach(spec: &mut VmSpec, imgs: &[&Path]) {
    for (i, img) in imgs.iter().enumerate() {
        spec.qemu_args.extend([
            "-drive".to_string(),
            format!("file={},if=none,format=raw,id=d{i}", img.display()),
            "-device".to_string(),
            format!("virtio-blk-pci,drive=d{i}"),
        ]);
    }
}

/// Runs `fsck` with `args` on `path`: its exit code and output.
pub fn fsck(
    fsck: &str,
    args: &[&str],
    path: &Path,
) -> Result<(Option<i32>, String), CampaignError> {
    let out = Command::new(fsck)
        .args(args)
        .arg(path)
        .output()
        .map_err(io(Path::new(fsck)))?;
    Ok((
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

/// The runtime, and `fs` of `tree` split by fgft with its sidecar (and
/// the extra table directories `tables`) and built: (runtime build
/// directory, split build directory).  Build directories are named after
/// `name`, so that runs in parallel do not share one.
pub fn split_fs(
    env: &Env,
    fs: &Fs,
    tree: &Path,
    tables: Vec<PathBuf>,
    name: &str,
) -> Result<(PathBuf, PathBuf), CampaignError> {
    split_fs_with(env, fs, tree, tables, name, |_| {})
}

/// [`split_fs`] with split options of the caller's (`stage_times`).
pub fn split_fs_with(
    env: &Env,
    fs: &Fs,
    tree: &Path,
    tables: Vec<PathBuf>,
    name: &str,
    more: impl FnOnce(&mut fgft_split::Options),
) -> Result<(PathBuf, PathBuf), CampaignError> {
    let rt = fgft_vm::kbuild(
        env,
        &format!("{name}-rt"),
        &env.repo_root.join("runtime-kmod"),
        &env.kdir,
        &[],
    )?;
    let out = env.target_dir.join(format!("{name}-split"));
    let mut opts = fgft_split::Options {
        annotations: vec![env.repo_root.join(fs.sidecar)],
        tree: Some(tree.to_path_buf()),
        kdir: Some(env.kdir.clone()),
        tables,
        runtime_symvers: Some(rt.join("Module.symvers")),
        ..Default::default()
    };
    more(&mut opts);
    crate::split::split(&opts, &out, fs.name)?;
    let built = fgft_vm::kbuild(env, &format!("{name}-fgft"), &out, &env.kdir, &[])?;
    Ok((rt, built))
}

/// `fs` of linux-source-6.12 copied to `target/NAME`, with the faults
/// fgft-inject plants in the functions `is_entry` accepts, chosen with
/// `opts`; and a table directory that declares the injection switch.
/// (tree, variants, tables).
pub fn inject_fs(
    env: &Env,
    fs: &Fs,
    name: &str,
    is_entry: &dyn Fn(&str) -> bool,
    opts: &fgft_inject::Options,
) -> Result<(PathBuf, Vec<fgft_inject::Variant>, PathBuf), CampaignError> {
    let tree = env.target_dir.join(name);
    let dir = tree.join(fs.dir);
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let from = env.src612.join(fs.dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&from)
        .map_err(io(&from))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let mut sources = Vec::new();
    for p in files {
        let file = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        std::fs::copy(&p, dir.join(&file)).map_err(io(&p))?;
        if file.ends_with(".c") {
            let text = std::fs::read_to_string(&p).map_err(io(&p))?;
            sources.push(fgft_inject::Source {
                rel: PathBuf::from(fs.dir).join(&file),
                file: fgft_parse::parse_text(&p, text)?,
            });
        }
    }
    let sites = fgft_inject::find_sites(&sources, is_entry);
    let variants = fgft_inject::select(&sources, &sites, opts);
    if variants.is_empty() {
        return Err(msg(format!("{name}: no injection site")));
    }
    let texts = fgft_inject::apply(&sources, &variants)?;
    for (s, t) in sources.iter().zip(texts) {
        let p = tree.join(&s.rel);
        std::fs::write(&p, t).map_err(io(&p))?;
    }
    let tables = env.target_dir.join(format!("{name}-tables"));
    std::fs::create_dir_all(&tables).map_err(io(&tables))?;
    let t = tables.join("compensations.toml");
    std::fs::write(&t, INJECT_TABLE).map_err(io(&t))?;
    Ok((tree, variants, tables))
}

/// A VM named `name` with fgft-fsw, the Debian modules `fs` needs and a
/// fresh image of `mb` MiB attached as /dev/vda: (spec, image).
fn disk_vm(env: &Env, fs: &Fs, name: &str, mb: u64) -> Result<(VmSpec, PathBuf), CampaignError> {
    let imgs = env.target_dir.join("fs-images");
    std::fs::create_dir_all(&imgs).map_err(io(&imgs))?;
    let img = imgs.join(format!("{name}.img"));
    image(&img, mb, fs.mkfs.0, fs.mkfs.1)?;
    let mut spec = VmSpec::new(name);
    spec.add_tool(env, "fgft-fsw")?;
    spec.stock_modules = ["virtio_blk"]
        .iter()
        .chain(fs.deps)
        .map(|m| m.to_string())
        .collect();
    attach(&mut spec, &[&img]);
    Ok((spec, img))
}

/// A VM named `name` with fgft-fsw, the runtime and the split `fs` (`rt`,
/// `built` from [`split_fs`]) and a fresh image of `mb` MiB as /dev/vda;
/// the script starts by loading the modules.  (spec, image).
pub fn fs_vm(
    env: &Env,
    fs: &Fs,
    name: &str,
    (rt, built): (&Path, &Path),
    mb: u64,
) -> Result<(VmSpec, PathBuf), CampaignError> {
    let (mut spec, img) = disk_vm(env, fs, name, mb)?;
    let m = fs.module;
    spec.modules = vec![
        rt.join("fgft_rt.ko"),
        built.join(format!("{m}_sfi.ko")),
        built.join(format!("{m}_fgft.ko")),
    ];
    spec.script = format!(
        "modprobe virtio_blk || exit 10\n\
         {}insmod /lib/fgft/fgft_rt.ko || exit 12\n\
         insmod /lib/fgft/{m}_sfi.ko || exit 13\n\
         insmod /lib/fgft/{m}_fgft.ko || exit 14\n",
        load_deps(fs)
    );
    Ok((spec, img))
}

/// Every function named in a plan's `closure (N):` lines (continued on the
/// lines indented deeper).
pub fn closures(plan: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut on = false;
    for l in plan.lines() {
        if let Some(rest) = l.strip_prefix("  closure (") {
            on = true;
            let fns = rest.split_once("):").map_or("", |(_, f)| f);
            out.extend(fns.split_whitespace().map(String::from));
        } else if on && l.starts_with("      ") {
            out.extend(l.split_whitespace().map(String::from));
        } else {
            on = false;
        }
    }
    out
}

/// The functions the isolated operations' calls reach: the closures in the
/// plan of `fs` split with its sidecar.  A campaign plants faults in
/// all of them; the runtime fires a variant only inside a transaction
/// (`fgft_inject_txn`), so where code fgft does not isolate calls one
/// (mkdir calling minix_add_link), that call runs the fault-free path.
pub fn fs_targets(env: &Env, fs: &Fs) -> Result<BTreeSet<String>, CampaignError> {
    let out = env.target_dir.join(format!("fs-{}-targets", fs.name));
    let opts = fgft_split::Options {
        annotations: vec![env.repo_root.join(fs.sidecar)],
        tree: Some(env.src612.clone()),
        kdir: Some(env.kdir.clone()),
        ..Default::default()
    };
    crate::split::split(&opts, &out, fs.name)?;
    let p = out.join("plan.txt");
    let fns = closures(&std::fs::read_to_string(&p).map_err(io(&p))?);
    if fns.is_empty() {
        return Err(msg(format!("{}: no closure", p.display())));
    }
    Ok(fns)
}

/// A campaign's run: the guest's markers, the variants, the injected tree
/// and the image.
pub struct Campaign {
    pub out: Outcome,
    pub variants: Vec<fgft_inject::Variant>,
    pub tree: PathBuf,
    pub img: PathBuf,
}

impl Campaign {
    /// The `fault` markers of the variants that fired.
    pub fn fired(&self) -> Vec<&Marker> {
        self.out
            .markers_named("fault")
            .into_iter()
            .filter(|f| f.get("fired") == Some("1"))
            .collect()
    }

    /// Whether the workload of fault `f` completed and verified with no
    /// error the application saw.
    pub fn hidden(&self, f: &Marker) -> bool {
        let id = f.get("id");
        self.out
            .markers_named("fsw")
            .iter()
            .any(|r| r.get("id") == id && r.get("failed") == Some("0") && r.get("bad") == Some("0"))
    }

    /// Whether persistent fault `id` reached the application: its workload
    /// failed an operation or could not run at all.
    pub fn persistent_seen(&self, id: &str) -> bool {
        let failed = self
            .out
            .markers_named("pfsw")
            .iter()
            .any(|p| p.get("id") == Some(id) && p.parse::<u64>("failed").unwrap_or(0) > 0);
        let exited = self
            .out
            .markers_named("pexit")
            .iter()
            .any(|p| p.get("id") == Some(id) && p.get("rc") != Some("0"));
        failed || exited
    }

    /// Recovery time of each fired fault that aborted, in ns: the abort
    /// (fault to restored state) plus the retry (its start to its commit).
    pub fn recovery_ns(&self) -> Vec<u64> {
        self.fired()
            .iter()
            .filter(|f| f.parse::<u64>("aborts").unwrap_or(0) > 0)
            .map(|f| {
                f.parse::<u64>("rec_ns").unwrap_or(0) + f.parse::<u64>("retry_ns").unwrap_or(0)
            })
            .collect()
    }
}

/// The guest part of a campaign: every variant of `ids` fired once under a
/// 60-operation workload of its own, the first `persistent` that fired
/// again on every pass of the same workload (`pexit ... fires=N aborts=M`;
/// each followed by a clean workload), a remount and
/// a check of every workload's tree.  The trees are made in a directory of
/// their own: a FAT16 root directory holds 512 entries, fewer than a
/// campaign's trees take with their long names.
fn campaign_script(fs: &Fs, ids: &[String], persistent: usize) -> String {
    let m = fs.name;
    format!(
        "P=/sys/module/fgft_rt/parameters\n\
         S=/sys/kernel/debug/fgft/stats\n\
         v() {{ grep \"^$1 \" $S | cut -d' ' -f2; }}\n\
         mkdir -p /mnt/{m}\n\
         mount -t {m} /dev/vda /mnt/{m} || exit 11\n\
         mkdir /mnt/{m}/w || exit 12\n\
         echo 1 > $P/fgft_inject_once; echo 1 > $P/fgft_inject_txn\n\
         fired=\n\
         for id in {ids}; do\n\
           a0=$(v aborts); r0=$(v recovery_ns_sum); t0=$(v retried); q0=$(v retry_ns_sum)\n\
           mkdir /mnt/{m}/w/t$id\n\
           echo $id > $P/fgft_inject_id\n\
           fgft-fsw -n 60 -s $id -m /tmp/t$id.model /mnt/{m}/w/t$id | sed \"s/^FGFT-MARK fsw /FGFT-MARK fsw id=$id /\"\n\
           f=1; [ \"$(cat $P/fgft_inject_id)\" = 0 ] || f=0\n\
           echo 0 > $P/fgft_inject_id\n\
           [ $f = 1 ] && fired=\"$fired $id\"\n\
           echo \"FGFT-MARK fault id=$id fired=$f aborts=$(( $(v aborts) - a0 )) rec_ns=$(( $(v recovery_ns_sum) - r0 )) retried=$(( $(v retried) - t0 )) retry_ns=$(( $(v retry_ns_sum) - q0 ))\"\n\
         done\n\
         echo 0 > $P/fgft_inject_once\n\
         for id in $(echo $fired | tr ' ' '\\n' | head -n {persistent}); do\n\
           a0=$(v aborts); echo 0 > $P/fgft_inject_fired\n\
           echo $id > $P/fgft_inject_id\n\
           mkdir /mnt/{m}/w/p$id 2>/dev/null\n\
           fgft-fsw -n 60 -s $id /mnt/{m}/w/p$id > /tmp/p.out 2>&1; rc=$?\n\
           sed \"s/^FGFT-MARK fsw /FGFT-MARK pfsw id=$id /\" /tmp/p.out\n\
           echo \"FGFT-MARK pexit id=$id rc=$rc fires=$(cat $P/fgft_inject_fired) aborts=$(( $(v aborts) - a0 ))\"\n\
           echo 0 > $P/fgft_inject_id\n\
           mkdir /mnt/{m}/w/q$id\n\
           fgft-fsw -n 30 -s $id /mnt/{m}/w/q$id | sed \"s/^FGFT-MARK fsw /FGFT-MARK after id=$id /\"\n\
         done\n\
         umount /mnt/{m} || exit 15\n\
         mount -t {m} /dev/vda /mnt/{m} || exit 16\n\
         for id in {ids}; do\n\
           fgft-fsw -c -m /tmp/t$id.model /mnt/{m}/w/t$id | sed \"s/^FGFT-MARK fsw /FGFT-MARK check id=$id /\"\n\
         done\n\
         umount /mnt/{m} && echo \"FGFT-MARK fs-umounted fs={m}\"\n",
        ids = ids.join(" "),
    )
}

/// A fault campaign on the split `fs`, in one boot named `name`: faults
/// in every function the isolated operations reach ([`fs_targets`]),
/// `per_entry` variants of each at most; see [`campaign_script`].
pub fn fs_campaign(
    env: &Env,
    fs: &Fs,
    name: &str,
    per_entry: usize,
    persistent: usize,
) -> Result<Campaign, CampaignError> {
    let targets = fs_targets(env, fs)?;
    let (tree, variants, tables) = inject_fs(
        env,
        fs,
        name,
        &|n| targets.contains(n),
        &fgft_inject::Options {
            seed: SEED,
            per_entry,
            kinds: Vec::new(),
        },
    )?;
    let (rt, built) = split_fs(env, fs, &tree, vec![tables], name)?;
    let (mut spec, img) = fs_vm(env, fs, name, (&rt, &built), 64)?;
    let ids: Vec<String> = variants.iter().map(|v| v.id.to_string()).collect();
    spec.script += &campaign_script(fs, &ids, persistent);
    spec.timeout = Duration::from_secs(180 + 10 * variants.len() as u64);
    let out = fgft_vm::run(env, &spec)?;
    Ok(Campaign {
        out,
        variants,
        tree,
        img,
    })
}

/// The injected `fs` of `tree` built without fgft: its own Kbuild and the
/// injection switch fgft-inject writes for a native build (exported to the
/// file system's other modules).  The modules' directory.
pub fn native_fs(env: &Env, fs: &Fs, tree: &Path, name: &str) -> Result<PathBuf, CampaignError> {
    let src = env.target_dir.join(format!("{name}-native-src"));
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).map_err(io(&src))?;
    let from = tree.join(fs.dir);
    for e in std::fs::read_dir(&from).map_err(io(&from))? {
        let p = e.map_err(io(&from))?.path();
        if p.extension().is_some_and(|x| x == "c" || x == "h") {
            if let Some(f) = p.file_name() {
                std::fs::copy(&p, src.join(f)).map_err(io(&p))?;
            }
        }
    }
    let sw = src.join("fgft_inject.c");
    std::fs::write(&sw, fgft_inject::native_support_c()).map_err(io(&sw))?;
    let ex = src.join("fgft_inject_export.c");
    let text = "// SPDX-License-Identifier: GPL-2.0\n\
                /* The injection switch, for the file system's other modules. */\n\
                #include <linux/export.h>\n#include <linux/types.h>\n\n\
                bool fgft_inject_hit(int id);\nEXPORT_SYMBOL_GPL(fgft_inject_hit);\n";
    std::fs::write(&ex, text).map_err(io(&ex))?;
    let kb = src.join("Kbuild");
    std::fs::write(&kb, fs.native_kbuild).map_err(io(&kb))?;
    Ok(fgft_vm::kbuild(
        env,
        &format!("{name}-native"),
        &src,
        &env.kdir,
        &[],
    )?)
}

/// What a fault does to the native file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Native {
    /// An oops or a panic.
    Crash,
    /// The VM stopped answering (a lock held by a killed task).
    Hang,
    /// A completed write lost or wrong, or fsck found errors.
    Corrupt,
    /// The application got errors, nothing was lost.
    Error,
    /// No visible effect.
    Nothing,
    /// The workload did not reach it.
    NotFired,
}

impl Native {
    pub fn name(self) -> &'static str {
        match self {
            Native::Crash => "crash",
            Native::Hang => "hang",
            Native::Corrupt => "corrupt",
            Native::Error => "error",
            Native::Nothing => "nothing",
            Native::NotFired => "not fired",
        }
    }
}

/// Fires variant `id` once in the native `fs` of `native` (from
/// [`native_fs`]) under the workload the campaign gives it, on a fresh
/// image; then a remount, the check of the tree, and the image's fsck.
pub fn native_outcome(
    env: &Env,
    fs: &Fs,
    native: &Path,
    id: u32,
    name: &str,
) -> Result<Native, CampaignError> {
    let (mut spec, img) = disk_vm(env, fs, name, 32)?;
    spec.modules = fs
        .native
        .iter()
        .map(|m| native.join(format!("{m}.ko")))
        .collect();
    let insmod: String = fs
        .native
        .iter()
        .map(|m| format!("insmod /lib/fgft/{m}.ko || exit 12\n"))
        .collect();
    let (m, sw) = (fs.name, fs.native_switch);
    spec.script = format!(
        "modprobe virtio_blk || exit 10\n\
         {}{insmod}\
         P=/sys/module/{sw}/parameters\n\
         mkdir -p /mnt/{m}\n\
         mount -t {m} /dev/vda /mnt/{m} || exit 11\n\
         echo 1 > $P/fgft_inject_once\n\
         mkdir /mnt/{m}/t{id}\n\
         echo {id} > $P/fgft_inject_id\n\
         fgft-fsw -n 60 -s {id} -m /tmp/t.model /mnt/{m}/t{id} | sed 's/^FGFT-MARK fsw /FGFT-MARK fsw id={id} /'\n\
         f=1; [ \"$(cat $P/fgft_inject_id)\" = 0 ] || f=0\n\
         echo 0 > $P/fgft_inject_id\n\
         echo \"FGFT-MARK fault id={id} fired=$f\"\n\
         umount /mnt/{m} || exit 15\n\
         mount -t {m} /dev/vda /mnt/{m} || exit 16\n\
         fgft-fsw -c -m /tmp/t.model /mnt/{m}/t{id} | sed 's/^FGFT-MARK fsw /FGFT-MARK check /'\n\
         umount /mnt/{m} && echo \"FGFT-MARK fs-umounted fs={m}\"\n",
        load_deps(fs)
    );
    spec.timeout = Duration::from_secs(90);
    let out = fgft_vm::run(env, &spec)?;
    if out.oopses > 0 || out.panicked {
        return Ok(Native::Crash);
    }
    if out.timed_out {
        return Ok(Native::Hang);
    }
    let fired = out
        .markers_named("fault")
        .first()
        .and_then(|f| f.get("fired"))
        == Some("1");
    if !fired {
        return Ok(Native::NotFired);
    }
    let bad = |name: &str| {
        out.markers_named(name)
            .iter()
            .any(|m| m.parse::<u64>("bad").unwrap_or(0) > 0)
    };
    let (code, _) = fsck(fs.fsck.0, fs.fsck.1, &img)?;
    if bad("fsw") || bad("check") || code != Some(0) || out.exit_status != Some(0) {
        return Ok(Native::Corrupt);
    }
    if out
        .markers_named("fsw")
        .iter()
        .any(|m| m.parse::<u64>("failed").unwrap_or(0) > 0)
    {
        return Ok(Native::Error);
    }
    Ok(Native::Nothing)
}

/// Boots `spec`; an error, with the console's tail, unless the boot ended
/// cleanly (`what` names the run).
fn run_clean(env: &Env, spec: &VmSpec, what: &str) -> Result<fgft_vm::Outcome, CampaignError> {
    let out = fgft_vm::run(env, spec)?;
    if !out.is_clean() {
        return Err(msg(format!("{what}: {}\n{}", out.summary(), out.tail(30))));
    }
    Ok(out)
}

/// An error unless fgft-fsw's marker `w` reports no failed operation and no
/// bad tree.
fn workload_ok(w: &fgft_vm::Marker, what: &str) -> Result<(), CampaignError> {
    if w.get("failed") != Some("0") || w.get("bad") != Some("0") {
        return Err(msg(format!("{what}: a workload failed: {w}")));
    }
    Ok(())
}

/// One round of the overhead benchmark: the workload's wall time on each
/// build, in seconds.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    pub stock: f64,
    pub fgft: f64,
}

/// Overhead on the workload: `ops` operations of fgft-fsw on Debian's own
/// modules of `fs` and on the split one, alternating, `rounds` each, in
/// one boot (the split is loaded in place of the stock modules and back).
pub fn overhead(
    env: &Env,
    fs: &Fs,
    (rt, built): (&Path, &Path),
    rounds: usize,
    ops: usize,
) -> Result<Vec<Round>, CampaignError> {
    let (m, sm) = (fs.name, fs.module);
    let (mut spec, _img) = fs_vm(env, fs, &format!("fs-{m}-overhead"), (rt, built), 128)?;
    spec.stock_modules
        .extend(fs.stock.iter().map(|m| m.to_string()));
    let stock_in: String = fs
        .stock
        .iter()
        .map(|m| format!("modprobe {m} && "))
        .collect();
    let stock_out: String = fs
        .stock
        .iter()
        .rev()
        .map(|m| format!("rmmod {m} && "))
        .collect();
    spec.script = format!(
        "modprobe virtio_blk || exit 10\n\
         {}insmod /lib/fgft/fgft_rt.ko || exit 12\n\
         mkdir -p /mnt/{m}\n\
         for r in $(seq 1 {rounds}); do\n\
           for b in stock fgft; do\n\
             if [ $b = stock ]; then {stock_in}true || exit 14; else insmod /lib/fgft/{sm}_sfi.ko && insmod /lib/fgft/{sm}_fgft.ko || exit 14; fi\n\
             mount -t {m} /dev/vda /mnt/{m} || exit 11\n\
             mkdir /mnt/{m}/$b$r\n\
             fgft-fsw -n {ops} -s $r /mnt/{m}/$b$r | sed \"s/^FGFT-MARK fsw /FGFT-MARK ofsw build=$b round=$r /\"\n\
             umount /mnt/{m} || exit 15\n\
             if [ $b = stock ]; then {stock_out}true; else rmmod {sm}_fgft && rmmod {sm}_sfi; fi || exit 17\n\
           done\n\
         done\n",
        load_deps(fs)
    );
    spec.timeout = Duration::from_secs(120 + 60 * rounds as u64);
    let out = run_clean(env, &spec, "overhead run")?;
    for w in out.markers_named("ofsw") {
        workload_ok(w, "overhead run")?;
    }
    let time = |b: &str, r: usize| -> Option<f64> {
        let m = out
            .markers_named("ofsw")
            .into_iter()
            .find(|m| m.get("build") == Some(b) && m.parse::<usize>("round") == Some(r))?;
        Some(m.parse::<f64>("ns")? / 1e9)
    };
    (1..=rounds)
        .map(|r| match (time("stock", r), time("fgft", r)) {
            (Some(stock), Some(fgft)) => Ok(Round { stock, fgft }),
            _ => Err(msg(format!("overhead run: round {r} has no times"))),
        })
        .collect()
}

/// One entry point's runtime sums (debugfs `entries/NAME/stages`) after a
/// workload: `txns`, the cycles of each stage, the events, `plain` calls.
pub type Stages = BTreeMap<String, u64>;

/// A profile: per entry point (isolated sums, plain sums), the workload's
/// wall times (isolated, isolation off) in seconds, and the guest `perf`
/// samples of both workloads by symbol (empty without `perf`).
pub type Profile = (
    BTreeMap<String, (Stages, Stages)>,
    (f64, f64),
    Vec<PerfRow>,
    Option<(InsnSpan, InsnSpan)>,
);

/// One symbol of a guest `perf report -n --sort sym`: its samples in the
/// workload run isolated (`iso`) and with isolation off (`off`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfRow {
    pub symbol: String,
    pub iso: u64,
    pub off: u64,
}

/// The `FGFT-PERF <build> <percent> <samples> <symbol>` lines of a console,
/// one row per symbol, sorted by the samples isolation adds (most first,
/// then by name).
pub fn perf_rows(console: &str) -> Vec<PerfRow> {
    let mut by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in console.lines() {
        let Some(rest) = l.strip_prefix("FGFT-PERF ") else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let (Some(build), Some(_pct), Some(n)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let symbol = w.collect::<Vec<_>>().join(" ");
        let e = by.entry(symbol).or_default();
        match build {
            "iso" => e.0 += n,
            "off" => e.1 += n,
            _ => {}
        }
    }
    let mut rows: Vec<PerfRow> = by
        .into_iter()
        .map(|(symbol, (iso, off))| PerfRow { symbol, iso, off })
        .collect();
    rows.sort_by(|a, b| {
        let d = |r: &PerfRow| r.iso as i64 - r.off as i64;
        d(b).cmp(&d(a)).then_with(|| a.symbol.cmp(&b.symbol))
    });
    rows
}

/// Where the time of `ops` operations of fgft-fsw goes: `fs` split with
/// stage times, the workload run isolated, then again with every entry's
/// isolation off (each call's plain cycles).  `no_read_checks` builds the
/// SFI module without its load checks; `perf` (a host `perf` binary) samples
/// the whole guest during the isolated workload and reports by symbol;
/// `insn` counts both workloads' guest instructions by symbol (QEMU's
/// plugin, [`InsnProfile`]: isolated, then isolation off).  A `statfs`
/// before both runs counts VFAT's free clusters, which the first `statfs`
/// of a mount does once, so that neither run is charged with it.
pub fn profile(
    env: &Env,
    fs: &Fs,
    ops: usize,
    (no_read_checks, perf, insn): (bool, Option<&Path>, bool),
) -> Result<Profile, CampaignError> {
    let m = fs.name;
    let (rt, built) = split_fs_with(
        env,
        fs,
        &env.src612,
        Vec::new(),
        &format!("prof-{m}"),
        |o| {
            o.stage_times = true;
            o.no_read_checks = no_read_checks;
        },
    )?;
    let (mut spec, _img) = fs_vm(env, fs, &format!("fs-{m}-profile"), (&rt, &built), 128)?;
    // With `perf`: both workloads sampled, reported by symbol with sample
    // counts (`FGFT-PERF <build> <percent> <samples> <symbol>`).
    if let Some(perf) = perf {
        spec.add_host_program(perf)?;
    }
    let counter = if insn {
        Some(InsnProfile::attach(env, &mut spec, 4)?)
    } else {
        None
    };
    let mark = |n: usize| {
        if insn {
            InsnProfile::mark(n)
        } else {
            String::new()
        }
    };
    let perf_bin = perf.map(|p| p.display().to_string());
    let sample = |mode: &str| match &perf_bin {
        Some(p) => format!("{p} record -q -a -e cpu-clock -F 4000 -o /tmp/perf-{mode}.data -- "),
        None => String::new(),
    };
    let report = |mode: &str| match &perf_bin {
        Some(p) => format!(
            "{p} report -i /tmp/perf-{mode}.data --stdio -n --sort sym --percent-limit 0.2 \
             2>/dev/null | grep -v '^#' | grep . | sed 's/^/FGFT-PERF {mode} /'\n"
        ),
        None => String::new(),
    };
    let e = "/sys/kernel/debug/fgft/entries";
    let dump = |mode: &str| {
        format!(
            "for d in {e}/*; do l=\"FGFT-MARK prof build={mode} entry=${{d##*/}}\"; \
             while read k v; do l=\"$l $k=$v\"; done < $d/stages; \
             while read k v; do case $k in aborts_*|commits) l=\"$l $k=$v\";; esac; done < $d/stats; \
             echo \"$l\"; done\n"
        )
    };
    spec.script.push_str(&format!(
        "mkdir -p /mnt/{m} && mount -t {m} /dev/vda /mnt/{m} || exit 11\n\
         mkdir /mnt/{m}/iso /mnt/{m}/off\n\
         stat -f /mnt/{m} >/dev/null\n\
         {}{}fgft-fsw -n {ops} -s 1 /mnt/{m}/iso | sed 's/^FGFT-MARK fsw /FGFT-MARK pfsw build=iso /'\n\
         {}{}{}\
         for d in {e}/*; do echo N > $d/isolate; done\n\
         echo 1 > /sys/kernel/debug/fgft/reset\n\
         {}{}fgft-fsw -n {ops} -s 1 /mnt/{m}/off | sed 's/^FGFT-MARK fsw /FGFT-MARK pfsw build=off /'\n\
         {}{}{}\
         umount /mnt/{m} || exit 15\n",
        mark(1),
        sample("iso"),
        mark(2),
        report("iso"),
        dump("iso"),
        mark(3),
        sample("off"),
        mark(4),
        report("off"),
        dump("off")
    ));
    spec.timeout = Duration::from_secs(300);
    let out = run_clean(env, &spec, "profile run")?;
    let mut per: BTreeMap<String, (Stages, Stages)> = BTreeMap::new();
    for p in out.markers_named("prof") {
        let (Some(mode), Some(entry)) = (p.get("build"), p.get("entry")) else {
            continue;
        };
        let sums: Stages = p
            .fields
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.parse().ok()?)))
            .collect();
        let slot = per.entry(entry.to_string()).or_default();
        if mode == "iso" {
            slot.0 = sums;
        } else {
            slot.1 = sums;
        }
    }
    let wall = |mode: &str| -> Result<f64, CampaignError> {
        let w = out
            .markers_named("pfsw")
            .into_iter()
            .find(|w| w.get("build") == Some(mode))
            .ok_or_else(|| msg(format!("profile run: no {mode} workload")))?;
        workload_ok(w, "profile run")?;
        Ok(w.parse::<f64>("ns").unwrap_or(0.0) / 1e9)
    };
    let spans = match counter {
        Some(c) => {
            let spans = c.read()?;
            let span = |n: u32| spans.iter().find(|s| s.mark == n).cloned();
            span(2).zip(span(4))
        }
        None => None,
    };
    Ok((
        per,
        (wall("iso")?, wall("off")?),
        perf_rows(&out.console),
        spans,
    ))
}

/// The median of `v` (0 when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The `p`-th percentile (0..=100) of `v`, nearest rank (0 when empty).
pub fn percentile(v: &[u64], p: usize) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    if s.is_empty() {
        return 0;
    }
    let rank = (p * s.len()).div_ceil(100).clamp(1, s.len());
    s[rank - 1]
}

/// Lines of settings in a sidecar: not blank, not a comment.
pub fn sidecar_lines(text: &str) -> usize {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count()
}

/// What [`report`] writes about one file system.
pub struct Results<'a> {
    pub fs: &'a Fs,
    pub campaign: &'a Campaign,
    pub per_entry: usize,
    pub targets: usize,
    /// Entry points the sidecar isolates.
    pub entries: usize,
    /// (variant id, native outcome) of the variants run natively.
    pub native: Vec<(u32, Native)>,
    pub rounds: Vec<Round>,
    /// Why the overhead run gave no rounds.
    pub overhead_error: Option<String>,
    /// The same with the SFI module built without load checks (stores
    /// checked, as FGFT checks them; a wild load still faults through the
    /// MMU), and why that run gave none.
    pub rounds_nr: Vec<Round>,
    pub overhead_nr_error: Option<String>,
    pub ops: usize,
    pub sidecar: String,
    pub fsck: (Option<i32>, String),
}

/// results/membrane.md: a summary line per file system, then each one's
/// campaign, recovery time, native comparison and overhead.
pub fn report(command: &str, all: &[Results<'_>]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Restartable file systems under fgft (issue 17)\n");
    let _ = writeln!(
        s,
        "Generated by `{command}`. Debian's 6.12 kernel in QEMU (TCG); each \
         file system of linux-source-6.12 split by fgft with its sidecar in \
         `corpus/upstream/`. Images are made on the host with the real tools \
         and attached as virtio disks; the workload is `fgft-fsw`, which \
         checks every read and listing and, at the end, every file against \
         its model of completed operations.\n"
    );
    let _ = writeln!(
        s,
        "| file system | sidecar lines | faults fired | transient hidden | crashes | fsck | recovery p50 / max | natively crash or corrupt | overhead | without load checks |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    let pct = |rounds: &[Round]| {
        if rounds.is_empty() {
            "not measured".to_string()
        } else {
            format!("{:+.1}%", (overhead_ratio(rounds) - 1.0) * 100.0)
        }
    };
    for r in all {
        let c = r.campaign;
        let fired = c.fired();
        let hidden = fired.iter().filter(|f| c.hidden(f)).count();
        let rec = c.recovery_ns();
        let bad = r
            .native
            .iter()
            .filter(|(_, n)| matches!(n, Native::Crash | Native::Hang | Native::Corrupt))
            .count();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {hidden} | {} | exit {} | {} / {} | {bad} of {} | {} | {} |",
            r.fs.name,
            sidecar_lines(&r.sidecar),
            fired.len(),
            c.out.oopses + usize::from(c.out.panicked),
            r.fsck.0.map_or("none".into(), |c| c.to_string()),
            us(percentile(&rec, 50)),
            us(percentile(&rec, 100)),
            r.native.len(),
            pct(&r.rounds),
            pct(&r.rounds_nr)
        );
    }
    s.push('\n');
    for r in all {
        fs_section(&mut s, r);
    }
    let _ = writeln!(s, "## Notes\n");
    let _ = writeln!(
        s,
        "- TCG distorts absolute times (every instruction is translated); the \
         overhead is a ratio of two builds in the same boot, and the recovery \
         times are what the guest's clock saw.\n\
         - Not isolated, so not in the campaigns: mkdir (its synchronous \
         write-back hangs under fgft), the address-space operations (their \
         get_block callbacks would run outside isolation) and the super \
         block's life cycle; for VFAT also setattr and update_time.\n\
         - Membrane changed fewer than 5 lines per file system; fgft's \
         sidecars are the lines counted above (the entry points to isolate, \
         `[checkpoint] none`, and for VFAT the one function whose reads are \
         not range-checked)."
    );
    s
}

/// `tool arg...` as a shell would read it.
fn command_line((tool, args): (&str, &[&str])) -> String {
    std::iter::once(tool)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
}

fn us(ns: u64) -> String {
    format!("{:.0} µs", ns as f64 / 1000.0)
}

/// The median fgft / stock time of the overhead rounds (1 without rounds).
pub fn overhead_ratio(rounds: &[Round]) -> f64 {
    let st: Vec<f64> = rounds.iter().map(|w| w.stock).collect();
    let fg: Vec<f64> = rounds.iter().map(|w| w.fgft).collect();
    match median(&st) {
        m if m > 0.0 => median(&fg) / m,
        _ => 1.0,
    }
}

fn fs_section(s: &mut String, r: &Results<'_>) {
    let (c, fs) = (r.campaign, r.fs);
    let out = &c.out;
    let fired = c.fired();
    let hidden = fired.iter().filter(|f| c.hidden(f)).count();
    let _ = writeln!(s, "## {}\n", fs.name);
    let _ = writeln!(
        s,
        "{} of linux-source-6.12, `{}` ({} lines of settings), images made by \
         `{}`, checked by `{}`.\n",
        fs.dir,
        fs.sidecar,
        sidecar_lines(&r.sidecar),
        command_line(fs.mkfs),
        command_line(fs.fsck)
    );
    let _ = writeln!(s, "### Campaign\n");
    let _ = writeln!(
        s,
        "Faults from fgft-inject (seed {SEED}, at most {} per function) in the \
         {} functions the {} isolated operations reach (their closures in the \
         plan); a variant fires only inside a transaction's body \
         (`fgft_inject_txn`), so a function that code fgft does not isolate \
         also calls (mkdir) runs the fault-free path there. Each variant is \
         armed once (transient) under a 60-operation workload of its own. One \
         boot.\n",
        r.per_entry, r.targets, r.entries
    );
    let _ = writeln!(s, "| | count |\n|---|---|");
    let _ = writeln!(s, "| variants planted | {} |", c.variants.len());
    let _ = writeln!(s, "| fired (reached by the workload) | {} |", fired.len());
    let _ = writeln!(
        s,
        "| transient faults hidden (workload completed and verified, no error seen) | {hidden} of {} |",
        fired.len()
    );
    let aborted = fired
        .iter()
        .filter(|f| f.parse::<u64>("aborts").unwrap_or(0) > 0)
        .count();
    let _ = writeln!(
        s,
        "| fired faults caught and aborted (then retried) | {aborted} |"
    );
    let _ = writeln!(
        s,
        "| fired without an abort (a corrupted value with no fault) | {} |",
        fired.len() - aborted
    );
    let _ = writeln!(
        s,
        "| kernel crashes | {} |",
        out.oopses + usize::from(out.panicked)
    );
    let checks = out.markers_named("check");
    let bad_checks = checks.iter().filter(|k| k.get("bad") != Some("0")).count();
    let _ = writeln!(
        s,
        "| trees checked after the remount / with a lost or wrong write | {} / {bad_checks} |",
        checks.len()
    );
    let _ = writeln!(
        s,
        "| `{}` on the image | exit {} |\n",
        command_line(fs.fsck),
        r.fsck.0.map_or("none".into(), |c| c.to_string())
    );
    by_kind(s, c);
    persistent(s, c);
    let rec = c.recovery_ns();
    let _ = writeln!(s, "### Recovery time\n");
    let _ = writeln!(
        s,
        "Per fault that aborted ({} faults): the abort (from the fault to the \
         restored state, runtime `recovery_ns`) plus the retry (from its start \
         to its commit, runtime `retry_ns`). Target: p50 < 1 ms (Membrane: < \
         30 ms).\n",
        rec.len()
    );
    let _ = writeln!(
        s,
        "| p50 | p90 | max |\n|---|---|---|\n| {} | {} | {} |\n",
        us(percentile(&rec, 50)),
        us(percentile(&rec, 90)),
        us(percentile(&rec, 100))
    );
    native_section(s, r);
    overhead_section(s, r);
}

fn by_kind(s: &mut String, c: &Campaign) {
    let _ = writeln!(s, "#### By fault kind\n");
    let _ = writeln!(s, "| kind | planted | fired | hidden |\n|---|---|---|---|");
    let kinds: BTreeSet<String> = c.variants.iter().map(|v| v.kind.to_string()).collect();
    for k in kinds {
        let ids: BTreeSet<String> = c
            .variants
            .iter()
            .filter(|v| v.kind.to_string() == k)
            .map(|v| v.id.to_string())
            .collect();
        let fired: Vec<_> = c
            .fired()
            .into_iter()
            .filter(|f| f.get("id").is_some_and(|i| ids.contains(i)))
            .collect();
        let hidden = fired.iter().filter(|f| c.hidden(f)).count();
        let _ = writeln!(s, "| {k} | {} | {} | {hidden} |", ids.len(), fired.len());
    }
    s.push('\n');
}

fn persistent(s: &mut String, c: &Campaign) {
    let ids: Vec<&str> = c
        .out
        .markers_named("pexit")
        .iter()
        .filter_map(|m| m.get("id"))
        .collect();
    let _ = writeln!(s, "#### Persistent faults\n");
    let _ = writeln!(
        s,
        "The first {} variants that fired, armed on every pass under the \
         60-operation workload that fired them once (the same seed), then \
         disarmed and followed by a clean one. Fired: how many times the \
         variant's fault ran in that workload, and how many transactions \
         aborted; a variant that fires without a fault (a stack overrun that \
         corrupts nothing read later) aborts nothing, and the application sees \
         no error.\n",
        ids.len()
    );
    let _ = writeln!(
        s,
        "| variant | fired (aborts) | error reached the application | next workload (failed, bad) |\n|---|---|---|---|"
    );
    let after = c.out.markers_named("after");
    for id in ids {
        let label = c
            .variants
            .iter()
            .find(|v| v.id.to_string() == id)
            .map_or(String::new(), |v| v.label.clone());
        let next = after
            .iter()
            .find(|a| a.get("id") == Some(id))
            .map_or("none".to_string(), |a| {
                format!(
                    "{}, {}",
                    a.get("failed").unwrap_or("?"),
                    a.get("bad").unwrap_or("?")
                )
            });
        let pexit = c
            .out
            .markers_named("pexit")
            .into_iter()
            .find(|p| p.get("id") == Some(id));
        let fired = pexit.map_or("?".to_string(), |p| {
            format!(
                "{} ({})",
                p.get("fires").unwrap_or("?"),
                p.get("aborts").unwrap_or("?")
            )
        });
        let seen = if c.persistent_seen(id) {
            "yes"
        } else if pexit.and_then(|p| p.get("fires")) == Some("0") {
            "not reached"
        } else {
            "no"
        };
        let _ = writeln!(s, "| {id} `{label}` | {fired} | {seen} | {next} |");
    }
    s.push('\n');
}

fn native_section(s: &mut String, r: &Results<'_>) {
    let _ = writeln!(s, "### Natively\n");
    let _ = writeln!(
        s,
        "The same injected tree built without fgft (Debian's headers, its own \
         Kbuild), each variant that fired under fgft fired once under the same \
         workload, one boot each ({} variants). Outcomes: crash (oops or \
         panic), hang, corrupt (a completed write lost or wrong, or fsck \
         errors), error (the application got errors), nothing.\n",
        r.native.len()
    );
    let mut counts: std::collections::BTreeMap<Native, usize> = Default::default();
    for (_, n) in &r.native {
        *counts.entry(*n).or_default() += 1;
    }
    let _ = writeln!(s, "| native outcome | variants |\n|---|---|");
    for (n, k) in &counts {
        let _ = writeln!(s, "| {} | {k} |", n.name());
    }
    s.push('\n');
    let _ = writeln!(s, "<details><summary>Per variant</summary>\n");
    let _ = writeln!(s, "| variant | under fgft | natively |\n|---|---|---|");
    let c = r.campaign;
    for (id, n) in &r.native {
        let f = c
            .fired()
            .into_iter()
            .find(|f| f.parse::<u32>("id") == Some(*id));
        let fgft = match f {
            Some(f) if c.hidden(f) => "hidden",
            Some(_) => "seen",
            None => "not fired",
        };
        let label = c
            .variants
            .iter()
            .find(|v| v.id == *id)
            .map_or(String::new(), |v| v.label.clone());
        let _ = writeln!(s, "| {id} `{label}` | {fgft} | {} |", n.name());
    }
    let _ = writeln!(s, "\n</details>\n");
}

fn overhead_section(s: &mut String, r: &Results<'_>) {
    let _ = writeln!(s, "### Overhead\n");
    overhead_table(s, r, &r.rounds, r.overhead_error.as_deref());
    let _ = writeln!(
        s,
        "Without load checks: the SFI module built with `fgft-cc split \
         --no-read-checks`, every store still checked (as FGFT checks them; \
         a wild load still faults through the MMU, and is recovered), in a \
         boot of its own.\n"
    );
    overhead_table(s, r, &r.rounds_nr, r.overhead_nr_error.as_deref());
}

fn overhead_table(s: &mut String, r: &Results<'_>, rounds: &[Round], error: Option<&str>) {
    if let Some(e) = error {
        let _ = writeln!(s, "Not measured: {e}\n");
        return;
    }
    let _ = writeln!(
        s,
        "fgft-fsw, {} operations a round, on Debian's own modules ({}) and on \
         the split one, alternating in one boot (the split is loaded in place \
         of the stock modules and back); the workload's wall time (its \
         operations, final sync and check, as fgft-fsw measures it). Target: \
         ≤ 10% (Membrane: < 3%).\n",
        r.ops,
        r.fs.stock.join(", ")
    );
    let _ = writeln!(
        s,
        "| round | stock (s) | fgft (s) | fgft / stock |\n|---|---|---|---|"
    );
    for (i, w) in rounds.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} | {:.2} | {:.2} | {:.3} |",
            i + 1,
            w.stock,
            w.fgft,
            w.fgft / w.stock
        );
    }
    let st: Vec<f64> = rounds.iter().map(|w| w.stock).collect();
    let fg: Vec<f64> = rounds.iter().map(|w| w.fgft).collect();
    let (ms, mf) = (median(&st), median(&fg));
    let _ = writeln!(
        s,
        "| median | {ms:.2} | {mf:.2} | {:.3} |\n\nOverhead (medians): {:+.1}%.\n",
        mf / ms,
        (mf / ms - 1.0) * 100.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closures_reads_wrapped_closure_lines() {
        let plan = "entry a (x.c:1)\n  closure (3): a b\n      c\n  param x: as is\n\
                    entry d (x.c:9)\n  closure (1): d\n";
        let fns: Vec<String> = closures(plan).into_iter().collect();
        assert_eq!(fns, ["a", "b", "c", "d"]);
    }

    #[test]
    fn percentiles_and_medians() {
        assert_eq!(percentile(&[5, 1, 3, 2, 4], 50), 3);
        assert_eq!(percentile(&[5, 1, 3, 2, 4], 100), 5);
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }

    #[test]
    fn perf_rows_pair_both_builds_by_symbol() {
        let console = "FGFT-PERF iso     17.34%  120  [k] pv_native_safe_halt\n\
                       FGFT-PERF iso      0.94%   40  [k] __asan_load8_noabort\n\
                       FGFT-PERF off     20.10%  150  [k] pv_native_safe_halt\n\
                       FGFT-PERF off      1.00%    7  [.] main\n\
                       FGFT-PERF iso      1.00%    7  [.] main\n\
                       FGFT-PERF iso  garbage\n";
        let rows = perf_rows(console);
        let got: Vec<(&str, u64, u64)> = rows
            .iter()
            .map(|r| (r.symbol.as_str(), r.iso, r.off))
            .collect();
        assert_eq!(
            got,
            [
                ("[k] __asan_load8_noabort", 40, 0),
                ("[.] main", 7, 7),
                ("[k] pv_native_safe_halt", 120, 150),
            ]
        );
    }

    #[test]
    fn sidecar_lines_skips_comments_and_blanks() {
        assert_eq!(sidecar_lines("# c\n\n[driver]\nname = \"m\"\n  # x\n"), 2);
    }
}
