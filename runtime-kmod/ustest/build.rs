//! Builds the runtime's portable C files (../src) with the user-space shim.

fn main() {
    let files = [
        "../src/ivx.c",
        "../src/rtab.c",
        "../src/objtrack.c",
        "../src/undolog.c",
        "csrc/shim.c",
    ];
    let mut build = cc::Build::new();
    build
        .include("../src")
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .flag_if_supported("-Wno-unused-parameter")
        // The kernel's <linux/compiler_attributes.h> spelling, which
        // fgft_compat.h cannot define without tripping checkpatch.
        .define("__aligned(x)", Some("__attribute__((aligned(x)))"));
    for f in files {
        build.file(f);
        println!("cargo:rerun-if-changed={f}");
    }
    for h in [
        "../src/fgft_compat.h",
        "../src/fgft_ivx.h",
        "../src/fgft_rtab.h",
        "../src/fgft_objtrack.h",
        "../src/fgft_undolog.h",
    ] {
        println!("cargo:rerun-if-changed={h}");
    }
    build.compile("fgft_ds");
}
