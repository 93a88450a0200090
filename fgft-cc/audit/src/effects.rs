//! What a kernel function does through each of its parameters: the stores
//! it makes through the pointer (level 0: `*p = v`, `p->f = v`, `p[i]++`),
//! the stores through pointers it loads from there (level 1 and deeper:
//! `**p = v`, `(*data)[i] = c`, `p->next->f = v`), and the calls it hands
//! the pointer to (with the level of what it hands).
//!
//! Invariant: flow-insensitive and per function; a local that holds a value
//! derived from a parameter at any point holds it everywhere.  A member
//! whose declaration is not found is taken as embedded in its object
//! (`p->name[i]` writes `*p`), the reading that charges the write to the
//! parameter itself.

use fgft_parse::ParsedFile;
use std::collections::BTreeSet;
use std::collections::HashMap;
use tree_sitter::Node;

/// A value's roots: (parameter index, level).  Level 0 is the parameter's
/// value (or a pointer into the same object); each load through it adds one.
type Roots = BTreeSet<(usize, u8)>;

/// The deepest level tracked (loads past it stay at it).
const MAX_LEVEL: u8 = 3;

/// One store through a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub level: u8,
    /// 1-based line in the file.
    pub line: usize,
    pub text: String,
}

/// A call that hands on a value derived from a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    pub callee: String,
    pub arg: usize,
    pub level: u8,
    pub line: usize,
}

/// One parameter and what the function does through it.
#[derive(Debug, Clone, Default)]
pub struct Param {
    pub name: String,
    /// The declaration as written (`const struct pci_dev *dev`).
    pub decl: String,
    pub stores: Vec<Store>,
    pub passes: Vec<Pass>,
}

/// A function's parameters and their effects.
#[derive(Debug, Clone, Default)]
pub struct FnEffects {
    pub name: String,
    pub params: Vec<Param>,
    pub variadic: bool,
}

/// Tells whether member `field` of `struct name` is an array (`Some(true)`),
/// a pointer (`Some(false)`), or is not known (`None`).
pub trait Members {
    fn is_array(&self, st: &str, field: &str) -> Option<bool>;
}

/// The effects of the function defined by `def` in `pf`; `line0` is the
/// file line of `pf`'s first line (a definition parsed on its own).
pub fn of(pf: &ParsedFile, def: Node<'_>, line0: usize, members: &dyn Members) -> FnEffects {
    let mut w = Walker {
        pf,
        line0,
        members,
        vars: HashMap::new(),
        types: HashMap::new(),
        fx: FnEffects {
            name: fgft_parse::function_name(pf, def)
                .unwrap_or_default()
                .to_string(),
            ..Default::default()
        },
        record: false,
    };
    w.params(def);
    let Some(body) = def.child_by_field_name("body") else {
        return w.fx;
    };
    // Twice without recording, so that aliases made late reach uses early.
    for _ in 0..2 {
        w.walk(body);
    }
    w.record = true;
    w.walk(body);
    w.fx
}

struct Walker<'a> {
    pf: &'a ParsedFile,
    line0: usize,
    members: &'a dyn Members,
    /// Parameters and the locals that hold values derived from them.
    vars: HashMap<String, Roots>,
    /// Declared type text of parameters and locals (`struct foo *`).
    types: HashMap<String, String>,
    fx: FnEffects,
    record: bool,
}

fn declarator_name<'t>(pf: &ParsedFile, mut d: Node<'t>) -> Option<(String, Node<'t>)> {
    loop {
        match d.kind() {
            "identifier" => return Some((pf.node_text(d).to_string(), d)),
            "pointer_declarator"
            | "array_declarator"
            | "parenthesized_declarator"
            | "attributed_declarator"
            | "init_declarator"
            | "function_declarator" => {
                d = d
                    .child_by_field_name("declarator")
                    .or_else(|| d.named_child(0))?;
            }
            _ => return None,
        }
    }
}

