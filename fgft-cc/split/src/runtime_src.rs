//! The runtime module's sources, carried in fgft-cc so that OUT builds
//! fgft_rt.ko with the driver's two modules in one `make -C KDIR M=OUT`
//! (OUT/runtime/, the runtime-kmod/ directory without its self-test).
//! Invariant: the list is every file of runtime-kmod/src, its Kbuild and
//! its headers (a unit test compares it with the directory).

macro_rules! runtime_files {
    ($($p:literal),* $(,)?) => {
        &[$(($p, include_str!(concat!("../../../runtime-kmod/", $p)))),*]
    };
}

/// (path under runtime-kmod/, text).
pub(crate) const FILES: &[(&str, &str)] = runtime_files!(
    "Kbuild",
    "include/fgft/runtime.h",
    "include/fgft/sfi-as.sh",
    "include/fgft/sfi-bitops.h",
    "include/fgft/sfi-direct.list",
    "include/fgft/va.h",
    "src/check.c",
    "src/checkpoint.c",
    "src/core.c",
    "src/debugfs.c",
    "src/direct.c",
    "src/fgft_asan.h",
    "src/fgft_compat.h",
    "src/fgft_internal.h",
    "src/fgft_ivx.h",
    "src/fgft_objtrack.h",
    "src/fgft_rtab.h",
    "src/fgft_undolog.h",
    "src/fs.c",
    "src/heap.c",
    "src/inject.c",
    "src/ivx.c",
    "src/jmp.S",
    "src/mem.c",
    "src/objtrack.c",
    "src/rtab.c",
    "src/undolog.c",
);

#[cfg(test)]
mod tests {
    use super::FILES;
    use std::path::Path;

    #[test]
    fn every_runtime_source_is_carried() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../runtime-kmod");
        let mut on_disk: Vec<String> = vec!["Kbuild".into()];
        for dir in ["src", "include/fgft"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                // What a build in place leaves (objects, kbuild's .cmd files).
                if name.starts_with('.') || name.ends_with(".o") {
                    continue;
                }
                on_disk.push(format!("{dir}/{name}"));
            }
        }
        on_disk.sort();
        let mut carried: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        carried.sort();
        assert_eq!(carried, on_disk);
    }
}
