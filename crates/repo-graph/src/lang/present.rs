//! Per-language presentation: how the code of each language is shown to a
//! reader, a person or a model.
//!
//! Everything a downstream crate needs to render an entity in its own
//! language comes from here, so that no other crate branches on the
//! language: the Markdown fence name ([`Language::fence`]), comments
//! ([`Language::line_comment`], [`Language::doc_comment`]), short labels
//! ([`RepoGraph::signature`]), declarations as written
//! ([`RepoGraph::declaration`]), an entity with its body elided
//! ([`RepoGraph::outline`]), class skeletons ([`RepoGraph::class_skeleton`]),
//! module names as the language spells them ([`Module::dotted_name`]),
//! visibility ([`RepoGraph::is_public`]) and the conventions a ranking
//! relies on ([`Language::main_function`], [`Language::role_names`]).
//!
//! ```
//! # fn main() -> Result<(), repo_graph::Error> {
//! # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
//! # let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).map_err(repo_graph::Error::Io);
//! write("shapes.py", "class Shape:\n    \"\"\"A shape.\"\"\"\n    def area(self) -> float:\n        return 0.0\n")?;
//! write("Shape.java", "/** A shape. */\npublic abstract class Shape {\n  protected int sides;\n  public abstract double area();\n}\n")?;
//! let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
//! for qualname in ["shapes.Shape", "Shape"] {
//!     let Some(repo_graph::EntityId::Class(class)) = graph.entity(qualname) else { panic!() };
//!     let language = graph.language_of(repo_graph::EntityId::Class(class));
//!     println!("```{}\n{}\n```", language.fence(), graph.class_skeleton(class));
//! }
//! # Ok(())
//! # }
//! ```

use std::fmt::Write as _;

use crate::graph::RepoGraph;
use crate::model::{
    BaseRelation, Class, ClassId, EntityId, Function, FunctionId, FunctionKind, JavaTypeKind,
    Language, Modifier, Module, Param, ParamKind,
};

impl Language {
    /// The info string of a Markdown code fence holding this language.
    ///
    /// ```
    /// use repo_graph::Language;
    /// assert_eq!(Language::Python.fence(), "python");
    /// assert_eq!(Language::Java.fence(), "java");
    /// ```
    pub fn fence(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Java => "java",
        }
    }

    /// What starts a comment that runs to the end of the line.
    ///
    /// ```
    /// use repo_graph::Language;
    /// assert_eq!(Language::Python.line_comment(), "#");
    /// assert_eq!(Language::Java.line_comment(), "//");
    /// ```
    pub fn line_comment(self) -> &'static str {
        match self {
            Language::Python => "#",
            Language::Java => "//",
        }
    }

    /// One line of documentation as the language writes it: a docstring
    /// for Python, a Javadoc comment for Java. Lines are trimmed and joined
    /// with spaces, and text that would close the comment early is defused.
    ///
    /// ```
    /// use repo_graph::Language;
    /// assert_eq!(Language::Python.doc_comment("Adds two numbers."), "\"\"\"Adds two numbers.\"\"\"");
    /// assert_eq!(Language::Java.doc_comment("Adds two numbers."), "/** Adds two numbers. */");
    /// // Text ending in a quote or a backslash would end (or escape) the
    /// // closing quotes: a space keeps them whole.
    /// assert_eq!(Language::Python.doc_comment(r#"Returns "ok""#), r#""""Returns "ok" """"#);
    /// assert_eq!(Language::Python.doc_comment(r"Under C:\"), r#""""Under C:\ """"#);
    /// ```
    pub fn doc_comment(self, text: &str) -> String {
        let text = text.lines().map(str::trim).collect::<Vec<_>>().join(" ");
        match self {
            Language::Python => {
                let mut text = text.replace("\"\"\"", "'''");
                if text.ends_with(['"', '\\']) {
                    text.push(' ');
                }
                format!("\"\"\"{text}\"\"\"")
            }
            Language::Java => format!("/** {} */", text.replace("*/", "*\\/")),
        }
    }

    /// The name of the function a program of this language starts from,
    /// when the language has one: Java's `main` method. A Python program
    /// starts from a module (`__main__`), not a function.
    ///
    /// ```
    /// use repo_graph::Language;
    /// assert_eq!(Language::Java.main_function(), Some("main"));
    /// assert_eq!(Language::Python.main_function(), None);
    /// ```
    pub fn main_function(self) -> Option<&'static str> {
        match self {
            Language::Python => None,
            Language::Java => Some("main"),
        }
    }

    /// Role names that the language's application frameworks give their
    /// central types by convention, lowercase (Spring and Jakarta EE name
    /// classes `…Controller`, `…Service`, `…Repository`, `…Application`,
    /// `…Resource`). Empty when the language has no such convention.
    ///
    /// ```
    /// use repo_graph::Language;
    /// assert!(Language::Java.role_names().contains(&"controller"));
    /// assert!(Language::Python.role_names().is_empty());
    /// ```
    pub fn role_names(self) -> &'static [&'static str] {
        match self {
            Language::Python => &[],
            Language::Java => &[
                "controller",
                "service",
                "repository",
                "application",
                "resource",
            ],
        }
    }
}

