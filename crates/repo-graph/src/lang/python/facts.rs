//! The facts one Python file tells about itself: definitions, imports,
//! name bindings and uses, call sites and the flow of values between them.
//!
//! Value flow is kept as [`ValueExpr`] trees over per-file indices (uses, call
//! sites, lambdas, container sites), so that the cross-file points-to
//! analysis in [`super::resolve`] can turn each into nodes and constraints
//! without looking at syntax again. Every name read records which bindings
//! of its scope can reach it ([`Reach`]), computed once per file
//! ([`super::reach`]): this is what makes `s = s.replace(...)` read the
//! previous `s` rather than itself.

use serde::{Deserialize, Serialize};

use crate::model::{Complexity, FunctionKind, ImportKind, Param, Span};

/// A lexical scope of a file: the module, or a class or function by local index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum ScopeRef {
    Module,
    Class(u32),
    Function(u32),
    /// A lambda's parameters; its body's calls belong to the enclosing function.
    Lambda(u32),
}

/// A name expression that can be evaluated during resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Expr {
    Name(String),
    Attr(Box<Expr>, String),
    /// The result of calling the inner expression.
    Call(Box<Expr>),
    /// `super()` (with or without arguments).
    Super,
    /// Anything else, as written (truncated).
    Other(String),
}

impl Expr {
    /// The expression as source-like text, for unresolved-call reports.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        match self {
            Expr::Name(n) => out.push_str(n),
            Expr::Attr(base, attr) => {
                base.render_into(out);
                out.push('.');
                out.push_str(attr);
            }
            Expr::Call(inner) => {
                inner.render_into(out);
                out.push_str("()");
            }
            Expr::Super => out.push_str("super()"),
            Expr::Other(text) => out.push_str(text),
        }
    }

    #[cfg(feature = "python")]
    /// Parses a dotted name such as `a.b.c`; `None` for anything else.
    pub(crate) fn dotted(text: &str) -> Option<Expr> {
        let mut parts = text.split('.');
        let first = parts.next().filter(|p| is_identifier(p))?;
        let mut expr = Expr::Name(first.to_string());
        for part in parts {
            if !is_identifier(part) {
                return None;
            }
            expr = Expr::Attr(Box::new(expr), part.to_string());
        }
        Some(expr)
    }
}

/// The name of integer key or position `index` (`[0]`), kept among a
/// file's names: no identifier is spelled alike.
#[cfg(feature = "python")]
pub(crate) fn position_name(index: u64) -> String {
    format!("[{index}]")
}

/// The position a name made by [`position_name`] stands for.
#[cfg(feature = "python")]
pub(crate) fn position_of(name: &str) -> Option<u64> {
    name.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// An import statement's imported name, before resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ImportFacts {
    pub kind: ImportKind,
    pub module: String,
    pub level: u32,
    pub name: Option<String>,
    pub alias: Option<String>,
    pub line: u32,
    pub scope: ScopeRef,
    pub in_try: bool,
}

/// What a Django `path(...)` entry routes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum UrlView {
    /// A view function (or class) as written.
    View(Expr),
    /// `ViewClass.as_view(...)`.
    AsView(Expr),
    /// `include("app.urls")`.
    Include(String),
    /// `include(app_urls_module)`.
    IncludeModule(Expr),
}

/// A web route declaration, or the wiring that gives routes a prefix, as
/// written in one file (Flask, FastAPI, Django).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RouteFacts {
    /// `@receiver.verb(path, methods=[...])` on the function with this index.
    Decorator {
        function: u32,
        receiver: Expr,
        verb: String,
        path: String,
        methods: Vec<String>,
        line: u32,
    },
    /// `name = Blueprint(..., url_prefix=...)`, `APIRouter(prefix=...)`,
    /// `Flask(...)` or `FastAPI(...)` at module level.
    Router {
        name: String,
        constructor: String,
        prefix: Option<String>,
    },
    /// `receiver.register_blueprint(router, url_prefix=...)` or
    /// `receiver.include_router(router, prefix=...)`.
    Mount {
        scope: ScopeRef,
        receiver: Expr,
        router: Expr,
        prefix: Option<String>,
    },
    /// One `path(route, view)` (or `re_path`, `url`) entry of a
    /// module-level `urlpatterns` list.
    UrlPattern {
        route: String,
        regex: bool,
        view: UrlView,
        line: u32,
    },
}

