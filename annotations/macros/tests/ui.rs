//! Misuse of the fgft attributes is a compile error with a clear span. The
//! expected messages are the `.stderr` files next to each case.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