impl Module {
    /// The module's name as the language qualifies the code in it: the
    /// dotted module name for Python (`pkg.mod`); for Java the package and
    /// the unit's primary type (`com.example.App`), without the `.java`
    /// that keeps the unit's name apart from the type's.
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # std::fs::create_dir_all(dir.path().join("pkg")).map_err(repo_graph::Error::Io)?;
    /// # std::fs::write(dir.path().join("pkg/mod.py"), "").map_err(repo_graph::Error::Io)?;
    /// # std::fs::write(dir.path().join("App.java"), "package com.example;\nclass App {}\n").map_err(repo_graph::Error::Io)?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let names: Vec<&str> = graph.modules().iter().map(|m| m.dotted_name()).collect();
    /// assert!(names.contains(&"pkg.mod"));
    /// assert!(names.contains(&"com.example.App"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dotted_name(&self) -> &str {
        match self.language {
            Language::Python => &self.name,
            Language::Java => self.name.strip_suffix(".java").unwrap_or(&self.name),
        }
    }

    /// The last part of [`Module::dotted_name`]: `mod` for `pkg.mod`,
    /// `App` for `com.example.App.java`.
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # std::fs::write(dir.path().join("App.java"), "package com.example;\nclass App {}\n").map_err(repo_graph::Error::Io)?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// assert_eq!(graph.modules()[0].short_name(), "App");
    /// # Ok(())
    /// # }
    /// ```
    pub fn short_name(&self) -> &str {
        let name = self.dotted_name();
        name.rsplit('.').next().unwrap_or(name)
    }
}

/// The lines that stand for an entity whose body is not shown, from
/// [`RepoGraph::outline`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outline {
    /// The lines, unindented: the declaration, and around it the first
    /// line of the documentation and, for a function, the elided body,
    /// where the language puts them.
    pub lines: Vec<String>,
    /// Which of `lines` is the declaration (the line the entity starts on).
    pub declaration: usize,
}

impl RepoGraph {
    /// The language of the module that holds `entity` (Python for an
    /// unknown id).
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # std::fs::write(dir.path().join("App.java"), "class App { void run() {} }\n").map_err(repo_graph::Error::Io)?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let run = graph.entity("App.run").expect("defined");
    /// assert_eq!(graph.language_of(run), repo_graph::Language::Java);
    /// # Ok(())
    /// # }
    /// ```
    pub fn language_of(&self, entity: EntityId) -> Language {
        self.module_of(entity)
            .and_then(|m| self.module(m))
            .map_or(Language::Python, |m| m.language)
    }