/// A value expression, as the points-to analysis evaluates it.
// `Union(Box<Vec<_>>)`: a bare vector would make every variant 24 bytes.
#[allow(clippy::box_collection)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ValueExpr {
    /// A read of a name: index into [`PythonFacts::uses`].
    Use(u32),
    /// `base.name` (a name id, see [`PythonFacts::names`]).
    Attr(Box<ValueExpr>, u32),
    /// The result of a call site: index into [`PythonFacts::calls`].
    Call(u32),
    /// An element of the value: subscript, iteration, unpacking, `next()`.
    Elem(Box<ValueExpr>),
    /// A list, tuple, set or dict display or comprehension.
    Container(Box<ContainerExpr>),
    /// The element at a literal key or index (`d["add"]`, `t[0]`, the
    /// first name of `a, b = t`), as a name id.
    ElemAt(Box<ValueExpr>, u32),
    /// `value[start:stop]` with literal bounds and no step: the same value
    /// (a slice of a list is a list of some of its elements), which
    /// [`super::keyed`] narrows to those elements when they are known.
    Slice(Box<SliceExpr>),
    /// A lambda: index into [`PythonFacts::lambdas`].
    Lambda(u32),
    /// The function defined by a `def` (before decorators apply).
    Function(u32),
    /// The class defined by a `class` statement (before decorators apply).
    Class(u32),
    /// An instance of the class the inner expression names (annotations,
    /// `except C as e`).
    Instance(Box<ValueExpr>),
    /// Either of the values (`a if c else b`, `a or b`). Boxed twice so
    /// that every variant fits in 16 bytes (see [`ValueExpr::union`]).
    Union(Box<Vec<ValueExpr>>),
    /// `super()` in the current method.
    Super,
    /// A string literal that an attribute is read from (`", ".join`): an
    /// instance of `builtins.str`.
    StrLiteral,
    /// `except C as e`: an instance of `C`, or of the subclasses of `C`
    /// that the program raises.
    Caught(Box<ValueExpr>),
    /// `super(C, obj)`: the class and the object.
    SuperOf(Box<(ValueExpr, ValueExpr)>),
    /// The value of a binding of this file (a hidden one for a value that
    /// several targets share, or a walrus).
    Ref(u32),
    /// A literal or anything the analysis does not follow.
    Unknown,
}

// Facts of every file stay in memory until the call graph is built, and
// value expressions are most of them: the boxed variants keep each one at
// two words (sympy's facts were 30 % larger at four).
const _: () = assert!(std::mem::size_of::<ValueExpr>() == 16);

impl ValueExpr {
    #[cfg(feature = "python")]
    /// Either of `parts`.
    pub(crate) fn union(parts: Vec<ValueExpr>) -> ValueExpr {
        ValueExpr::Union(Box::new(parts))
    }

    #[cfg(feature = "python")]
    /// A container display: its site index in the file and its element (for
    /// dicts: value) expressions, each with its literal key or index.
    pub(crate) fn container(site: u32, elements: Vec<(Option<u32>, ValueExpr)>) -> ValueExpr {
        ValueExpr::Container(Box::new(ContainerExpr {
            site,
            elements: elements.into_boxed_slice(),
        }))
    }
}

/// A slice with literal bounds: `value[start:stop]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SliceExpr {
    pub value: ValueExpr,
    pub start: u32,
    /// `None` for an open end (`value[1:]`).
    pub stop: Option<u32>,
}

/// A list, tuple, set or dict display or comprehension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ContainerExpr {
    /// Its site index in the file ([`PythonFacts::containers`] counts them).
    pub site: u32,
    /// The element (for dicts: value) expressions, each with its literal
    /// key or index (a name id) when it has one.
    pub elements: Box<[(Option<u32>, ValueExpr)]>,
}

