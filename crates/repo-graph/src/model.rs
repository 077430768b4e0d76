//! The typed facts of a repository: modules, classes, functions, imports.
//!
//! Every entity is a small plain struct with serde derives. Entities refer to
//! each other by index ([`ModuleId`], [`ClassId`], [`FunctionId`]) into the
//! vectors of [`crate::RepoGraph`]; text is kept once per module and sliced by
//! [`Span`] when needed.

use serde::{Deserialize, Serialize};

/// A region of a source file: a byte range plus 1-based inclusive line numbers
/// for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Span {
    /// First byte of the region.
    pub start_byte: u32,
    /// One past the last byte of the region.
    pub end_byte: u32,
    /// 1-based line of the first byte.
    pub start_line: u32,
    /// 1-based line of the last byte.
    pub end_line: u32,
}

impl Span {
    /// Number of lines the region covers.
    pub fn line_count(&self) -> u32 {
        self.end_line.saturating_sub(self.start_line) + 1
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub(crate) u32);

        impl $name {
            /// The index of this entity in its vector of the graph.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// Index of a [`Module`] in [`crate::RepoGraph::modules`].
    ModuleId
);
id_type!(
    /// Index of a [`Class`] in [`crate::RepoGraph::classes`].
    ClassId
);
id_type!(
    /// Index of a [`Function`] in [`crate::RepoGraph::functions`].
    FunctionId
);

/// Any entity of the graph. Also the node type of the function call graph,
/// where a module stands for its module-level code and a class for a class
/// that is instantiated but defines no `__init__`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
// Exhaustive on purpose: the three kinds of entity are the model itself
// (seed 001's HCT levels), and every user matches on them.
pub enum EntityId {
    /// A module (one source file).
    Module(ModuleId),
    /// A class.
    Class(ClassId),
    /// A function or method.
    Function(FunctionId),
}

/// What kind of file a module was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceKind {
    /// A `.py` file.
    Python,
    /// A `.pyi` stub file.
    Stub,
    /// The code cells of a `.ipynb` notebook, joined in order.
    Notebook,
    /// A `.java` compilation unit.
    Java,
}

impl SourceKind {
    /// The programming language of files of this kind.
    pub fn language(self) -> Language {
        match self {
            SourceKind::Python | SourceKind::Stub | SourceKind::Notebook => Language::Python,
            SourceKind::Java => Language::Java,
        }
    }
}

/// A programming language the analysis understands.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Language {
    /// Python: `.py`, `.pyi` and notebooks.
    #[default]
    Python,
    /// Java: `.java`.
    Java,
}

impl Language {
    /// Every language, in a stable order.
    pub const ALL: [Language; 2] = [Language::Python, Language::Java];

    /// Whether this build analyses the language (its cargo feature,
    /// `python` or `java`, is on; both are by default).
    pub fn is_built(self) -> bool {
        match self {
            Language::Python => cfg!(feature = "python"),
            Language::Java => cfg!(feature = "java"),
        }
    }

    /// The languages this build analyses, in [`Language::ALL`]'s order.
    pub fn built() -> Vec<Language> {
        Language::ALL.into_iter().filter(|l| l.is_built()).collect()
    }

    /// The lowercase name used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Java => "java",
        }
    }
}

/// Branch and nesting counts used as a complexity measure (seed 001, appendix F).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Complexity {
    /// Python: count of `if`, `elif`, `for`, `while`, `except`,
    /// comprehensions and `match` cases. Java: `if`, `for`, enhanced `for`,
    /// `while`, `do`, `catch`, `case` labels and ternaries.
    pub branches: u32,
    /// Deepest block nesting at which a definition appears (Python: a `def`;
    /// Java: a method or type, counting bodies and blocks).
    pub max_def_depth: u32,
}