    /// Short human label of an entity, e.g. `def run(self, x)` or `class A(B)`;
    /// for Java `class App extends Base implements Runnable` or
    /// `static String greet(String name) throws IOException` (only the
    /// modifiers that change how it is called). [`RepoGraph::declaration`]
    /// gives the declaration in full.
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # std::fs::write(dir.path().join("m.py"), "async def fetch(url: str, *, retries=3) -> bytes:\n    pass\n").map_err(repo_graph::Error::Io)?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let fetch = graph.entity("m.fetch").expect("defined");
    /// assert_eq!(graph.signature(fetch), "async def fetch(url: str, *, retries=3) -> bytes");
    /// # Ok(())
    /// # }
    /// ```
    pub fn signature(&self, entity: EntityId) -> String {
        match entity {
            EntityId::Module(m) => self.module(m).map_or_else(String::new, |m| m.name.clone()),
            EntityId::Class(c) => self.class(c).map_or_else(String::new, |c| {
                if c.java().is_some() {
                    return java_class_signature(c);
                }
                let bases: Vec<&str> = c.bases.iter().map(|b| b.text.as_str()).collect();
                if bases.is_empty() {
                    format!("class {}", c.name)
                } else {
                    format!("class {}({})", c.name, bases.join(", "))
                }
            }),
            EntityId::Function(f) => self.function(f).map_or_else(String::new, |f| {
                if f.java().is_some() {
                    java_method_signature(f, self.class_name_of(f), false)
                } else {
                    function_signature(f)
                }
            }),
        }
    }

