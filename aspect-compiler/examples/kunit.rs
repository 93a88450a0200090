//! Debug aid: loads a driver and the kernel unit, then prints what is known
//! about the structs named on the command line.
//!
//! cargo run -p fgft-aspect --example kunit -- KDIR DRIVER_DIR ASPECT.xml STRUCT...
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: kunit KDIR DRIVER_DIR ASPECT.xml STRUCT...");
        std::process::exit(2);
    }
    let kdir = PathBuf::from(&args[0]);
    let driver = match fgft_aspect::scan::Driver::load(&[PathBuf::from(&args[1])]) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let aspect = match fgft_aspect::Aspect::load(std::path::Path::new(&args[2])) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut env = driver.type_env();
    let t = std::time::Instant::now();
    match fgft_aspect::kbuild::kernel_unit(&kdir, &driver, &aspect) {
        Ok((pf, _)) => {
            println!("kernel unit: {} bytes, parsed in {:?}, errors: {}", pf.text.len(), t.elapsed(), pf.tree.root_node().has_error());
            let mut stack = vec![pf.tree.root_node()];
            let mut shown = 0;
            while let Some(n) = stack.pop() {
                if n.is_error() || n.is_missing() {
                    let mut a = n.parent();
                    let mut in_body = false;
                    while let Some(x) = a {
                        if x.kind() == "compound_statement" {
                            in_body = true;
                        }
                        a = x.parent();
                    }
                    if in_body {
                        continue;
                    }
                    if shown < 40 {
                        let s = n.start_byte().saturating_sub(120);
                        let e = n.end_byte().min(s + 160);
                        println!("ERROR at {}..{}: {:?}", s, n.end_byte(), &pf.text[s..e]);
                    }
                    shown += 1;
                    continue;
                }
                if n.has_error() {
                    for k in (0..n.child_count()).rev() {
                        stack.extend(n.child(k as u32));
                    }
                }
            }
            println!("{shown} error nodes");
            if let Ok(needle) = std::env::var("KUNIT_FIND") {
                if let Some(at) = pf.text.find(&needle) {
                    let mut n = pf.tree.root_node().descendant_for_byte_range(at, at + needle.len()).unwrap();
                    let mut chain = Vec::new();
                    loop {
                        chain.push(format!("{}@{}", n.kind(), n.start_byte()));
                        match n.parent() { Some(p) => n = p, None => break }
                    }
                    println!("{needle} at {at}: {}", chain.join(" < "));
                    if let Ok(ctx) = std::env::var("KUNIT_CTX") {
                        let c: usize = ctx.parse().unwrap();
                        println!("CONTEXT: {:?}", &pf.text[c.saturating_sub(300)..c + 1500]);
                    }
                }
            }
            env.add_file(&pf, true);
        }
        Err(e) => println!("kernel unit failed: {e}"),
    }
    if let Ok(pos) = std::env::var("KUNIT_AT") {
        let _ = pos;
    }
    println!("records {} typedefs {} funcs {}", env.records.len(), env.typedefs.len(), env.funcs.len());
    for s in &args[3..] {
        let pat = fgft_aspect::pointcut::Pattern { text: s.clone(), range: 0..0 };
        for k in env.records_named(&pat) {
            println!("{s}: {:?} members {:?}", k, env.member_names(&k));
        }
    }
}
