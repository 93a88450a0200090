//! Unit tests of the field-access and origin analysis.

use super::*;
use std::path::Path;

fn facts(text: &str) -> DriverFacts {
    let pf = fgft_parse::parse_text_with(
        Path::new("d.c"),
        text.to_string(),
        &fgft_parse::Options::default(),
    )
    .unwrap();
    let prog = Program::new(vec![pf]);
    analyze(&prog, &ApiModels::default(), &KernelGlobals::default())
}

#[test]
fn a_statement_expression_yields_its_last_expression() {
    // fgft-cc inject's corrupt-field template around a member read.
    let f = facts(
        "struct sb { int size; };\nstruct den { struct sb *d_sb; };\n\
         int f(struct den *d)\n{\n\tstruct sb *s = ({ __auto_type v = 0 ? (d->d_sb) : (d->d_sb); v; });\n\
         \treturn s->size;\n}\n",
    );
    let ff = &f.per_fn["f"];
    let via = Origin::FieldVal(CType::Record("struct den".into()), "d_sb".into());
    assert!(
        ff.derefs
            .iter()
            .any(|d| d.pointee == CType::Record("struct sb".into()) && d.origins.contains(&via)),
        "{:?}",
        ff.derefs
    );
}

#[test]
fn an_auto_type_local_holds_the_member_it_was_initialized_from() {
    // fgft-cc inject's corrupt-field template around a member of a kernel
    // struct this unit does not define: the member's type is known only
    // from what the driver converts it to, through the template's local.
    let f = facts(
        "struct sb { int size; };\n\
         int f(struct den *d)\n{\n\tstruct sb *s = ({ __auto_type v = 0 ? (d->d_sb) : (d->d_sb); v; });\n\
         \treturn s->size;\n}\n",
    );
    let den = CType::Record("struct den".into());
    assert!(
        f.per_fn["f"].relations.iter().any(|r| matches!(r,
            Relation::Conv { base, field, to }
                if *base == den && field == "d_sb" && *to == CType::Record("struct sb".into()))),
        "{:?}",
        f.per_fn["f"].relations
    );
}

#[test]
fn an_argument_converts_as_an_assignment_does() {
    // fs/fat's `MSDOS_SB(inode->i_sb)`, where struct inode is the kernel's
    // (its member's type unknown here): the parameter's type tells.
    let f = facts(
        "struct msdos_sb_info { int cluster_size; };\n\
         static inline struct msdos_sb_info *MSDOS_SB(struct super_block *sb)\n{\n\treturn sb->s_fs_info;\n}\n\
         int g(struct inode *inode)\n{\n\treturn MSDOS_SB(inode->i_sb)->cluster_size;\n}\n",
    );
    let inode = CType::Record("struct inode".into());
    assert!(
        f.per_fn["g"].relations.iter().any(|r| matches!(r,
            Relation::Conv { base, field, to }
                if *base == inode && field == "i_sb" && *to == CType::Record("struct super_block".into()))),
        "{:?}",
        f.per_fn["g"].relations
    );
}