    /// How a Python function or class is called under `name` (the name
    /// a package exports it as): `name(params) -> returns` for a function,
    /// without the `self` or `cls` of a method; `name(params)` of the
    /// `__init__` found through the MRO for a class (`name()` without
    /// one). Other entities, and Java's, give their
    /// [`RepoGraph::signature`].
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).map_err(repo_graph::Error::Io);
    /// write("m.py", "def extract(text, *, url=None) -> str:\n    pass\n\nclass Base:\n    def __init__(self, path: str):\n        pass\n\nclass Reader(Base):\n    pass\n")?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let call = |q: &str, name: &str| graph.call_signature(graph.entity(q).expect("defined"), name);
    /// assert_eq!(call("m.extract", "pkg.extract"), "pkg.extract(text, *, url=None) -> str");
    /// assert_eq!(call("m.Reader", "Reader"), "Reader(path: str)");
    /// # Ok(())
    /// # }
    /// ```
    pub fn call_signature(&self, entity: EntityId, name: &str) -> String {
        if self.language_of(entity) != Language::Python {
            return self.signature(entity);
        }
        let mut out = name.to_string();
        match entity {
            EntityId::Function(f) => {
                let Some(f) = self.function(f) else {
                    return self.signature(entity);
                };
                let skip = usize::from(matches!(
                    f.kind,
                    FunctionKind::Method | FunctionKind::ClassMethod
                ));
                write_parameters(
                    &mut out,
                    f.params.get(skip..).unwrap_or(&[]),
                    f.returns.as_deref(),
                );
            }
            EntityId::Class(c) => {
                let init = self.mro(c).iter().find_map(|&k| {
                    self.class(k)?
                        .methods
                        .iter()
                        .find_map(|&m| self.function(m).filter(|f| f.name == "__init__"))
                });
                let params = init.map_or(&[][..], |f| f.params.get(1..).unwrap_or(&[]));
                write_parameters(&mut out, params, None);
            }
            EntityId::Module(_) => return self.signature(entity),
        }
        out
    }

    /// The declaration of a class or function as its language writes it,
    /// without decorators, annotations and body: for Python `def`/`async
    /// def` with parameters, return annotation and the closing `:`, or
    /// `class X(Bases):`; for Java every modifier, the type parameters,
    /// return type, name, parameter types and names and `throws` clause,
    /// or the modifiers, kind, name, type parameters and supertypes of a
    /// type. A module gives its name.
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).map_err(repo_graph::Error::Io);
    /// write("m.py", "class Repo(Base):\n    def get(self, key: str = 'a') -> bytes:\n        pass\n")?;
    /// write("Repo.java", "public final class Repo<T> extends Base implements Store {\n  public static <K> T get(K key, int... more) throws IOException { return null; }\n}\n")?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let declaration = |q: &str| graph.declaration(graph.entity(q).expect("defined"));
    /// assert_eq!(declaration("m.Repo"), "class Repo(Base):");
    /// assert_eq!(declaration("m.Repo.get"), "def get(self, key: str = 'a') -> bytes:");
    /// assert_eq!(declaration("Repo"), "public final class Repo<T> extends Base implements Store");
    /// assert_eq!(
    ///     declaration("Repo.get"),
    ///     "public static <K> T get(K key, int... more) throws IOException"
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn declaration(&self, entity: EntityId) -> String {
        match entity {
            EntityId::Module(_) => self.signature(entity),
            EntityId::Class(c) => {
                self.class(c)
                    .map_or_else(String::new, |class| match class.java() {
                        Some(java) if !java.anonymous => {
                            let mut out = modifiers(&java.modifiers);
                            out.push_str(&java_class_signature(class));
                            out
                        }
                        Some(_) => java_class_signature(class),
                        None => format!("{}:", self.signature(entity)),
                    })
            }
            EntityId::Function(f) => self.function(f).map_or_else(String::new, |function| {
                if function.java().is_some() {
                    java_method_signature(function, self.class_name_of(function), true)
                } else {
                    format!("{}:", function_signature(function))
                }
            }),
        }
    }

    /// The lines that stand for a class or function whose body is not
    /// shown: its [`RepoGraph::declaration`], the first line of its
    /// documentation, and for a function its body elided with `note` (for
    /// example the lines it spans), each where the language puts it.
    /// Python keeps the docstring and `...  # note` under the `def`; Java
    /// puts the Javadoc above and ends the declaration with `;  // note`
    /// (just `;` for a method without a body, which has nothing to elide).
    /// A class's members are not included: they are entities of their own.
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).map_err(repo_graph::Error::Io);
    /// write("m.py", "def run(x):\n    \"\"\"Runs it.\"\"\"\n    return x\n")?;
    /// write("App.java", "class App {\n  /** Runs it. */\n  int run(int x) { return x; }\n}\n")?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let python = graph.outline(graph.entity("m.run").expect("defined"), "body elided");
    /// assert_eq!(python.lines, ["def run(x):", "    \"\"\"Runs it.\"\"\"", "    ...  # body elided"]);
    /// assert_eq!(python.declaration, 0);
    /// let java = graph.outline(graph.entity("App.run").expect("defined"), "body elided");
    /// assert_eq!(java.lines, ["/** Runs it. */", "int run(int x);  // body elided"]);
    /// assert_eq!(java.declaration, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn outline(&self, entity: EntityId, note: &str) -> Outline {
        let language = self.language_of(entity);
        let declaration = self.declaration(entity);
        let (doc, function) = match entity {
            EntityId::Class(c) => (self.class(c).and_then(|c| c.docstring.as_deref()), false),
            EntityId::Function(f) => (self.function(f).and_then(|f| f.docstring.as_deref()), true),
            EntityId::Module(_) => (None, false),
        };
        let doc = doc
            .and_then(|d| d.lines().next())
            .map(|d| language.doc_comment(d));
        let comment = language.line_comment();
        match language {
            Language::Python => {
                let mut lines = vec![declaration];
                lines.extend(doc.map(|d| format!("    {d}")));
                if function {
                    lines.push(format!("    ...  {comment} {note}"));
                }
                Outline {
                    lines,
                    declaration: 0,
                }
            }
            Language::Java => {
                let has_body = match entity {
                    EntityId::Function(f) => self
                        .function(f)
                        .and_then(|f| f.java())
                        .is_some_and(|j| j.has_body),
                    _ => false,
                };
                let mut lines: Vec<String> = doc.into_iter().collect();
                let at = lines.len();
                lines.push(match (function, has_body) {
                    (true, true) => format!("{declaration};  {comment} {note}"),
                    (true, false) => format!("{declaration};"),
                    (false, _) => declaration,
                });
                Outline {
                    lines,
                    declaration: at,
                }
            }
        }
    }

    /// A class as its language would declare it with every body elided:
    /// its documentation, decorators or annotations, declaration, and the
    /// declarations of its members with the lines their bodies span.
    /// Python: `class X(Bases):`, the docstring's first paragraph, each
    /// method's decorators and `def` with `...`, nested classes on one
    /// line. Java: the Javadoc's first paragraph, annotations,
    /// `class X extends Y implements Z {`, enum constants, fields, each
    /// method's annotations and declaration ending in `;`, nested types
    /// on one line, and `}`. Empty for an unknown id.
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).map_err(repo_graph::Error::Io);
    /// write("Counter.java", "/** Counts. */\n@Component\npublic class Counter implements Runnable {\n  private int count;\n  @Override\n  public void run() {\n    count++;\n  }\n}\n")?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let Some(repo_graph::EntityId::Class(counter)) = graph.entity("Counter") else { panic!() };
    /// assert_eq!(
    ///     graph.class_skeleton(counter),
    ///     "/** Counts. */\n@Component\npublic class Counter implements Runnable {\n    private int count;\n    @Override\n    public void run();  // body elided: lines 5-8\n}"
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn class_skeleton(&self, class: ClassId) -> String {
        let Some(c) = self.class(class) else {
            return String::new();
        };
        if c.java().is_some() {
            self.java_skeleton(class, c)
        } else {
            self.python_skeleton(class, c)
        }
    }

    /// Whether a function is part of its module's public interface: for
    /// Python, neither it nor its class is `_private` (dunder methods are
    /// public) and it is not nested in a function; for Java, it is
    /// declared `public` or is a member of an interface.
    ///
    /// ```
    /// # fn main() -> Result<(), repo_graph::Error> {
    /// # let dir = tempfile::tempdir().map_err(repo_graph::Error::Io)?;
    /// # let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).map_err(repo_graph::Error::Io);
    /// write("m.py", "def api():\n    pass\n\ndef _helper():\n    pass\n")?;
    /// write("Api.java", "interface Api { void call(); }\nclass Impl { public void call() {} void helper() {} }\n")?;
    /// let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
    /// let public = |q: &str| match graph.entity(q) {
    ///     Some(repo_graph::EntityId::Function(f)) => graph.is_public(f),
    ///     _ => panic!("{q} is not a function"),
    /// };
    /// assert!(public("m.api") && !public("m._helper"));
    /// assert!(public("Api.call") && public("Impl.call") && !public("Impl.helper"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_public(&self, function: FunctionId) -> bool {
        let Some(f) = self.function(function) else {
            return false;
        };
        if let Some(java) = f.java() {
            // Interface members are public without saying so.
            let in_interface = match f.parent {
                EntityId::Class(c) => self
                    .class(c)
                    .is_some_and(|c| c.java().is_some_and(|j| j.kind == JavaTypeKind::Interface)),
                _ => false,
            };
            return in_interface || java.modifiers.contains(&Modifier::Public);
        }
        if f.name.starts_with('_') && !(f.name.starts_with("__") && f.name.ends_with("__")) {
            return false;
        }
        match f.parent {
            EntityId::Class(c) => self.class(c).is_some_and(|c| !c.name.starts_with('_')),
            EntityId::Module(_) => true,
            EntityId::Function(_) => false,
        }
    }

    fn class_name_of(&self, f: &Function) -> Option<&str> {
        match f.parent {
            EntityId::Class(c) => self.class(c).map(|c| c.name.as_str()),
            _ => None,
        }
    }

    fn python_skeleton(&self, id: ClassId, class: &Class) -> String {
        let mut out = String::new();
        for d in &class.decorators {
            let _ = writeln!(out, "@{d}");
        }
        let _ = writeln!(out, "{}", self.declaration(EntityId::Class(id)));
        if let Some(doc) = &class.docstring {
            let first = first_paragraph(doc).replace("\"\"\"", "'''");
            let _ = writeln!(out, "    \"\"\"{first}\"\"\"");
        }
        for child in self.children(EntityId::Class(id)) {
            match child {
                EntityId::Function(f) => {
                    let Some(function) = self.function(*f) else {
                        continue;
                    };
                    for d in &function.decorators {
                        let _ = writeln!(out, "    @{d}");
                    }
                    let _ = write!(
                        out,
                        "    {} ...  # body elided: lines {}-{}",
                        self.declaration(*child),
                        function.span.start_line,
                        function.span.end_line
                    );
                    if let Some(doc) = function.docstring.as_deref().and_then(|d| d.lines().next())
                    {
                        let _ = write!(out, "; {doc}");
                    }
                    out.push('\n');
                }
                EntityId::Class(c) => {
                    let Some(nested) = self.class(*c) else {
                        continue;
                    };
                    let _ = writeln!(
                        out,
                        "    {} ...  # nested class elided: lines {}-{}",
                        self.declaration(*child),
                        nested.span.start_line,
                        nested.span.end_line
                    );
                }
                EntityId::Module(_) => {}
            }
        }
        out.trim_end().to_string()
    }

    fn java_skeleton(&self, id: ClassId, class: &Class) -> String {
        let Some(java) = class.java() else {
            return String::new();
        };
        let mut out = String::new();
        if let Some(doc) = &class.docstring {
            let _ = writeln!(out, "{}", Language::Java.doc_comment(&first_paragraph(doc)));
        }
        for a in &class.decorators {
            let _ = writeln!(out, "@{a}");
        }
        let _ = writeln!(out, "{} {{", self.declaration(EntityId::Class(id)));
        // Record components are in the declaration; enum constants come first.
        let components = if java.kind == JavaTypeKind::Record {
            java.fields
                .iter()
                .take_while(|f| f.modifiers.is_empty())
                .count()
        } else {
            0
        };
        let is_constant = |f: &crate::model::JavaField| {
            java.kind == JavaTypeKind::Enum && f.type_text == class.name && f.modifiers.is_empty()
        };
        let constants: Vec<String> = java
            .fields
            .iter()
            .filter(|f| is_constant(f))
            .map(|f| {
                let mut text = String::new();
                for a in &f.annotations {
                    let _ = write!(text, "@{a} ");
                }
                text.push_str(&f.name);
                text
            })
            .collect();
        if !constants.is_empty() {
            let _ = writeln!(out, "    {};", constants.join(", "));
        }
        for field in java
            .fields
            .iter()
            .skip(components)
            .filter(|f| !is_constant(f))
        {
            out.push_str("    ");
            for a in &field.annotations {
                let _ = write!(out, "@{a} ");
            }
            out.push_str(&modifiers(&field.modifiers));
            let _ = writeln!(out, "{} {};", field.type_text, field.name);
        }
        for child in self.children(EntityId::Class(id)) {
            match child {
                EntityId::Function(f) => {
                    let Some(function) = self.function(*f) else {
                        continue;
                    };
                    for a in &function.decorators {
                        let _ = writeln!(out, "    @{a}");
                    }
                    let has_body = function.java().is_some_and(|j| j.has_body);
                    let _ = write!(out, "    {};", self.declaration(*child));
                    let doc = function.docstring.as_deref().and_then(|d| d.lines().next());
                    match (has_body, doc) {
                        (true, doc) => {
                            let _ = write!(
                                out,
                                "  // body elided: lines {}-{}",
                                function.span.start_line, function.span.end_line
                            );
                            if let Some(doc) = doc {
                                let _ = write!(out, "; {doc}");
                            }
                        }
                        (false, Some(doc)) => {
                            let _ = write!(out, "  // {doc}");
                        }
                        (false, None) => {}
                    }
                    out.push('\n');
                }
                EntityId::Class(c) => {
                    let Some(nested) = self.class(*c) else {
                        continue;
                    };
                    // Enum constant bodies are listed with the constants.
                    if nested.java().is_some_and(|j| j.anonymous) {
                        continue;
                    }
                    let _ = writeln!(
                        out,
                        "    {} {{ ... }}  // nested {} elided: lines {}-{}",
                        self.declaration(*child),
                        nested
                            .java()
                            .map_or("type", |j| j.kind.keyword().trim_start_matches('@')),
                        nested.span.start_line,
                        nested.span.end_line
                    );
                }
                EntityId::Module(_) => {}
            }
        }
        out.push('}');
        out
    }
}