impl Walker<'_> {
    fn text(&self, n: Node<'_>) -> &str {
        self.pf.node_text(n)
    }

    fn line(&self, n: Node<'_>) -> usize {
        self.line0 + n.start_position().row
    }

    fn params(&mut self, def: Node<'_>) {
        let mut d = def.child_by_field_name("declarator");
        while let Some(x) = d {
            if x.kind() == "function_declarator" {
                break;
            }
            d = x
                .child_by_field_name("declarator")
                .or_else(|| x.named_child(0));
        }
        let Some(list) = d.and_then(|f| f.child_by_field_name("parameters")) else {
            return;
        };
        let mut c = list.walk();
        for p in list.named_children(&mut c) {
            match p.kind() {
                "variadic_parameter" => self.fx.variadic = true,
                "parameter_declaration" => {
                    let decl = self.text(p).to_string();
                    let name = p
                        .child_by_field_name("declarator")
                        .and_then(|d| declarator_name(self.pf, d))
                        .map(|(n, _)| n)
                        .unwrap_or_default();
                    if name.is_empty() && decl.trim() == "void" {
                        continue;
                    }
                    let i = self.fx.params.len();
                    if !name.is_empty() {
                        // A scalar parameter carries no memory to store into.
                        if pointerish(&decl) {
                            self.vars.insert(name.clone(), [(i, 0)].into());
                        }
                        self.types.insert(name.clone(), decl.clone());
                    }
                    self.fx.params.push(Param {
                        name,
                        decl,
                        ..Default::default()
                    });
                }
                _ => {}
            }
        }
    }

    /// Pre-order over statements and expressions; each node of interest
    /// is handled where it is met.
    fn walk(&mut self, root: Node<'_>) {
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "declaration" => self.declaration(n),
                "assignment_expression" => self.assignment(n),
                "update_expression" => {
                    if let Some(a) = n.child_by_field_name("argument") {
                        self.store(a, n);
                    }
                }
                "call_expression" => self.call(n),
                _ => {}
            }
            let mut c = n.walk();
            let kids: Vec<Node<'_>> = n.named_children(&mut c).collect();
            stack.extend(kids.into_iter().rev());
        }
    }

    fn declaration(&mut self, n: Node<'_>) {
        let ty = n
            .child_by_field_name("type")
            .map(|t| self.text(t).to_string())
            .unwrap_or_default();
        let mut c = n.walk();
        for d in n.children_by_field_name("declarator", &mut c) {
            let Some((name, _)) = declarator_name(self.pf, d) else {
                continue;
            };
            let stars = self.text(d).chars().take_while(|&c| c == '*').count();
            let decl = format!("{ty} {}", "*".repeat(stars));
            let ptr = pointerish(&decl) || self.text(d).contains('[');
            self.types.entry(name.clone()).or_insert(decl);
            if d.kind() == "init_declarator" && ptr {
                if let Some(v) = d.child_by_field_name("value") {
                    let r = self.val(v);
                    if !r.is_empty() {
                        self.vars.entry(name).or_default().extend(r);
                    }
                }
            }
        }
    }

    fn assignment(&mut self, n: Node<'_>) {
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return;
        };
        if l.kind() == "identifier" {
            let name = self.text(l).to_string();
            // Only a pointer variable (or one whose type is not known) holds
            // an address.
            if self.types.get(&name).is_some_and(|t| !pointerish(t)) {
                return;
            }
            let roots = self.val(r);
            if !roots.is_empty() {
                self.vars.entry(name).or_default().extend(roots);
            }
        } else {
            self.store(l, n);
        }
    }

    fn store(&mut self, lvalue: Node<'_>, at: Node<'_>) {
        if !self.record {
            return;
        }
        let line = self.line(at);
        let text: String = self
            .text(at)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let text: String = text.chars().take(80).collect();
        for (i, level) in self.loc(lvalue) {
            let st = Store {
                level,
                line,
                text: text.clone(),
            };
            if let Some(p) = self.fx.params.get_mut(i) {
                if !p.stores.contains(&st) {
                    p.stores.push(st);
                }
            }
        }
    }

    fn call(&mut self, n: Node<'_>) {
        if !self.record {
            return;
        }
        let Some(f) = n.child_by_field_name("function") else {
            return;
        };
        if f.kind() != "identifier" {
            return;
        }
        let callee = self.text(f).to_string();
        let Some(args) = n.child_by_field_name("arguments") else {
            return;
        };
        let line = self.line(n);
        let mut c = args.walk();
        let list: Vec<Node<'_>> = args.named_children(&mut c).collect();
        for (k, a) in list.into_iter().enumerate() {
            for (i, level) in self.val(a) {
                let pass = Pass {
                    callee: callee.clone(),
                    arg: k,
                    level,
                    line,
                };
                if let Some(p) = self.fx.params.get_mut(i) {
                    if !p.passes.contains(&pass) {
                        p.passes.push(pass);
                    }
                }
            }
        }
    }

    fn deeper(r: Roots) -> Roots {
        r.into_iter()
            .map(|(i, l)| (i, (l + 1).min(MAX_LEVEL)))
            .collect()
    }

    /// Whether `x.f` / `x->f` names an array embedded in the object (or a
    /// member whose declaration is not known).
    fn embedded(&self, fe: Node<'_>) -> bool {
        let Some(field) = fe.child_by_field_name("field") else {
            return true;
        };
        let base = fe.child_by_field_name("argument");
        let st = base
            .filter(|b| b.kind() == "identifier")
            .and_then(|b| self.types.get(self.text(b)))
            .and_then(|t| struct_name(t));
        match st {
            Some(s) => self.members.is_array(&s, self.text(field)).unwrap_or(true),
            None => true,
        }
    }

    /// The roots of the object an lvalue lies in.
    fn loc(&self, n: Node<'_>) -> Roots {
        match n.kind() {
            "parenthesized_expression" => n.named_child(0).map(|x| self.loc(x)).unwrap_or_default(),
            "pointer_expression" => {
                let a = n.child_by_field_name("argument");
                match a {
                    Some(a) if self.text(n).starts_with('*') => self.val(a),
                    _ => Roots::new(),
                }
            }
            "field_expression" => {
                let Some(a) = n.child_by_field_name("argument") else {
                    return Roots::new();
                };
                if self.arrow(n) {
                    self.val(a)
                } else {
                    self.loc(a)
                }
            }
            "subscript_expression" => {
                let Some(a) = n.child_by_field_name("argument") else {
                    return Roots::new();
                };
                if a.kind() == "field_expression" && self.embedded(a) {
                    self.loc(a)
                } else {
                    self.val(a)
                }
            }
            _ => Roots::new(),
        }
    }

    fn arrow(&self, fe: Node<'_>) -> bool {
        fe.child_by_field_name("operator")
            .map(|o| self.text(o) == "->")
            .unwrap_or_else(|| self.text(fe).contains("->"))
    }

    /// The roots of a pointer value.
    fn val(&self, n: Node<'_>) -> Roots {
        match n.kind() {
            "identifier" => self.vars.get(self.text(n)).cloned().unwrap_or_default(),
            "parenthesized_expression" => n.named_child(0).map(|x| self.val(x)).unwrap_or_default(),
            "cast_expression" => n
                .child_by_field_name("value")
                .map(|x| self.val(x))
                .unwrap_or_default(),
            "pointer_expression" => {
                let Some(a) = n.child_by_field_name("argument") else {
                    return Roots::new();
                };
                if self.text(n).starts_with('&') {
                    self.loc(a)
                } else {
                    Self::deeper(self.val(a))
                }
            }
            "field_expression" => {
                if self.embedded(n) {
                    self.loc(n)
                } else {
                    Self::deeper(self.loc(n))
                }
            }
            "subscript_expression" => Self::deeper(self.loc(n)),
            "binary_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.text(o).to_string())
                    .unwrap_or_default();
                if op != "+" && op != "-" {
                    return Roots::new();
                }
                let mut r = n
                    .child_by_field_name("left")
                    .map(|x| self.val(x))
                    .unwrap_or_default();
                if op == "+" {
                    if let Some(x) = n.child_by_field_name("right") {
                        r.extend(self.val(x));
                    }
                }
                r
            }
            "conditional_expression" => {
                let mut r = Roots::new();
                for f in ["consequence", "alternative"] {
                    if let Some(x) = n.child_by_field_name(f) {
                        r.extend(self.val(x));
                    }
                }
                r
            }
            "assignment_expression" => n
                .child_by_field_name("right")
                .map(|x| self.val(x))
                .unwrap_or_default(),
            "comma_expression" => n
                .child_by_field_name("right")
                .map(|x| self.val(x))
                .unwrap_or_default(),
            _ => Roots::new(),
        }
    }
}

