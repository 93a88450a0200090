//! Every kind of bad aspect gets a located diagnostic (codespan, rustc
//! style) and exit code 1: corpus/aspects/bad/*.xml woven into ringdev.

mod aspect_common;
use aspect_common::*;

fn diagnose(name: &str, with_kdir: bool) -> String {
    let out = tempfile::tempdir().unwrap();
    let aspect_file = format!("corpus/aspects/bad/{name}.xml");
    let mut args = vec![
        aspect_file.as_str(),
        "corpus/aspects/fixtures/ringdev",
        "-o",
        out.path().to_str().unwrap(),
    ];
    let (kdir, _) = if with_kdir {
        kernel()
    } else {
        Default::default()
    };
    let k = kdir.to_string_lossy().to_string();
    if with_kdir {
        args.push("--kdir");
        args.push(&k);
    }
    let (code, stdout, stderr) = aspect(&args);
    assert_eq!(
        code, 1,
        "{name}: expected exit 1\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        !out.path().join("fgft_aspect_bad.c").exists(),
        "{name}: nothing is written on error"
    );
    stderr
}

macro_rules! bad {
    ($name:ident, $kdir:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), diagnose(stringify!($name), $kdir));
        }
    };
}

bad!(malformed_xml, false);
bad!(unknown_pointcut, false);
bad!(pointcut_syntax, false);
bad!(bad_member, false);
bad!(structure, false);
bad!(binding, false);
bad!(after_on_access, false);
bad!(context_var, false);
bad!(bad_kernel_member, true);
bad!(unknown_struct, true);
bad!(advice_c_error, true);
bad!(bad_import, true);
