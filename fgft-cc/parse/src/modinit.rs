//! `module-init.toml`: what the kernel's `module_*_driver(x)` helpers stand
//! for.
//!
//! Job: tell, for each helper macro that defines a module's init and exit
//! (`module_pci_driver(x)` is `module_init` calling `pci_register_driver(&x)`
//! and `module_exit` calling `pci_unregister_driver(&x)`), the two calls it
//! makes, so that a tool that must run code of its own at init and exit
//! (split registers its entry points, aspect sets up its switches) can spell
//! the macro out as explicit functions.
//!
//! Invariants: every entry has both templates, each naming `{arg}` (the
//! macro's argument) at least once; unknown keys are located errors.

use crate::tables::{self, TableDirs};
use crate::ParseError;
use std::collections::{BTreeMap, BTreeSet};

pub const TABLE_NAME: &str = "module-init.toml";
const BUILTIN: &str = include_str!("../../tables/module-init.toml");

/// The register and unregister calls of one helper, with `{arg}` for its
/// argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleMacro {
    pub register: String,
    pub unregister: String,
}

impl ModuleMacro {
    /// The register call for argument `arg`.
    pub fn register_call(&self, arg: &str) -> String {
        self.register.replace("{arg}", arg)
    }

    /// The unregister call for argument `arg`.
    pub fn unregister_call(&self, arg: &str) -> String {
        self.unregister.replace("{arg}", arg)
    }
}

/// Every known helper, by macro name, and the initcall macros that stand
/// for `module_init` in a module.
#[derive(Debug, Clone, Default)]
pub struct ModuleMacros {
    macros: BTreeMap<String, ModuleMacro>,
    initcalls: BTreeSet<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    macros: BTreeMap<String, Raw>,
    #[serde(default)]
    initcalls: Initcalls,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Initcalls {
    #[serde(default)]
    module_init: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    register: String,
    unregister: String,
}

impl ModuleMacros {
    /// The built-in table extended by the files in `dirs` (later entries
    /// replace earlier ones of the same name).
    pub fn load(dirs: &TableDirs) -> Result<ModuleMacros, ParseError> {
        let mut out = BTreeMap::new();
        let mut initcalls = BTreeSet::from(["module_init".to_string()]);
        for src in dirs.sources(BUILTIN, TABLE_NAME)? {
            let f: File = tables::parse_toml(&src, TABLE_NAME)?;
            initcalls.extend(f.initcalls.module_init);
            for (name, raw) in f.macros {
                for (key, t) in [("register", &raw.register), ("unregister", &raw.unregister)] {
                    if !t.contains("{arg}") {
                        return Err(tables::table_error(
                            &src,
                            TABLE_NAME,
                            t,
                            format!(
                                "macro `{name}`: `{key}` must name the macro's argument as {{arg}}"
                            ),
                        ));
                    }
                }
                let m = ModuleMacro {
                    register: raw.register,
                    unregister: raw.unregister,
                };
                out.insert(name, m);
            }
        }
        Ok(ModuleMacros {
            macros: out,
            initcalls,
        })
    }

    pub fn get(&self, name: &str) -> Option<&ModuleMacro> {
        self.macros.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.macros.contains_key(name)
    }

    /// Whether `name` hooks the module's init or exit: an init macro, a
    /// `module_*_driver` macro, or `module_exit`.
    pub fn is_hook(&self, name: &str) -> bool {
        name == "module_exit" || self.is_init(name) || self.contains(name)
    }

    /// Whether `name(f)` registers `f` as the module's init
    /// (`module_init`, or an initcall macro that a module build turns into
    /// `module_init`, as `late_initcall`).
    pub fn is_init(&self, name: &str) -> bool {
        self.initcalls.contains(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &ModuleMacro)> {
        self.macros.iter().map(|(k, v)| (k.as_str(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_spells_calls() {
        let t = ModuleMacros::load(&TableDirs::none()).unwrap();
        let pci = t.get("module_pci_driver").expect("module_pci_driver");
        assert_eq!(
            pci.register_call("e1000_driver"),
            "pci_register_driver(&e1000_driver)"
        );
        assert_eq!(pci.unregister_call("d"), "pci_unregister_driver(&d)");
        assert!(t.contains("module_pcmcia_driver"));
        assert!(!t.contains("module_init"));
        assert!(t.is_init("module_init") && t.is_init("late_initcall"));
        assert!(!t.is_init("module_exit"));
    }

    #[test]
    fn a_template_without_the_argument_is_a_located_error() {
        let dir = std::env::temp_dir().join(format!("fgft-modinit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(TABLE_NAME),
            "[macros.module_x_driver]\nregister = \"x_register()\"\nunregister = \"x_unregister(&{arg})\"\n",
        )
        .unwrap();
        let e = ModuleMacros::load(&TableDirs::of(vec![dir.clone()])).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        let ParseError::Table { message, range, .. } = e else {
            panic!("not a table error: {e}");
        };
        assert!(message.contains("{arg}"), "{message}");
        assert!(range.is_some());
    }
}