/// Modifier keywords in source order, each followed by a space.
fn modifiers(modifiers: &[Modifier]) -> String {
    let mut out = String::new();
    for m in modifiers {
        out.push_str(m.keyword());
        out.push(' ');
    }
    out
}

fn first_paragraph(doc: &str) -> String {
    doc.split("\n\n").next().unwrap_or("").to_string()
}

fn java_class_signature(c: &Class) -> String {
    let Some(java) = c.java() else {
        return String::new();
    };
    if java.anonymous {
        // Whether an anonymous class extends or implements an outside type is unknown.
        let of: Vec<&str> = c.bases.iter().map(|b| b.text.as_str()).collect();
        return if c.name.starts_with('$') {
            format!("anonymous class {}: new {}() {{…}}", c.name, of.join(", "))
        } else {
            format!("enum constant {} {{…}}", c.name)
        };
    }
    let mut out = format!("{} {}", java.kind.keyword(), c.name);
    if !java.type_parameters.is_empty() {
        let _ = write!(out, "<{}>", java.type_parameters.join(", "));
    }
    if java.kind == JavaTypeKind::Record {
        let components: Vec<String> = java
            .fields
            .iter()
            .take_while(|f| f.modifiers.is_empty())
            .map(|f| format!("{} {}", f.type_text, f.name))
            .collect();
        let _ = write!(out, "({})", components.join(", "));
    }
    for (relation, keyword) in [
        (BaseRelation::Extends, "extends"),
        (BaseRelation::Implements, "implements"),
    ] {
        let bases: Vec<&str> = c
            .bases
            .iter()
            .filter(|b| b.relation == relation)
            .map(|b| b.text.as_str())
            .collect();
        if !bases.is_empty() {
            let _ = write!(out, " {keyword} {}", bases.join(", "));
        }
    }
    out
}

