//! What an aborted entry point returns to its caller.

use fgft_facts::ctype::CType;
use fgft_stubs::AbortReturn;

/// Slots whose callers read the return value as something other than an
/// error code, and what an aborted call returns there: `$N` is the entry's
/// parameter N (1-based).
const SLOT_ABORTS: &[(&str, &str, &str)] = &[
    // A NAPI poll returns the work it did.  An aborted poll did not
    // complete (napi_complete_done is deferred to commit), so it still owns
    // the context: "the whole budget" makes NAPI poll it again, where 0
    // would leave it scheduled and never polled, and a negative value is
    // taken as work done.
    ("napi_struct.poll", "$2", "the budget: NAPI polls again"),
    // dev_get_stats() dereferences what ndo_get_stats returns; without the
    // callback it reads the net_device's own counters, so an aborted call
    // returns those rather than NULL.
    (
        "net_device_ops.ndo_get_stats",
        "&$1->stats",
        "the net_device's own counters",
    ),
];

/// The abort value the slots of an entry call for, if any.
pub(super) fn slot_abort(slots: &[String], d: &fgft_facts::program::FnDef) -> Option<AbortReturn> {
    for (slot, value, _why) in SLOT_ABORTS {
        if !slots.iter().any(|s| s == slot) {
            continue;
        }
        // `$N` (one digit) anywhere in the value is parameter N's name.
        let mut v = String::new();
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek().and_then(|n| n.to_digit(10))) {
                ('$', Some(k)) => {
                    chars.next();
                    v.push_str(&d.params.get((k as usize).checked_sub(1)?)?.name);
                }
                _ => v.push(c),
            }
        }
        return Some(AbortReturn::Value(v));
    }
    None
}

pub(super) fn abort_for(ret: &CType, ret_text: &str) -> AbortReturn {
    let t = ret_text.trim();
    if t == "void" {
        return AbortReturn::Void;
    }
    if matches!(ret, CType::Ptr(_)) || t.ends_with('*') {
        return AbortReturn::Value("NULL".into());
    }
    const SIGNED: &[&str] = &[
        "int",
        "long",
        "long int",
        "signed int",
        "signed long",
        "s32",
        "s64",
        "ssize_t",
        "s16",
        "s8",
        "short",
        "long long",
    ];
    let core = t
        .trim_start_matches("static ")
        .trim_start_matches("const ")
        .trim();
    if SIGNED.contains(&core) {
        return AbortReturn::Error;
    }
    match core {
        "irqreturn_t" => AbortReturn::Value("IRQ_NONE".into()),
        "netdev_tx_t" => AbortReturn::Value("NETDEV_TX_BUSY".into()),
        "pci_ers_result_t" => AbortReturn::Value("PCI_ERS_RESULT_DISCONNECT".into()),
        "bool" => AbortReturn::Value("false".into()),
        _ => AbortReturn::Value("0".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_values() {
        assert_eq!(abort_for(&CType::Void, "void"), AbortReturn::Void);
        assert_eq!(
            abort_for(&CType::Scalar("int".into()), "int"),
            AbortReturn::Error
        );
        assert_eq!(
            abort_for(&CType::Scalar("u32".into()), "u32"),
            AbortReturn::Value("0".into())
        );
        assert_eq!(
            abort_for(&CType::Named("irqreturn_t".into()), "irqreturn_t"),
            AbortReturn::Value("IRQ_NONE".into())
        );
    }
}