/// One source file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Module {
    /// Unique dotted module name. Python: derived from the layout, e.g.
    /// `pkg.sub.mod`. Java: the declared package plus the file name, e.g.
    /// `com.example.App.java` (see `docs/GRAPH_SCHEMA.md`).
    pub name: String,
    /// Path relative to the analysed root, with `/` separators.
    pub path: String,
    /// File kind.
    pub kind: SourceKind,
    /// The language of the file (follows from `kind`; spelled out for JSON readers).
    #[serde(default)]
    pub language: Language,
    /// Java: the package the compilation unit declares (`None` for the
    /// default package). Always `None` for Python, whose packages follow
    /// from `name`.
    #[serde(default)]
    pub package: Option<String>,
    /// True for a package's `__init__` module.
    pub is_package: bool,
    /// The module docstring, cleaned of indentation.
    pub docstring: Option<String>,
    /// Number of lines of the (extracted) source.
    pub line_count: u32,
    /// Size of the (extracted) source in bytes.
    pub byte_len: u32,
    /// Imports in source order, one entry per imported name.
    pub imports: Vec<Import>,
    /// Branch and nesting counts over the whole file.
    pub complexity: Complexity,
    /// The parser reported syntax errors; the facts cover what the tree allowed.
    pub has_syntax_errors: bool,
    /// The file was not valid UTF-8 and was decoded lossily.
    pub lossy_utf8: bool,
    /// Names listed in a literal `__all__`, when the module defines one.
    pub all: Option<Vec<String>>,
    /// 128-bit xxh3 hash of the file's bytes, as hex.
    pub content_hash: String,
}

/// A class definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Class {
    /// The class name.
    pub name: String,
    /// Qualified name, e.g. `pkg.mod.Outer.Inner`.
    pub qualname: String,
    /// The module that defines it.
    pub module: ModuleId,
    /// The enclosing module, class or function.
    pub parent: EntityId,
    /// Base classes as written and, when internal, as resolved.
    pub bases: Vec<Base>,
    /// Decorators as written, without the `@`.
    pub decorators: Vec<String>,
    /// The class docstring.
    pub docstring: Option<String>,
    /// Functions defined directly in the class body, in source order.
    pub methods: Vec<FunctionId>,
    /// The whole definition including decorators.
    pub span: Span,
    /// What only the class's language says about it: for Java, its kind,
    /// modifiers, type parameters and fields ([`Class::java`]).
    pub detail: ClassDetail,
}

impl Class {
    /// The Java details, for a Java type.
    pub fn java(&self) -> Option<&JavaType> {
        match &self.detail {
            ClassDetail::Java(java) => Some(java),
            ClassDetail::Python => None,
        }
    }
}

/// The language-specific part of a [`Class`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClassDetail {
    /// A Python class: everything it has is on [`Class`].
    Python,
    /// A Java class, interface, enum, record or annotation type.
    Java(JavaType),
}

/// A base class of a [`Class`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Base {
    /// The base expression as written, e.g. `models.Model` or `List<String>`.
    pub text: String,
    /// The internal class it resolves to, if any.
    pub resolved: Option<ClassId>,
    /// How the class relates to it.
    #[serde(default)]
    pub relation: BaseRelation,
}

/// How a [`Class`] relates to one of its [`Base`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BaseRelation {
    /// A Python base class.
    #[default]
    Inherits,
    /// Java `extends` (a class's superclass, an interface's superinterfaces,
    /// the type an anonymous class instantiates when it is a class).
    Extends,
    /// Java `implements` (also the interface an anonymous class instantiates).
    Implements,
}

/// What sort of Java type declaration a [`Class`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum JavaTypeKind {
    /// `class`, including anonymous classes and enum constant bodies.
    Class,
    /// `interface`.
    Interface,
    /// `enum`.
    Enum,
    /// `record`.
    Record,
    /// `@interface`.
    Annotation,
}

impl JavaTypeKind {
    /// The declaration keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            JavaTypeKind::Class => "class",
            JavaTypeKind::Interface => "interface",
            JavaTypeKind::Enum => "enum",
            JavaTypeKind::Record => "record",
            JavaTypeKind::Annotation => "@interface",
        }
    }
}

