//! The facts one Java file tells about itself, as cached by content hash:
//! package, imports, types with their members and supertypes as written,
//! locals with where they are visible, call sites, routes.

use serde::{Deserialize, Serialize};

use crate::model::{BaseRelation, Complexity, FunctionKind, JavaTypeKind, Modifier, Span};
use crate::routes::{Framework, HttpMethod};

/// Deepest receiver chain turned into a [`Expr`]; deeper is [`Expr::Other`].
pub(crate) const MAX_EXPR_DEPTH: u32 = 48;

/// Name of constructors in qualified names (as in the JVM).
pub(crate) const CONSTRUCTOR: &str = "<init>";

/// A lexical scope of a Java file: the compilation unit, or a type or method
/// by local index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Scope {
    Unit,
    Type(u32),
    Method(u32),
}

/// A receiver or argument expression, as far as resolution can use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Expr {
    /// A simple name: a variable, a type or the first segment of a package.
    Name(String),
    /// `base.name` (`Outer.this` is `Field(Outer, "this")`).
    Field(Box<Expr>, String),
    /// The result of calling `name` with `arity` arguments. `start` and
    /// `end` are the bytes of the invocation, which identify it: it is also
    /// a call site of its own ([`Call::pos`], [`Call::end`]), and
    /// resolution evaluates each invocation once however long the chain.
    Invoke {
        receiver: Option<Box<Expr>>,
        name: String,
        arity: u32,
        start: u32,
        end: u32,
    },
    /// `new T(...)`: an instance of the erased type `T`.
    New(String),
    /// `(T) x`: an instance of the erased type `T`.
    Cast(String),
    /// A written type (the left side of `List<X>::size`).
    Type(String),
    /// A string literal.
    Str,
    This,
    Super,
    /// Anything else, as written (truncated).
    Other(String),
}

impl Expr {
    /// The expression as source-like text, for unresolved-call reports.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out, 0);
        out
    }

    fn render_into(&self, out: &mut String, depth: u32) {
        if depth > MAX_EXPR_DEPTH {
            out.push('…');
            return;
        }
        match self {
            Expr::Name(n) => out.push_str(n),
            Expr::Field(base, name) => {
                base.render_into(out, depth + 1);
                out.push('.');
                out.push_str(name);
            }
            Expr::Invoke { receiver, name, .. } => {
                if let Some(r) = receiver {
                    r.render_into(out, depth + 1);
                    out.push('.');
                }
                out.push_str(name);
                out.push_str("()");
            }
            Expr::New(t) => {
                out.push_str("new ");
                out.push_str(t);
                out.push_str("()");
            }
            Expr::Cast(t) => {
                out.push_str("((");
                out.push_str(t);
                out.push_str(") …)");
            }
            Expr::Type(t) => out.push_str(t),
            Expr::Str => out.push_str("\"…\""),
            Expr::This => out.push_str("this"),
            Expr::Super => out.push_str("super"),
            Expr::Other(text) => out.push_str(text),
        }
    }
}

/// The kind of a literal argument, used to choose between overloads of the
/// same arity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum ArgKind {
    Other,
    Str,
    Char,
    Int,
    Long,
    Float,
    Double,
    Bool,
    Null,
}

/// What a call site calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Callee {
    /// `name(...)` or `receiver.name(...)`.
    Method {
        receiver: Option<Expr>,
        name: String,
    },
    /// `new T(...)` (also an anonymous class, and an enum constant's
    /// constructor call); `T` erased.
    New(String),
    /// `this(...)` in a constructor.
    This,
    /// `super(...)` in a constructor.
    Super,
    /// `target::name`; `name` is [`CONSTRUCTOR`] for `T::new`.
    Ref { target: Expr, name: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Call {
    pub scope: Scope,
    /// Start byte of the call, to tell which locals are visible.
    pub pos: u32,
    /// End byte of the call (with `pos`, the invocation's identity).
    pub end: u32,
    pub line: u32,
    pub callee: Callee,
    /// Number of arguments (unknown for method references: 0).
    pub arity: u32,
    /// Literal kinds of the arguments; empty when no argument is a literal.
    pub args: Vec<ArgKind>,
}

/// The type of a local variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum LocalType {
    /// A declared type, erased (`List<Foo>` → `List`, arrays keep `[]`).
    Declared(String),
    /// `var x = expr;`
    Inferred(Expr),
    /// A lambda parameter without a type.
    Untyped,
}