/// Whether a declaration's type is a pointer or an array (a typedef that
/// hides one, `va_list`, is not seen).
pub fn pointerish(decl: &str) -> bool {
    decl.contains('*') || decl.contains('[')
}

/// `struct foo` of a declaration's type text (`const struct foo *p`).
pub fn struct_name(decl: &str) -> Option<String> {
    let mut it = decl.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    while let Some(w) = it.next() {
        if w == "struct" {
            return it.find(|w| !w.is_empty()).map(str::to_string);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    struct NoMembers;
    impl Members for NoMembers {
        fn is_array(&self, st: &str, field: &str) -> Option<bool> {
            (st == "s").then_some(field == "name")
        }
    }

    fn effects(src: &str) -> FnEffects {
        let pf = fgft_parse::parse_text(Path::new("k.c"), src.to_string()).unwrap();
        let root = pf.tree.root_node();
        let mut c = root.walk();
        let def = root
            .named_children(&mut c)
            .find(|n| n.kind() == "function_definition")
            .unwrap();
        of(&pf, def, 1, &NoMembers)
    }

    fn levels(p: &Param) -> Vec<u8> {
        p.stores.iter().map(|s| s.level).collect()
    }

    #[test]
    fn stores_through_the_cursor_are_one_level_down() {
        let fx = effects(
            "void ethtool_puts(u8 **data, const char *str)\n{\n\tu8 *cur = *data;\n\
             \tcur[0] = str[0];\n\t*data += 32;\n}\n",
        );
        assert_eq!(levels(&fx.params[0]), vec![1, 0]);
        assert!(fx.params[1].stores.is_empty());
    }

    #[test]
    fn embedded_and_pointer_members() {
        let fx = effects(
            "int f(struct s *p, int v)\n{\n\tp->name[2] = v;\n\tp->next[1] = v;\n\
             \tstrscpy(p->name, \"x\", 4);\n\treturn v;\n}\n",
        );
        // `name` is an array in `struct s`: level 0; `next` a pointer: 1.
        assert_eq!(levels(&fx.params[0]), vec![0, 1]);
        let pass = &fx.params[0].passes[0];
        assert_eq!(
            (pass.callee.as_str(), pass.arg, pass.level),
            ("strscpy", 0, 0)
        );
        assert!(fx.params[1].stores.is_empty() && fx.params[1].passes.is_empty());
    }

    #[test]
    fn a_local_alias_made_late_still_counts() {
        let fx = effects(
            "void g(u16 *val)\n{\n\tu16 *q;\n\tfor (;;) {\n\t\tif (x)\n\t\t\t*q = 1;\n\
             \t\tq = val;\n\t}\n}\n",
        );
        assert_eq!(levels(&fx.params[0]), vec![0]);
        assert_eq!(fx.params[0].stores[0].line, 6);
    }
}