/// A Java modifier keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Modifier {
    /// `public`.
    Public,
    /// `protected`.
    Protected,
    /// `private`.
    Private,
    /// `abstract`.
    Abstract,
    /// `static`.
    Static,
    /// `final`.
    Final,
    /// `strictfp`.
    Strictfp,
    /// `default` (an interface method with a body).
    Default,
    /// `synchronized`.
    Synchronized,
    /// `native`.
    Native,
    /// `transient`.
    Transient,
    /// `volatile`.
    Volatile,
    /// `sealed`.
    Sealed,
    /// `non-sealed`.
    NonSealed,
}

impl Modifier {
    /// Parses a modifier keyword as written.
    pub fn from_keyword(word: &str) -> Option<Modifier> {
        Some(match word {
            "public" => Modifier::Public,
            "protected" => Modifier::Protected,
            "private" => Modifier::Private,
            "abstract" => Modifier::Abstract,
            "static" => Modifier::Static,
            "final" => Modifier::Final,
            "strictfp" => Modifier::Strictfp,
            "default" => Modifier::Default,
            "synchronized" => Modifier::Synchronized,
            "native" => Modifier::Native,
            "transient" => Modifier::Transient,
            "volatile" => Modifier::Volatile,
            "sealed" => Modifier::Sealed,
            "non-sealed" => Modifier::NonSealed,
            _ => return None,
        })
    }

    /// The keyword as written in source.
    pub fn keyword(self) -> &'static str {
        match self {
            Modifier::Public => "public",
            Modifier::Protected => "protected",
            Modifier::Private => "private",
            Modifier::Abstract => "abstract",
            Modifier::Static => "static",
            Modifier::Final => "final",
            Modifier::Strictfp => "strictfp",
            Modifier::Default => "default",
            Modifier::Synchronized => "synchronized",
            Modifier::Native => "native",
            Modifier::Transient => "transient",
            Modifier::Volatile => "volatile",
            Modifier::Sealed => "sealed",
            Modifier::NonSealed => "non-sealed",
        }
    }
}

/// Java details of a [`Class`]. Annotations are in [`Class::decorators`],
/// supertypes in [`Class::bases`], the Javadoc in [`Class::docstring`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JavaType {
    /// Declaration kind.
    pub kind: JavaTypeKind,
    /// Modifiers in source order.
    pub modifiers: Vec<Modifier>,
    /// Type parameters as written, e.g. `T extends Comparable<T>`.
    pub type_parameters: Vec<String>,
    /// Fields, enum constants and record components, in source order.
    pub fields: Vec<JavaField>,
    /// An anonymous class (`new T() { ... }` or an enum constant body); its
    /// name is `$N`, numbered within its enclosing entity.
    pub anonymous: bool,
}

/// A field, enum constant or record component of a Java type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JavaField {
    /// The field name.
    pub name: String,
    /// The declared type as written (the enum's name for an enum constant).
    #[serde(rename = "type")]
    pub type_text: String,
    /// Modifiers in source order.
    pub modifiers: Vec<Modifier>,
    /// Annotations as written, without the `@`.
    pub annotations: Vec<String>,
    /// 1-based line of the declaration.
    pub line: u32,
}

/// Java details of a [`Function`] (a method or constructor). Annotations are
/// in [`Function::decorators`], parameter types in [`Param::annotation`], the
/// return type in [`Function::returns`], the Javadoc in [`Function::docstring`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JavaMethod {
    /// Modifiers in source order.
    pub modifiers: Vec<Modifier>,
    /// Type parameters as written, e.g. `T extends Number`.
    pub type_parameters: Vec<String>,
    /// Exception types of the `throws` clause, as written.
    pub throws: Vec<String>,
    /// The declaration has a body (false for abstract and interface methods).
    pub has_body: bool,
}

/// Whether a function is a plain function or one of the method flavours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FunctionKind {
    /// Defined in a module or another function.
    Function,
    /// Defined in a class body.
    Method,
    /// A method decorated with `@staticmethod`.
    StaticMethod,
    /// A method decorated with `@classmethod`.
    ClassMethod,
    /// A Java constructor (named `<init>`).
    Constructor,
}