/// A local variable, parameter of a lambda, catch or pattern variable,
/// visible from `start` to `end` (bytes) inside `scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Local {
    pub scope: Scope,
    pub name: String,
    pub ty: LocalType,
    pub start: u32,
    pub end: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ImportFacts {
    /// The dotted name without `.*`.
    pub path: String,
    pub is_static: bool,
    pub on_demand: bool,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TypeParam {
    pub name: String,
    /// The first bound, erased.
    pub bound: Option<String>,
    /// As written, e.g. `T extends Comparable<T>`.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SuperFacts {
    /// As written.
    pub text: String,
    /// Erased (`Base<T>` → `Base`).
    pub name: String,
    pub relation: BaseRelation,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FieldFacts {
    pub name: String,
    /// As written (resolution erases it with [`erase`]).
    pub type_text: String,
    pub modifiers: Vec<Modifier>,
    pub annotations: Vec<String>,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TypeFacts {
    pub name: String,
    /// Dotted path inside the compilation unit, e.g. `Outer.Inner` or
    /// `App.start.$1` for an anonymous class in method `start`.
    pub local_path: String,
    pub parent: Scope,
    pub kind: JavaTypeKind,
    pub anonymous: bool,
    pub modifiers: Vec<Modifier>,
    pub annotations: Vec<String>,
    pub type_params: Vec<TypeParam>,
    pub supers: Vec<SuperFacts>,
    pub fields: Vec<FieldFacts>,
    pub docstring: Option<String>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ParamFacts {
    pub name: String,
    /// As written (`String...` for varargs, `int[]` for `int x[]`).
    pub type_text: String,
    pub varargs: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MethodFacts {
    /// The method name, or [`CONSTRUCTOR`].
    pub name: String,
    /// Dotted path inside the compilation unit; overloaded methods end in
    /// their erased parameter types, e.g. `App.print(int)`.
    pub local_path: String,
    pub parent: Scope,
    pub kind: FunctionKind,
    pub params: Vec<ParamFacts>,
    /// The return type as written (`None` for constructors).
    pub returns: Option<String>,
    pub modifiers: Vec<Modifier>,
    pub annotations: Vec<String>,
    pub type_params: Vec<TypeParam>,
    pub throws: Vec<String>,
    pub has_body: bool,
    pub docstring: Option<String>,
    pub span: Span,
    pub complexity: Complexity,
}

/// The handler of a route, before resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Handler {
    /// An annotated method of this file.
    Method(u32),
    /// An inline lambda in this scope.
    Lambda(Scope),
    /// A method reference `target::name`.
    Ref { target: Expr, name: String },
    /// An object whose `handle` method serves the route.
    Object(Expr),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RouteFacts {
    pub framework: Framework,
    pub method: HttpMethod,
    pub path: String,
    pub handler: Handler,
    /// Scope the handler expression is evaluated in.
    pub scope: Scope,
    pub pos: u32,
    pub line: u32,
}

/// Everything one Java file tells about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JavaFacts {
    /// The declared package (`None` for the default package).
    pub package: Option<String>,
    /// The Javadoc of the package declaration, else of the first public
    /// top-level type, else of the first top-level type.
    pub docstring: Option<String>,
    pub line_count: u32,
    pub has_syntax_errors: bool,
    pub complexity: Complexity,
    pub imports: Vec<ImportFacts>,
    pub types: Vec<TypeFacts>,
    pub methods: Vec<MethodFacts>,
    pub locals: Vec<Local>,
    pub calls: Vec<Call>,
    /// Distinct type names written in the file (dotted, erased), for the
    /// module dependency graph.
    pub type_names: Vec<String>,
    pub routes: Vec<RouteFacts>,
}

/// The last segment of an erased type name (`java.util.List` → `List`).
pub(crate) fn simple_type(ty: &str) -> &str {
    ty.rsplit('.').next().unwrap_or(ty)
}

/// A type as written, without type arguments, annotations and whitespace:
/// `java.util.Map<K, V>` → `java.util.Map`, `@NonNull Foo []` → `Foo[]`,
/// `T...` → `T[]`. Most types are already erased and are borrowed.
pub(crate) fn erase(text: &str) -> std::borrow::Cow<'_, str> {
    let plain = !text
        .bytes()
        .any(|b| matches!(b, b'<' | b'>' | b'@' | b' ' | b'\t' | b'\n' | b'\r'))
        && !text.contains("..");
    if plain {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut angle = 0u32;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' => angle += 1,
            '>' => angle = angle.saturating_sub(1),
            _ if angle > 0 => {}
            '@' => {
                // Skip the annotation's name and any parenthesised arguments.
                while chars
                    .peek()
                    .is_some_and(|c| c.is_alphanumeric() || *c == '.' || *c == '_' || *c == '$')
                {
                    chars.next();
                }
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if chars.peek() == Some(&'(') {
                    let mut depth = 0u32;
                    for c in chars.by_ref() {
                        match c {
                            '(' => depth += 1,
                            ')' => {
                                depth = depth.saturating_sub(1);
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            c if c.is_whitespace() => {}
            '.' if chars.peek() == Some(&'.') => {
                // Varargs `...`.
                while chars.peek() == Some(&'.') {
                    chars.next();
                }
                out.push_str("[]");
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}