/// The built-in type a container display or comprehension makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ContainerKind {
    List,
    Tuple,
    Dict,
    Set,
    /// A generator expression.
    Generator,
}

impl ContainerKind {
    /// The dotted name of the type (`builtins.dict`).
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            ContainerKind::List => "builtins.list",
            ContainerKind::Tuple => "builtins.tuple",
            ContainerKind::Dict => "builtins.dict",
            ContainerKind::Set => "builtins.set",
            ContainerKind::Generator => "builtins.generator",
        }
    }
}

/// What a name is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum BindValue {
    /// The value of an expression.
    Expr(ValueExpr),
    /// Index into [`PythonFacts::imports`].
    Import(u32),
    /// A parameter of the function or lambda whose scope holds the binding.
    Param {
        /// Position in the parameter list.
        position: u32,
        /// `*args` or `**kwargs`.
        star: bool,
        /// The annotation, as an instance of what it names.
        annotation: Option<ValueExpr>,
        /// The default value.
        default: Option<ValueExpr>,
    },
}

/// A name bound in a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Binding {
    pub scope: ScopeRef,
    /// Name id ([`PythonFacts::names`]); the empty name for hidden bindings.
    pub name: u32,
    pub value: BindValue,
}

/// Which bindings a read of a name can see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Reach {
    /// The name is bound in the reading scope and exactly this binding
    /// (an index into [`PythonFacts::bindings`]) reaches the read.
    One(u32),
    /// The name is bound in the reading scope; these bindings (indices into
    /// [`PythonFacts::bindings`]) can reach the read.
    Local(Vec<u32>),
    /// Bound in the reading scope, but too many bindings could reach the
    /// read to list: all of the scope's bindings of the name.
    AllLocal,
    /// Not bound in the reading scope: enclosing functions, then the module,
    /// star imports and builtins.
    Enclosing,
}

/// A read of a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Use {
    pub scope: ScopeRef,
    /// Name id ([`PythonFacts::names`]).
    pub name: u32,
    pub reach: Reach,
}

/// How an argument is passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ArgKind {
    Positional(u32),
    /// By name id.
    Keyword(u32),
    /// `*xs`: its elements go to the remaining positional parameters.
    Star,
    /// `**kw`.
    DoubleStar,
}

/// An argument passed at a call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Arg {
    pub kind: ArgKind,
    pub value: ValueExpr,
}

/// What made a call site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum CallKind {
    /// A call written in the source.
    Written,
    /// A decorator applied to the definition passed as its argument; an
    /// unknown decorator leaves the definition as it was.
    Decorator,
    /// `raise C` or `raise e`: Python instantiates a class it is given;
    /// nothing was written as a call, so nothing is reported unresolved or
    /// external.
    Raise,
    /// `raise C(...)`: a written call whose result is raised, reported like
    /// any written call (`raise ValueError(...)` calls `builtins.ValueError`).
    RaisedCall,
    /// A call Python makes on the program's behalf: `__iter__` and
    /// `__next__` of what a `for` loop walks. Its internal callees are
    /// edges like any other; it is never reported as unresolved or
    /// external, since nothing was written.
    Implicit,
}

/// A call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CallFacts {
    pub scope: ScopeRef,
    pub callee: ValueExpr,
    pub args: Box<[Arg]>,
    pub line: u32,
    pub kind: CallKind,
}

/// A lambda expression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LambdaFacts {
    /// The scope the lambda is written in.
    pub parent: ScopeRef,
    pub body: ValueExpr,
}

