//! fgft-cc: command-line edge.
fn main() {
    eprintln!("fgft-cc: no command yet");
    std::process::exit(1);
}
