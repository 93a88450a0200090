use fgft_campaign::membrane;
use fgft_vm::Env;
fn main() {
    let env = Env::load().unwrap();
    let fs = &membrane::MINIX;
    let c = membrane::fs_campaign(&env, fs, "tmp-minix-camp", 6, 10).unwrap();
    println!(
        "{} fired={} oopses={}",
        c.out.summary(),
        c.fired().len(),
        c.out.oopses
    );
    let f = membrane::fsck(fs.fsck.0, fs.fsck.1, &c.img).unwrap();
    println!(
        "fsck {:?}\n{}",
        f.0,
        f.1.lines().take(30).collect::<Vec<_>>().join("\n")
    );
}