/// A statement that moves a value somewhere other than a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Effect {
    /// `return value` in the function.
    Return { function: u32, value: ValueExpr },
    /// `yield value` (or the elements of `yield from value`) in the function.
    Yield { function: u32, value: ValueExpr },
    /// `object.attr = value`.
    AttrStore {
        object: ValueExpr,
        /// Name id.
        attr: u32,
        value: ValueExpr,
    },
    /// `container[key] = value`, with the key when it is a literal.
    ElemStore {
        container: ValueExpr,
        /// Name id of the literal key.
        key: Option<u32>,
        value: ValueExpr,
    },
    /// An expression evaluated for what reading it does (an attribute read
    /// outside any other expression calls a property).
    Eval(ValueExpr),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassFacts {
    pub name: String,
    /// Dotted path inside the module, e.g. `Outer.Inner`.
    pub local_path: String,
    pub parent: ScopeRef,
    /// Base expressions as written, and as values.
    pub bases: Vec<(String, ValueExpr)>,
    pub decorators: Vec<String>,
    pub docstring: Option<String>,
    pub span: Span,
    /// Names assigned as `self.name = ...` in its methods (attributes the
    /// class has, besides its body's names).
    pub self_attrs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FunctionFacts {
    pub name: String,
    pub local_path: String,
    pub parent: ScopeRef,
    pub kind: FunctionKind,
    pub params: Vec<Param>,
    pub returns: Option<String>,
    /// The return annotation, as an instance of what it names.
    pub returns_value: Option<ValueExpr>,
    pub decorators: Vec<String>,
    pub is_async: bool,
    /// The body yields: calling it makes a generator.
    pub is_generator: bool,
    /// Decorated with `@property` (or `functools.cached_property`): reading
    /// the attribute calls it.
    pub is_property: bool,
    pub docstring: Option<String>,
    pub span: Span,
    pub complexity: Complexity,
}

/// Everything one file tells about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PythonFacts {
    pub docstring: Option<String>,
    pub line_count: u32,
    pub has_syntax_errors: bool,
    pub complexity: Complexity,
    pub all: Option<Vec<String>>,
    /// The file's distinct names (variables, attributes, keywords, literal
    /// keys), each stored once; facts refer to them by index.
    pub names: Vec<String>,
    pub classes: Vec<ClassFacts>,
    pub functions: Vec<FunctionFacts>,
    pub imports: Vec<ImportFacts>,
    pub bindings: Vec<Binding>,
    pub uses: Vec<Use>,
    pub calls: Vec<CallFacts>,
    pub lambdas: Vec<LambdaFacts>,
    /// Effects with the scope they are written in.
    pub effects: Vec<(ScopeRef, Effect)>,
    /// Number of container sites ([`ValueExpr::Container`] indices).
    pub containers: u32,
    /// The built-in type of each container site, by site index.
    pub container_kinds: Vec<ContainerKind>,
    pub routes: Vec<RouteFacts>,
    /// Main blocks, command-line interfaces and `setup()` entry points.
    pub usage: super::usage_facts::UsageFileFacts,
}

impl PythonFacts {
    #[cfg(feature = "python")]
    /// Gives back the spare capacity the extraction's pushes left: every
    /// file's facts are held at once while the call graph is built.
    pub(crate) fn shrink(&mut self) {
        self.names.shrink_to_fit();
        self.classes.shrink_to_fit();
        self.functions.shrink_to_fit();
        self.imports.shrink_to_fit();
        self.bindings.shrink_to_fit();
        self.uses.shrink_to_fit();
        for used in &mut self.uses {
            if let Reach::Local(bindings) = &mut used.reach {
                bindings.shrink_to_fit();
            }
        }
        self.calls.shrink_to_fit();
        self.lambdas.shrink_to_fit();
        self.effects.shrink_to_fit();
        self.routes.shrink_to_fit();
        self.usage.shrink();
    }

    /// The text of a name id (empty if out of range).
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }

    /// The scope that encloses `scope`, or `None` for the module.
    pub(crate) fn parent_scope(&self, scope: ScopeRef) -> Option<ScopeRef> {
        match scope {
            ScopeRef::Module => None,
            ScopeRef::Class(c) => self.classes.get(c as usize).map(|c| c.parent),
            ScopeRef::Function(f) => self.functions.get(f as usize).map(|f| f.parent),
            ScopeRef::Lambda(l) => self.lambdas.get(l as usize).map(|l| l.parent),
        }
    }
}
