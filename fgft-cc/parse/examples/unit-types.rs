//! Reads the types of one driver unit as Kbuild compiles it:
//! `cargo run -p fgft-parse --example unit-types -- KDIR FILE.c [STRUCT...]`
//! prints the source of the facts, counts, any warning, and the fields of
//! the structs named.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: unit-types KDIR FILE.c [STRUCT...]");
        std::process::exit(2);
    }
    let t0 = std::time::Instant::now();
    match fgft_parse::types::unit_types(args[0].as_ref(), args[1].as_ref()) {
        Ok((t, w)) => {
            if let Some(w) = w {
                eprintln!("{w}");
            }
            println!(
                "source={:?} structs={} typedefs={} prototypes={} secs={:.2}",
                t.source,
                t.structs.len(),
                t.typedefs.len(),
                t.prototypes.len(),
                t0.elapsed().as_secs_f64()
            );
            for s in &args[2..] {
                match t.structs.get(s) {
                    Some(d) => {
                        println!("struct {s} ({}:{})", d.file, d.line);
                        for f in &d.fields {
                            println!("  {}: {}", f.name, f.ty);
                        }
                    }
                    None => println!("struct {s}: not found"),
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