/// A function or method definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Function {
    /// The function name.
    pub name: String,
    /// Qualified name, e.g. `pkg.mod.Class.method` or `pkg.mod.outer.inner`.
    pub qualname: String,
    /// The module that defines it.
    pub module: ModuleId,
    /// The enclosing module, class or function.
    pub parent: EntityId,
    /// Plain function or method flavour.
    pub kind: FunctionKind,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// Return annotation as written.
    pub returns: Option<String>,
    /// Decorators as written, without the `@`.
    pub decorators: Vec<String>,
    /// Defined with `async def`.
    pub is_async: bool,
    /// The docstring.
    pub docstring: Option<String>,
    /// The whole definition including decorators.
    pub span: Span,
    /// Branch count inside the body and block depth of the `def`.
    pub complexity: Complexity,
    /// What only the function's language says about it: for Java, its
    /// modifiers, type parameters and `throws` ([`Function::java`]).
    pub detail: FunctionDetail,
}

impl Function {
    /// The Java details, for a Java method or constructor.
    pub fn java(&self) -> Option<&JavaMethod> {
        match &self.detail {
            FunctionDetail::Java(java) => Some(java),
            FunctionDetail::Python => None,
        }
    }
}

/// The language-specific part of a [`Function`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FunctionDetail {
    /// A Python function or method: everything it has is on [`Function`].
    Python,
    /// A Java method or constructor.
    Java(JavaMethod),
}

/// How a parameter receives its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ParamKind {
    /// An ordinary parameter (positional or keyword).
    Normal,
    /// `*args`.
    VarPositional,
    /// `**kwargs`.
    VarKeyword,
    /// A parameter after `*` or `*args`.
    KeywordOnly,
}

/// One parameter of a [`Function`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Param {
    /// Parameter name (empty for a tuple pattern).
    pub name: String,
    /// How it receives its argument.
    pub kind: ParamKind,
    /// Annotation as written.
    pub annotation: Option<String>,
    /// Default value as written.
    pub default: Option<String>,
}

/// The syntactic form of an [`Import`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImportKind {
    /// `import a.b [as c]`.
    Import,
    /// `from m import n [as k]`; Java `import p.T;` and `import static p.T.m;`.
    From,
    /// `from m import *`; Java `import p.*;` and `import static p.T.*;`.
    Star,
}

/// One imported name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Import {
    /// Syntactic form.
    pub kind: ImportKind,
    /// The module path as written, without leading dots (may be empty for
    /// `from . import x`). Java: everything before the last dot (`p` for
    /// `import p.T;`, `p.T` for `import static p.T.m;` and for `import p.T.*;`).
    pub module: String,
    /// Number of leading dots of a relative import (0 for absolute).
    pub level: u32,
    /// The imported name for `from` imports (Java: the type or static member).
    pub name: Option<String>,
    /// The `as` alias.
    pub alias: Option<String>,
    /// 1-based line of the statement.
    pub line: u32,
    /// The import is inside a function body.
    pub in_function: bool,
    /// The import is inside a `try` statement (typically `except ImportError`).
    pub in_try: bool,
    /// What the import refers to.
    pub target: ImportTarget,
    /// A Java `import static`.
    #[serde(default)]
    pub is_static: bool,
}

/// What an [`Import`] refers to after resolution across the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImportTarget {
    /// An internal module.
    Module(ModuleId),
    /// An internal class.
    Class(ClassId),
    /// An internal function.
    Function(FunctionId),
    /// Some other name (a variable or constant) defined in an internal module.
    Attribute(ModuleId),
    /// A Java package with internal types (an on-demand `import p.*;`); the
    /// types it provides count in the module dependency graph as they are used.
    Package(String),
    /// Outside the repository; the absolute dotted name.
    External(String),
}

impl ImportTarget {
    /// The internal module this import depends on, if any.
    pub fn internal_module(&self, graph: &crate::RepoGraph) -> Option<ModuleId> {
        match self {
            ImportTarget::Module(m) | ImportTarget::Attribute(m) => Some(*m),
            ImportTarget::Class(c) => graph.classes.get(c.index()).map(|c| c.module),
            ImportTarget::Function(f) => graph.functions.get(f.index()).map(|f| f.module),
            ImportTarget::Package(_) | ImportTarget::External(_) => None,
        }
    }
}