/// A Java method or constructor: with `all_modifiers`, every modifier as
/// written; else only those that change how it is called.
fn java_method_signature(f: &Function, class_name: Option<&str>, all_modifiers: bool) -> String {
    let mut out = String::new();
    if let Some(java) = f.java() {
        for modifier in &java.modifiers {
            if all_modifiers
                || matches!(
                    modifier,
                    Modifier::Static | Modifier::Abstract | Modifier::Default
                )
            {
                out.push_str(modifier.keyword());
                out.push(' ');
            }
        }
        if !java.type_parameters.is_empty() {
            let _ = write!(out, "<{}> ", java.type_parameters.join(", "));
        }
    }
    if f.kind == FunctionKind::Constructor {
        out.push_str(class_name.unwrap_or(&f.name));
    } else {
        if let Some(returns) = &f.returns {
            out.push_str(returns);
            out.push(' ');
        }
        out.push_str(&f.name);
    }
    out.push('(');
    let params: Vec<String> = f
        .params
        .iter()
        .map(|p| match &p.annotation {
            Some(ty) => format!("{ty} {}", p.name),
            None => p.name.clone(),
        })
        .collect();
    out.push_str(&params.join(", "));
    out.push(')');
    if let Some(java) = f.java()
        && !java.throws.is_empty()
    {
        let _ = write!(out, " throws {}", java.throws.join(", "));
    }
    out
}

fn function_signature(f: &Function) -> String {
    let mut out = String::new();
    if f.is_async {
        out.push_str("async ");
    }
    out.push_str("def ");
    out.push_str(&f.name);
    write_parameters(&mut out, &f.params, f.returns.as_deref());
    out
}

/// `(params) -> returns`, as Python writes them.
fn write_parameters(out: &mut String, params: &[Param], returns: Option<&str>) {
    out.push('(');
    let mut star_written = false;
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match p.kind {
            ParamKind::VarPositional => {
                out.push('*');
                star_written = true;
            }
            ParamKind::VarKeyword => out.push_str("**"),
            ParamKind::KeywordOnly if !star_written => {
                out.push_str("*, ");
                star_written = true;
            }
            _ => {}
        }
        out.push_str(&p.name);
        if let Some(a) = &p.annotation {
            let _ = write!(out, ": {a}");
        }
        if let Some(d) = &p.default {
            out.push_str(if p.annotation.is_some() { " = " } else { "=" });
            out.push_str(d);
        }
    }
    out.push(')');
    if let Some(r) = returns {
        let _ = write!(out, " -> {r}");
    }
}