/// A call that could not be resolved to an internal definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UnresolvedCall {
    /// The calling function or module.
    pub caller: EntityId,
    /// The callee expression as written, or the absolute name of an external target.
    pub callee: String,
    /// True when the callee is known to live outside the repository (an
    /// import of an external package or a builtin).
    pub external: bool,
    /// 1-based line of the call.
    pub line: u32,
}

/// Why a file was not analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// Not a source file (`.py`, `.pyi`, `.ipynb`, `.java`).
    NotSource,
    /// Larger than the configured maximum size.
    TooLarge,
    /// Contains NUL bytes in its first 8 KiB.
    Binary,
    /// Matched `.gitignore`, `.ignore` or `.git/info/exclude` (a pruned
    /// directory counts once).
    Ignored,
    /// A hidden file or directory (name starting with `.`); a pruned directory counts once.
    Hidden,
    /// A version-control, virtualenv, cache or build directory (counted once
    /// per directory); Maven's `target/` and Gradle's `build/` beside their
    /// build files count too.
    ToolDirectory,
    /// A symbolic link that leads back into one of its own ancestors.
    SymlinkLoop,
    /// A symbolic link whose target lies outside the analysed root.
    SymlinkOutsideRoot,
    /// The file or directory could not be read (permissions, vanished, I/O error).
    Unreadable,
    /// A notebook whose JSON could not be read.
    InvalidNotebook,
    /// A source file of a language left out with [`crate::Analyzer::languages`].
    OtherLanguage,
    /// Not a regular file: a named pipe, socket or device (reading one
    /// could block forever or never end).
    NotRegular,
    /// Not read because the analysis already held as much as
    /// [`crate::Analyzer::memory_ceiling`] allows.
    MemoryCeiling,
}

impl SkipReason {
    /// The snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::NotSource => "not_source",
            SkipReason::TooLarge => "too_large",
            SkipReason::Binary => "binary",
            SkipReason::Ignored => "ignored",
            SkipReason::Hidden => "hidden",
            SkipReason::ToolDirectory => "tool_directory",
            SkipReason::SymlinkLoop => "symlink_loop",
            SkipReason::SymlinkOutsideRoot => "symlink_outside_root",
            SkipReason::Unreadable => "unreadable",
            SkipReason::InvalidNotebook => "invalid_notebook",
            SkipReason::OtherLanguage => "other_language",
            SkipReason::NotRegular => "not_regular",
            SkipReason::MemoryCeiling => "memory_ceiling",
        }
    }
}

/// A file or directory that was not analysed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Skipped {
    /// Path relative to the root, with `/` separators.
    pub path: String,
    /// Why it was skipped.
    pub reason: SkipReason,
}

/// A per-file budget that bounds what one file can cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Budget {
    /// Brackets nested deeper than [`crate::MAX_NESTING`]: what lies
    /// deeper was not parsed.
    Nesting,
    /// Python indented deeper than [`crate::MAX_INDENT`] levels: the
    /// deeper lines were not parsed.
    Indentation,
    /// More facts than [`crate::MAX_FILE_FACTS`]: the rest of the file was
    /// parsed but not analysed.
    Facts,
}

impl Budget {
    /// The snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Budget::Nesting => "nesting",
            Budget::Indentation => "indentation",
            Budget::Facts => "facts",
        }
    }

    /// The budget's limit, in its unit (brackets, levels, fact units).
    pub fn limit(self) -> u64 {
        match self {
            Budget::Nesting => u64::from(crate::MAX_NESTING),
            Budget::Indentation => u64::from(crate::MAX_INDENT),
            Budget::Facts => crate::MAX_FILE_FACTS,
        }
    }
}

/// A file that was analysed only in part because it went over a
/// [`Budget`]: its module is in the graph with the facts found outside
/// the cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Partial {
    /// Path relative to the root, with `/` separators.
    pub path: String,
    /// The budget it went over.
    pub budget: Budget,
    /// The budget's limit ([`Budget::limit`]).
    pub limit: u64,
    /// 1-based line where the budget ran out.
    pub line: u32,
}
