//! Per-file extraction of Python facts from a tree-sitter syntax tree.
//!
//! One pre-order walk with a [`tree_sitter::TreeCursor`] fills a
//! [`FileFacts`]. The walk is iterative (an explicit frame stack instead of
//! recursion) so that hostile nesting depth cannot overflow the stack. The
//! facts depend only on the file's text, never on its module name or on other
//! files, which is what lets them be cached by content hash and computed in
//! parallel; resolution across files happens later in [`crate::assemble`].

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tree_sitter::{Language, Node, Parser, Tree};

use crate::model::{Complexity, FunctionKind, Param, ParamKind, Span};

/// Longest callee or decorator text kept verbatim.
const MAX_TEXT: usize = 120;
/// Deepest attribute/call chain turned into an [`Expr`]; deeper is [`Expr::Other`].
const MAX_EXPR_DEPTH: u32 = 48;

/// A lexical scope of a file: the module, or a class or function by local index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum ScopeRef {
    Module,
    Class(u32),
    Function(u32),
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

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// What a name is bound to in a scope, as far as one file can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum LocalValue {
    Function(u32),
    Class(u32),
    /// Index into [`FileFacts::imports`].
    Import(u32),
    /// `x = callee(...)`: the result of calling `callee`.
    CallResult(Expr),
    /// `x = a.b`.
    Alias(Expr),
    /// `x: T` or a parameter annotated with `T`: an instance of `T`.
    Instance(Expr),
    /// An unannotated parameter, by position.
    Param(u32),
    /// The first parameter of a method (`self`).
    SelfParam,
    /// The first parameter of a classmethod (`cls`).
    ClsParam,
    /// Bound to something the analysis does not follow.
    Opaque,
}

/// A name bound in a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Binding {
    pub scope: ScopeRef,
    pub name: String,
    pub value: LocalValue,
}

/// An import statement's imported name, before resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ImportFacts {
    pub kind: crate::model::ImportKind,
    pub module: String,
    pub level: u32,
    pub name: Option<String>,
    pub alias: Option<String>,
    pub line: u32,
    pub scope: ScopeRef,
    pub in_try: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassFacts {
    pub name: String,
    /// Dotted path inside the module, e.g. `Outer.Inner`.
    pub local_path: String,
    pub parent: ScopeRef,
    pub bases: Vec<(String, Expr)>,
    pub decorators: Vec<String>,
    pub docstring: Option<String>,
    pub span: Span,
    /// Attributes with a known type: class-body assignments and `self.x = ...` in methods.
    pub attrs: Vec<(String, LocalValue, ScopeRef)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FunctionFacts {
    pub name: String,
    pub local_path: String,
    pub parent: ScopeRef,
    pub kind: FunctionKind,
    pub params: Vec<Param>,
    pub returns: Option<String>,
    /// The return annotation as an evaluable name, when it is one.
    pub returns_expr: Option<Expr>,
    pub decorators: Vec<String>,
    pub is_async: bool,
    pub docstring: Option<String>,
    pub span: Span,
    pub complexity: Complexity,
    /// Positions of parameters that the body calls directly (`fn(x)`).
    pub called_params: Vec<u32>,
}

/// An argument passed at a call site, kept when it is a plain name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Arg {
    /// Position for positional arguments.
    pub position: Option<u32>,
    pub keyword: Option<String>,
    pub value: Expr,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CallFacts {
    pub scope: ScopeRef,
    pub callee: Expr,
    pub line: u32,
    pub args: Vec<Arg>,
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

/// Decorator names that declare Flask or FastAPI routes.
const ROUTE_VERBS: &[&str] = &[
    "route",
    "api_route",
    "get",
    "post",
    "put",
    "delete",
    "patch",
    "head",
    "options",
];

/// Everything one file tells about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FileFacts {
    pub docstring: Option<String>,
    pub line_count: u32,
    pub has_syntax_errors: bool,
    pub complexity: Complexity,
    pub all: Option<Vec<String>>,
    pub classes: Vec<ClassFacts>,
    pub functions: Vec<FunctionFacts>,
    pub imports: Vec<ImportFacts>,
    pub bindings: Vec<Binding>,
    pub calls: Vec<CallFacts>,
    pub routes: Vec<RouteFacts>,
}

/// Node kinds the walk reacts to, looked up through a table indexed by kind id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Other,
    FunctionDefinition,
    ClassDefinition,
    DecoratedDefinition,
    Decorator,
    Call,
    Import,
    ImportFrom,
    FutureImport,
    ExpressionStatement,
    Assignment,
    AugmentedAssignment,
    Try,
    Block,
    Identifier,
    Attribute,
    ParenthesizedExpression,
    String,
    ConcatenatedString,
    StringStart,
    StringEnd,
    DottedName,
    AliasedImport,
    RelativeImport,
    ImportPrefix,
    WildcardImport,
    KeywordArgument,
    ListSplat,
    DictionarySplat,
    TypedParameter,
    DefaultParameter,
    TypedDefaultParameter,
    ListSplatPattern,
    DictionarySplatPattern,
    KeywordSeparator,
    List,
    Tuple,
    Comment,
    Type,
    /// A construct counted by the complexity measure.
    Branch,
}

struct Grammar {
    language: Language,
    kinds: Vec<Kind>,
    field_body: u16,
    field_name: u16,
    field_parameters: u16,
    field_return_type: u16,
    field_superclasses: u16,
    field_function: u16,
    field_arguments: u16,
    field_left: u16,
    field_right: u16,
    field_type: u16,
    field_object: u16,
    field_attribute: u16,
    field_module_name: u16,
    field_alias: u16,
    field_value: u16,
    field_definition: u16,
}

fn grammar() -> &'static Grammar {
    static GRAMMAR: OnceLock<Grammar> = OnceLock::new();
    GRAMMAR.get_or_init(|| {
        let language: Language = tree_sitter_python::LANGUAGE.into();
        let count = language.node_kind_count();
        let kinds = (0..count)
            .map(|id| {
                let id = u16::try_from(id).unwrap_or(u16::MAX);
                let named = language.node_kind_is_named(id);
                match (language.node_kind_for_id(id).unwrap_or(""), named) {
                    ("function_definition", true) => Kind::FunctionDefinition,
                    ("class_definition", true) => Kind::ClassDefinition,
                    ("decorated_definition", true) => Kind::DecoratedDefinition,
                    ("decorator", true) => Kind::Decorator,
                    ("call", true) => Kind::Call,
                    ("import_statement", true) => Kind::Import,
                    ("import_from_statement", true) => Kind::ImportFrom,
                    ("future_import_statement", true) => Kind::FutureImport,
                    ("expression_statement", true) => Kind::ExpressionStatement,
                    ("assignment", true) => Kind::Assignment,
                    ("augmented_assignment", true) => Kind::AugmentedAssignment,
                    ("try_statement", true) => Kind::Try,
                    ("block", true) => Kind::Block,
                    ("identifier", true) => Kind::Identifier,
                    ("attribute", true) => Kind::Attribute,
                    ("parenthesized_expression", true) => Kind::ParenthesizedExpression,
                    ("string", true) => Kind::String,
                    ("concatenated_string", true) => Kind::ConcatenatedString,
                    ("string_start", true) => Kind::StringStart,
                    ("string_end", true) => Kind::StringEnd,
                    ("dotted_name", true) => Kind::DottedName,
                    ("aliased_import", true) => Kind::AliasedImport,
                    ("relative_import", true) => Kind::RelativeImport,
                    ("import_prefix", true) => Kind::ImportPrefix,
                    ("wildcard_import", true) => Kind::WildcardImport,
                    ("keyword_argument", true) => Kind::KeywordArgument,
                    ("list_splat", true) => Kind::ListSplat,
                    ("dictionary_splat", true) => Kind::DictionarySplat,
                    ("typed_parameter", true) => Kind::TypedParameter,
                    ("default_parameter", true) => Kind::DefaultParameter,
                    ("typed_default_parameter", true) => Kind::TypedDefaultParameter,
                    ("list_splat_pattern", true) => Kind::ListSplatPattern,
                    ("dictionary_splat_pattern", true) => Kind::DictionarySplatPattern,
                    ("keyword_separator", true) => Kind::KeywordSeparator,
                    ("list", true) => Kind::List,
                    ("tuple", true) => Kind::Tuple,
                    ("comment", true) => Kind::Comment,
                    ("type", true) => Kind::Type,
                    (
                        "if_statement"
                        | "elif_clause"
                        | "for_statement"
                        | "while_statement"
                        | "except_clause"
                        | "list_comprehension"
                        | "set_comprehension"
                        | "dictionary_comprehension"
                        | "generator_expression"
                        | "case_clause",
                        true,
                    ) => Kind::Branch,
                    _ => Kind::Other,
                }
            })
            .collect();
        let field = |name: &str| {
            language
                .field_id_for_name(name)
                .map_or(u16::MAX, |f| f.get())
        };
        Grammar {
            field_body: field("body"),
            field_name: field("name"),
            field_parameters: field("parameters"),
            field_return_type: field("return_type"),
            field_superclasses: field("superclasses"),
            field_function: field("function"),
            field_arguments: field("arguments"),
            field_left: field("left"),
            field_right: field("right"),
            field_type: field("type"),
            field_object: field("object"),
            field_attribute: field("attribute"),
            field_module_name: field("module_name"),
            field_alias: field("alias"),
            field_value: field("value"),
            field_definition: field("definition"),
            kinds,
            language,
        }
    })
}

impl Grammar {
    fn kind(&self, node: Node<'_>) -> Kind {
        self.kinds
            .get(usize::from(node.kind_id()))
            .copied()
            .unwrap_or(Kind::Other)
    }

    fn field<'t>(&self, node: Node<'t>, field: u16) -> Option<Node<'t>> {
        node.child_by_field_id(field)
    }
}

/// A tree-sitter parser configured for Python; one per thread.
pub(crate) struct PythonParser {
    parser: Parser,
}

impl PythonParser {
    pub(crate) fn new() -> Result<Self, crate::Error> {
        let mut parser = Parser::new();
        parser
            .set_language(&grammar().language)
            .map_err(|e| crate::Error::Parser(e.to_string()))?;
        Ok(Self { parser })
    }

    /// Parses only, for measuring the raw parse cost.
    pub(crate) fn parse_tree(&mut self, text: &str) -> Option<Tree> {
        self.parser.parse(text, None)
    }

    /// Parses `text` and extracts its facts. `None` only if tree-sitter gives
    /// up entirely (it does not for well-formed or malformed text alike, but
    /// the API allows it).
    pub(crate) fn extract(&mut self, text: &str) -> Option<FileFacts> {
        let tree = self.parser.parse(text, None)?;
        Some(Extractor::new(text).run(&tree))
    }
}

/// A scope being walked, popped when the walk leaves `end_node`.
struct Frame {
    scope: ScopeRef,
    end_node: usize,
    /// Name of `self`/`cls` inside a method, for `self.x = ...` attributes.
    self_name: Option<String>,
    /// For methods: the enclosing class.
    class: Option<u32>,
}

/// A definition whose scope opens when the walk reaches its body block.
struct PendingScope {
    body_node: usize,
    frame: Frame,
}

struct Extractor<'s> {
    src: &'s str,
    g: &'static Grammar,
    facts: FileFacts,
    frames: Vec<Frame>,
    pending: Vec<PendingScope>,
    try_depth: u32,
    block_depth: u32,
    /// The decorated definition being entered: (definition node id, outer span, decorators).
    decorated: Option<(usize, Span, Vec<String>)>,
}

impl<'s> Extractor<'s> {
    fn new(src: &'s str) -> Self {
        Extractor {
            src,
            g: grammar(),
            facts: FileFacts {
                docstring: None,
                line_count: count_lines(src),
                has_syntax_errors: false,
                complexity: Complexity::default(),
                all: None,
                classes: Vec::new(),
                functions: Vec::new(),
                imports: Vec::new(),
                bindings: Vec::new(),
                calls: Vec::new(),
                routes: Vec::new(),
            },
            frames: Vec::new(),
            pending: Vec::new(),
            try_depth: 0,
            block_depth: 0,
            decorated: None,
        }
    }

    fn run(mut self, tree: &Tree) -> FileFacts {
        let root = tree.root_node();
        self.facts.has_syntax_errors = root.has_error();
        self.facts.docstring = self.docstring_of_block(root);
        let mut cursor = root.walk();
        'walk: loop {
            let node = cursor.node();
            let kind = self.g.kind(node);
            let descend = self.enter(node, kind);
            if descend && cursor.goto_first_child() {
                continue;
            }
            self.leave(node, kind);
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    break 'walk;
                }
                let parent = cursor.node();
                self.leave(parent, self.g.kind(parent));
            }
        }
        self.facts
    }

    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn short_text(&self, node: Node<'_>) -> String {
        truncate(self.text(node), MAX_TEXT)
    }

    fn scope(&self) -> ScopeRef {
        self.frames.last().map_or(ScopeRef::Module, |f| f.scope)
    }

    /// The innermost function frame, skipping class bodies.
    fn function_frame(&self) -> Option<&Frame> {
        self.frames
            .iter()
            .rev()
            .find(|f| matches!(f.scope, ScopeRef::Function(_)))
    }

    fn local_path(&self, name: &str) -> String {
        let parent = match self.scope() {
            ScopeRef::Module => None,
            ScopeRef::Class(c) => self.facts.classes.get(c as usize).map(|c| &c.local_path),
            ScopeRef::Function(f) => self.facts.functions.get(f as usize).map(|f| &f.local_path),
        };
        match parent {
            Some(p) => format!("{p}.{name}"),
            None => name.to_string(),
        }
    }

    fn bind(&mut self, name: &str, value: LocalValue) {
        let scope = self.scope();
        self.facts.bindings.push(Binding {
            scope,
            name: name.to_string(),
            value,
        });
    }

    /// Returns whether to descend into the node's children.
    fn enter(&mut self, node: Node<'_>, kind: Kind) -> bool {
        if let Some(pending) = self.pending.last()
            && pending.body_node == node.id()
            && let Some(pending) = self.pending.pop()
        {
            self.frames.push(pending.frame);
        }
        match kind {
            Kind::FunctionDefinition => self.enter_function(node),
            Kind::ClassDefinition => self.enter_class(node),
            Kind::DecoratedDefinition => self.enter_decorated(node),
            Kind::Decorator => self.enter_decorator(node),
            Kind::Call => self.enter_call(node),
            Kind::Import | Kind::ImportFrom | Kind::FutureImport => {
                self.enter_import(node);
                return false;
            }
            Kind::Assignment => self.enter_assignment(node),
            Kind::AugmentedAssignment => self.enter_augmented_assignment(node),
            Kind::Try => self.try_depth += 1,
            Kind::Block => self.block_depth += 1,
            Kind::Branch => {
                self.facts.complexity.branches += 1;
                if let Some(ScopeRef::Function(f)) = self.function_frame().map(|f| f.scope)
                    && let Some(function) = self.facts.functions.get_mut(f as usize)
                {
                    function.complexity.branches += 1;
                }
            }
            Kind::Comment | Kind::Type => return false,
            // Only f-strings hold code (interpolations); other strings are skipped whole.
            Kind::String => return self.is_f_string(node),
            _ => {}
        }
        true
    }

    fn is_f_string(&self, node: Node<'_>) -> bool {
        let start = node.start_byte();
        let prefix = self
            .src
            .as_bytes()
            .get(start..(start + 3).min(self.src.len()))
            .unwrap_or(&[]);
        prefix
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .any(|b| matches!(b, b'f' | b'F' | b't' | b'T'))
    }

    /// Scopes end at their body block, so only blocks can close a frame.
    fn leave(&mut self, node: Node<'_>, kind: Kind) {
        match kind {
            Kind::Try => self.try_depth = self.try_depth.saturating_sub(1),
            Kind::Block => {
                self.block_depth = self.block_depth.saturating_sub(1);
                if self.frames.last().is_some_and(|f| f.end_node == node.id()) {
                    self.frames.pop();
                }
            }
            _ => {}
        }
    }

    /// Remembers the decorators for the definition that follows them.
    /// (`Node::parent` would walk down from the root for every definition.)
    fn enter_decorated(&mut self, node: Node<'_>) {
        let Some(definition) = node.child_by_field_id(self.g.field_definition) else {
            return;
        };
        let mut decorators = Vec::new();
        let mut cursor = node.walk();
        let is_function = self.g.kind(definition) == Kind::FunctionDefinition;
        for child in node.named_children(&mut cursor) {
            if self.g.kind(child) == Kind::Decorator {
                let text = self.text(child).trim_start_matches('@').trim();
                decorators.push(truncate(text, MAX_TEXT));
                if is_function {
                    self.route_decorator(child);
                }
            }
        }
        self.decorated = Some((definition.id(), self.span(node), decorators));
    }

    /// `@app.get("/x")`, `@bp.route("/x", methods=["POST"])`: the function
    /// defined next gets the route.
    fn route_decorator(&mut self, decorator: Node<'_>) {
        let g = self.g;
        let Some(call) = decorator
            .named_child(0)
            .filter(|c| g.kind(*c) == Kind::Call)
        else {
            return;
        };
        let (Some(function), Some(args)) = (
            g.field(call, g.field_function),
            g.field(call, g.field_arguments),
        ) else {
            return;
        };
        if g.kind(function) != Kind::Attribute {
            return;
        }
        let (Some(object), Some(attribute)) = (
            g.field(function, g.field_object),
            g.field(function, g.field_attribute),
        ) else {
            return;
        };
        let verb = self.text(attribute);
        if !ROUTE_VERBS.contains(&verb) {
            return;
        }
        let Some(path) = self
            .positional_arg(args, 0)
            .or_else(|| self.keyword_arg(args, "path"))
            .or_else(|| self.keyword_arg(args, "rule"))
            .and_then(|a| self.plain_string(a))
        else {
            return;
        };
        let methods = self
            .keyword_arg(args, "methods")
            .map(|m| self.string_list(m))
            .unwrap_or_default();
        let function = u32::try_from(self.facts.functions.len()).unwrap_or(u32::MAX);
        self.facts.routes.push(RouteFacts::Decorator {
            function,
            receiver: self.expr(object),
            verb: verb.to_string(),
            path,
            methods,
            line: line_of(decorator.start_position().row),
        });
    }

    fn positional_arg<'t>(&self, args: Node<'t>, position: usize) -> Option<Node<'t>> {
        let mut cursor = args.walk();
        args.named_children(&mut cursor)
            .filter(|a| !matches!(self.g.kind(*a), Kind::KeywordArgument | Kind::Comment))
            .nth(position)
    }

    fn keyword_arg<'t>(&self, args: Node<'t>, name: &str) -> Option<Node<'t>> {
        let g = self.g;
        let mut cursor = args.walk();
        args.named_children(&mut cursor)
            .filter(|a| g.kind(*a) == Kind::KeywordArgument)
            .find(|a| {
                g.field(*a, g.field_name)
                    .is_some_and(|n| self.text(n) == name)
            })
            .and_then(|a| g.field(a, g.field_value))
    }

    /// The value of a string literal without interpolations.
    fn plain_string(&self, node: Node<'_>) -> Option<String> {
        (self.g.kind(node) == Kind::String && !self.is_f_string(node))
            .then(|| self.string_value(node))
            .flatten()
    }

    /// `name = Blueprint(...)`, `APIRouter(...)`, `Flask(...)`, `FastAPI(...)`.
    fn router_assignment(&mut self, name: &str, call: Node<'_>) {
        let g = self.g;
        let (Some(function), Some(args)) = (
            g.field(call, g.field_function),
            g.field(call, g.field_arguments),
        ) else {
            return;
        };
        let callee = self.text(function);
        let constructor = callee.rsplit('.').next().unwrap_or(callee);
        let keyword = match constructor {
            "Blueprint" => "url_prefix",
            "APIRouter" => "prefix",
            "Flask" | "FastAPI" => "",
            _ => return,
        };
        let prefix = (!keyword.is_empty())
            .then(|| self.keyword_arg(args, keyword))
            .flatten()
            .and_then(|p| self.plain_string(p));
        self.facts.routes.push(RouteFacts::Router {
            name: name.to_string(),
            constructor: constructor.to_string(),
            prefix,
        });
    }

    /// `app.register_blueprint(bp, url_prefix=...)`, `app.include_router(r, prefix=...)`.
    fn mount_call(&mut self, receiver: &Expr, verb: &str, args: Node<'_>) {
        let keyword = match verb {
            "register_blueprint" => "url_prefix",
            "include_router" => "prefix",
            _ => return,
        };
        let Some(router) = self
            .positional_arg(args, 0)
            .filter(|r| matches!(self.g.kind(*r), Kind::Identifier | Kind::Attribute))
        else {
            return;
        };
        let prefix = self
            .keyword_arg(args, keyword)
            .and_then(|p| self.plain_string(p));
        self.facts.routes.push(RouteFacts::Mount {
            scope: self.scope(),
            receiver: receiver.clone(),
            router: self.expr(router),
            prefix,
        });
    }

    /// The `path(...)` entries of a module-level `urlpatterns` list.
    fn url_patterns(&mut self, list: Node<'_>) {
        let g = self.g;
        if g.kind(list) != Kind::List {
            return;
        }
        let mut cursor = list.walk();
        let entries: Vec<Node<'_>> = list
            .named_children(&mut cursor)
            .filter(|e| g.kind(*e) == Kind::Call)
            .collect();
        for entry in entries {
            let (Some(function), Some(args)) = (
                g.field(entry, g.field_function),
                g.field(entry, g.field_arguments),
            ) else {
                continue;
            };
            let callee = self.text(function);
            let regex = match callee.rsplit('.').next().unwrap_or(callee) {
                "path" => false,
                "re_path" | "url" => true,
                _ => continue,
            };
            let Some(route) = self
                .positional_arg(args, 0)
                .and_then(|r| self.plain_string(r))
            else {
                continue;
            };
            let Some(view) = self.positional_arg(args, 1).and_then(|v| self.url_view(v)) else {
                continue;
            };
            self.facts.routes.push(RouteFacts::UrlPattern {
                route,
                regex,
                view,
                line: line_of(entry.start_position().row),
            });
        }
    }

    fn url_view(&self, node: Node<'_>) -> Option<UrlView> {
        let g = self.g;
        match g.kind(node) {
            Kind::Identifier | Kind::Attribute => Some(UrlView::View(self.expr(node))),
            Kind::Call => {
                let function = g.field(node, g.field_function)?;
                let args = g.field(node, g.field_arguments)?;
                let callee = self.text(function);
                if callee == "include" || callee.ends_with(".include") {
                    let target = self.positional_arg(args, 0)?;
                    return match g.kind(target) {
                        Kind::String => self.plain_string(target).map(UrlView::Include),
                        Kind::Identifier | Kind::Attribute => {
                            Some(UrlView::IncludeModule(self.expr(target)))
                        }
                        _ => None,
                    };
                }
                if g.kind(function) == Kind::Attribute
                    && g.field(function, g.field_attribute)
                        .is_some_and(|a| self.text(a) == "as_view")
                {
                    let object = g.field(function, g.field_object)?;
                    return Some(UrlView::AsView(self.expr(object)));
                }
                None
            }
            _ => None,
        }
    }

    /// The span including decorators, and the decorator texts, of a definition.
    fn decorations(&mut self, node: Node<'_>) -> (Span, Vec<String>) {
        match self.decorated.take() {
            Some((id, span, decorators)) if id == node.id() => (span, decorators),
            other => {
                self.decorated = other;
                (self.span(node), Vec::new())
            }
        }
    }

    fn span(&self, node: Node<'_>) -> Span {
        let range = node.byte_range();
        Span {
            start_byte: u32::try_from(range.start).unwrap_or(u32::MAX),
            end_byte: u32::try_from(range.end).unwrap_or(u32::MAX),
            start_line: line_of(node.start_position().row),
            end_line: line_of(node.end_position().row),
        }
    }

    fn enter_function(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(name_node) = g.field(node, g.field_name) else {
            return;
        };
        let name = self.text(name_node).to_string();
        let (outer, decorators) = self.decorations(node);
        let parent = self.scope();
        let enclosing_class = match parent {
            ScopeRef::Class(c) => Some(c),
            _ => None,
        };
        let kind = match enclosing_class {
            None => FunctionKind::Function,
            Some(_) if decorators.iter().any(|d| d == "staticmethod") => FunctionKind::StaticMethod,
            Some(_) if decorators.iter().any(|d| d == "classmethod") => FunctionKind::ClassMethod,
            Some(_) => FunctionKind::Method,
        };
        let is_async = node
            .child(0)
            .is_some_and(|first| self.text(first) == "async");
        let params = g
            .field(node, g.field_parameters)
            .map(|p| self.parameters(p))
            .unwrap_or_default();
        let return_node = g.field(node, g.field_return_type);
        let returns = return_node.map(|r| self.short_text(r));
        let returns_expr = returns.as_deref().and_then(annotation_target);
        let body = g.field(node, g.field_body);
        let docstring = body.and_then(|b| self.docstring_of_block(b));
        let id = u32::try_from(self.facts.functions.len()).unwrap_or(u32::MAX);
        let local_path = self.local_path(&name);
        let depth = self.block_depth;
        self.facts.complexity.max_def_depth = self.facts.complexity.max_def_depth.max(depth);

        self.bind(&name, LocalValue::Function(id));
        let scope = ScopeRef::Function(id);
        let mut self_name = None;
        let mut bindings = Vec::with_capacity(params.len());
        for (position, param) in params.iter().enumerate() {
            if param.name.is_empty() {
                continue;
            }
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            let value = if position == 0
                && param.kind == ParamKind::Normal
                && matches!(kind, FunctionKind::Method | FunctionKind::ClassMethod)
            {
                self_name = Some(param.name.clone());
                if kind == FunctionKind::ClassMethod {
                    LocalValue::ClsParam
                } else {
                    LocalValue::SelfParam
                }
            } else if let Some(target) = param.annotation.as_deref().and_then(annotation_target) {
                LocalValue::Instance(target)
            } else {
                LocalValue::Param(position)
            };
            bindings.push(Binding {
                scope,
                name: param.name.clone(),
                value,
            });
        }
        self.facts.bindings.extend(bindings);
        self.facts.functions.push(FunctionFacts {
            name,
            local_path,
            parent,
            kind,
            params,
            returns,
            returns_expr,
            decorators,
            is_async,
            docstring,
            span: outer,
            complexity: Complexity {
                branches: 0,
                max_def_depth: depth,
            },
            called_params: Vec::new(),
        });
        if let Some(body) = body {
            self.pending.push(PendingScope {
                body_node: body.id(),
                frame: Frame {
                    scope,
                    end_node: body.id(),
                    self_name,
                    class: enclosing_class,
                },
            });
        }
    }

    fn parameters(&self, node: Node<'_>) -> Vec<Param> {
        let g = self.g;
        let mut params = Vec::new();
        let mut keyword_only = false;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            let normal = if keyword_only {
                ParamKind::KeywordOnly
            } else {
                ParamKind::Normal
            };
            let (name, kind, annotation, default) = match g.kind(child) {
                Kind::Identifier => (self.text(child), normal, None, None),
                Kind::TypedParameter => {
                    let annotation = g.field(child, g.field_type).map(|t| self.short_text(t));
                    let inner = child.named_child(0);
                    let (name, kind) = match inner.map(|n| (n, g.kind(n))) {
                        Some((n, Kind::ListSplatPattern)) => {
                            keyword_only = true;
                            (self.splat_name(n), ParamKind::VarPositional)
                        }
                        Some((n, Kind::DictionarySplatPattern)) => {
                            (self.splat_name(n), ParamKind::VarKeyword)
                        }
                        Some((n, _)) => (self.text(n), normal),
                        None => ("", normal),
                    };
                    (name, kind, annotation, None)
                }
                Kind::DefaultParameter | Kind::TypedDefaultParameter => {
                    let name = g.field(child, g.field_name).map_or("", |n| self.text(n));
                    let annotation = g.field(child, g.field_type).map(|t| self.short_text(t));
                    let default = g.field(child, g.field_value).map(|v| self.short_text(v));
                    (name, normal, annotation, default)
                }
                Kind::ListSplatPattern => {
                    keyword_only = true;
                    (self.splat_name(child), ParamKind::VarPositional, None, None)
                }
                Kind::DictionarySplatPattern => {
                    (self.splat_name(child), ParamKind::VarKeyword, None, None)
                }
                Kind::KeywordSeparator => {
                    keyword_only = true;
                    continue;
                }
                _ => continue,
            };
            params.push(Param {
                name: if is_identifier(name) {
                    name.to_string()
                } else {
                    String::new()
                },
                kind,
                annotation,
                default,
            });
        }
        params
    }

    fn splat_name(&self, node: Node<'_>) -> &'s str {
        node.named_child(0).map_or("", |n| self.text(n))
    }

    fn enter_class(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(name_node) = g.field(node, g.field_name) else {
            return;
        };
        let name = self.text(name_node).to_string();
        let (outer, decorators) = self.decorations(node);
        let mut bases = Vec::new();
        if let Some(list) = g.field(node, g.field_superclasses) {
            let mut cursor = list.walk();
            for base in list.named_children(&mut cursor) {
                if g.kind(base) == Kind::KeywordArgument {
                    continue;
                }
                bases.push((self.short_text(base), self.expr(base)));
            }
        }
        let body = g.field(node, g.field_body);
        let docstring = body.and_then(|b| self.docstring_of_block(b));
        let id = u32::try_from(self.facts.classes.len()).unwrap_or(u32::MAX);
        let local_path = self.local_path(&name);
        let parent = self.scope();
        self.bind(&name, LocalValue::Class(id));
        self.facts.classes.push(ClassFacts {
            name,
            local_path,
            parent,
            bases,
            decorators,
            docstring,
            span: outer,
            attrs: Vec::new(),
        });
        if let Some(body) = body {
            self.pending.push(PendingScope {
                body_node: body.id(),
                frame: Frame {
                    scope: ScopeRef::Class(id),
                    end_node: body.id(),
                    self_name: None,
                    class: None,
                },
            });
        }
    }

    /// `@name` and `@a.b` call the decorator with the function; `@f(...)` is a
    /// call node the walk records anyway.
    fn enter_decorator(&mut self, node: Node<'_>) {
        let Some(expr_node) = node.named_child(0) else {
            return;
        };
        if matches!(self.g.kind(expr_node), Kind::Identifier | Kind::Attribute) {
            let callee = self.expr(expr_node);
            self.push_call(callee, node, Vec::new());
        }
    }

    fn enter_call(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(function) = g.field(node, g.field_function) else {
            return;
        };
        let callee = self.expr(function);
        let mut args = Vec::new();
        if let Some(list) = g.field(node, g.field_arguments) {
            let mut cursor = list.walk();
            let mut position = Some(0u32);
            for arg in list.named_children(&mut cursor) {
                match g.kind(arg) {
                    Kind::KeywordArgument => {
                        let keyword = g.field(arg, g.field_name).map(|n| self.text(n).to_string());
                        if let Some(value) = g.field(arg, g.field_value)
                            && matches!(g.kind(value), Kind::Identifier | Kind::Attribute)
                        {
                            args.push(Arg {
                                position: None,
                                keyword,
                                value: self.expr(value),
                            });
                        }
                    }
                    Kind::ListSplat | Kind::DictionarySplat => position = None,
                    Kind::Comment => {}
                    kind => {
                        if let Some(p) = position {
                            if matches!(kind, Kind::Identifier | Kind::Attribute) {
                                args.push(Arg {
                                    position: Some(p),
                                    keyword: None,
                                    value: self.expr(arg),
                                });
                            }
                            position = Some(p + 1);
                        }
                    }
                }
            }
        }
        if let Expr::Name(name) = &callee {
            self.note_param_call(name);
        }
        if let Expr::Attr(receiver, verb) = &callee
            && let Some(list) = g.field(node, g.field_arguments)
        {
            self.mount_call(receiver, verb, list);
        }
        self.push_call(callee, node, args);
    }

    /// Records that the current function calls one of its own parameters.
    fn note_param_call(&mut self, name: &str) {
        let Some(ScopeRef::Function(f)) = self.function_frame().map(|f| f.scope) else {
            return;
        };
        let Some(function) = self.facts.functions.get_mut(f as usize) else {
            return;
        };
        if let Some(position) = function.params.iter().position(|p| p.name == name) {
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            if !function.called_params.contains(&position) {
                function.called_params.push(position);
            }
        }
    }

    fn push_call(&mut self, callee: Expr, node: Node<'_>, args: Vec<Arg>) {
        let scope = self.scope();
        self.facts.calls.push(CallFacts {
            scope,
            callee,
            line: line_of(node.start_position().row),
            args,
        });
    }

    fn enter_import(&mut self, node: Node<'_>) {
        use crate::model::ImportKind;
        let g = self.g;
        let line = line_of(node.start_position().row);
        let scope = self.scope();
        let in_try = self.try_depth > 0;
        let kind = g.kind(node);
        let (module, level) = if kind == Kind::Import {
            (String::new(), 0)
        } else {
            match g.field(node, g.field_module_name) {
                Some(m) if g.kind(m) == Kind::RelativeImport => {
                    let mut level = 0;
                    let mut module = String::new();
                    let mut cursor = m.walk();
                    for child in m.named_children(&mut cursor) {
                        match g.kind(child) {
                            Kind::ImportPrefix => {
                                level = u32::try_from(self.text(child).trim().len()).unwrap_or(0)
                            }
                            Kind::DottedName => module = compact(self.text(child)),
                            _ => {}
                        }
                    }
                    (module, level)
                }
                Some(m) => (compact(self.text(m)), 0),
                None if kind == Kind::FutureImport => ("__future__".to_string(), 0),
                None => return,
            }
        };
        let module_name_id = g.field(node, g.field_module_name).map(|m| m.id());
        let mut cursor = node.walk();
        let mut imports = Vec::new();
        for child in node.named_children(&mut cursor) {
            if Some(child.id()) == module_name_id {
                continue;
            }
            let (name, alias) = match g.kind(child) {
                Kind::DottedName => (compact(self.text(child)), None),
                Kind::AliasedImport => {
                    let name = g.field(child, g.field_name).map(|n| compact(self.text(n)));
                    let alias = g
                        .field(child, g.field_alias)
                        .map(|a| self.text(a).to_string());
                    match name {
                        Some(name) => (name, alias),
                        None => continue,
                    }
                }
                Kind::WildcardImport => {
                    imports.push(ImportFacts {
                        kind: ImportKind::Star,
                        module: module.clone(),
                        level,
                        name: None,
                        alias: None,
                        line,
                        scope,
                        in_try,
                    });
                    continue;
                }
                _ => continue,
            };
            if name.is_empty() {
                continue;
            }
            imports.push(if kind == Kind::Import {
                ImportFacts {
                    kind: ImportKind::Import,
                    module: name,
                    level: 0,
                    name: None,
                    alias,
                    line,
                    scope,
                    in_try,
                }
            } else {
                ImportFacts {
                    kind: ImportKind::From,
                    module: module.clone(),
                    level,
                    name: Some(name),
                    alias,
                    line,
                    scope,
                    in_try,
                }
            });
        }
        for import in imports {
            let index = u32::try_from(self.facts.imports.len()).unwrap_or(u32::MAX);
            let bound = match (&import.alias, &import.name, import.kind) {
                (_, _, ImportKind::Star) => None,
                (Some(alias), _, _) => Some(alias.clone()),
                (None, Some(name), _) => Some(name.clone()),
                (None, None, _) => import.module.split('.').next().map(str::to_string),
            };
            if let Some(bound) = bound {
                self.bind(&bound, LocalValue::Import(index));
            }
            self.facts.imports.push(import);
        }
    }

    fn enter_assignment(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(left) = g.field(node, g.field_left) else {
            return;
        };
        let annotation = g.field(node, g.field_type).map(|t| self.text(t));
        let right = g.field(node, g.field_right);
        let value = match (annotation.and_then(annotation_target), right) {
            (Some(target), _) => LocalValue::Instance(target),
            (None, Some(r)) => match g.kind(r) {
                Kind::Call => match g.field(r, g.field_function) {
                    Some(f) => LocalValue::CallResult(self.expr(f)),
                    None => LocalValue::Opaque,
                },
                Kind::Identifier | Kind::Attribute => LocalValue::Alias(self.expr(r)),
                _ => LocalValue::Opaque,
            },
            (None, None) => LocalValue::Opaque,
        };
        match g.kind(left) {
            Kind::Identifier => {
                let name = self.text(left);
                if self.scope() == ScopeRef::Module {
                    match (name, right) {
                        ("__all__", _) => self.facts.all = right.map(|r| self.string_list(r)),
                        ("urlpatterns", Some(r)) => self.url_patterns(r),
                        (_, Some(r)) if g.kind(r) == Kind::Call => self.router_assignment(name, r),
                        _ => {}
                    }
                }
                self.bind(name, value);
            }
            Kind::Attribute => self.attribute_assignment(left, value),
            _ => self.bind_pattern(left),
        }
    }

    fn enter_augmented_assignment(&mut self, node: Node<'_>) {
        let g = self.g;
        if self.scope() != ScopeRef::Module {
            return;
        }
        let (Some(left), Some(right)) = (g.field(node, g.field_left), g.field(node, g.field_right))
        else {
            return;
        };
        match self.text(left) {
            "__all__" => {
                let more = self.string_list(right);
                self.facts.all.get_or_insert_with(Vec::new).extend(more);
            }
            "urlpatterns" => self.url_patterns(right),
            _ => {}
        }
    }

    /// `self.x = value` in a method, or `x = value` in a class body, records a typed attribute.
    fn attribute_assignment(&mut self, left: Node<'_>, value: LocalValue) {
        let g = self.g;
        let (Some(object), Some(attr)) = (
            g.field(left, g.field_object),
            g.field(left, g.field_attribute),
        ) else {
            return;
        };
        let Some(frame) = self.function_frame() else {
            return;
        };
        let (Some(self_name), Some(class)) = (frame.self_name.as_deref(), frame.class) else {
            return;
        };
        if self.text(object) != self_name {
            return;
        }
        let scope = frame.scope;
        // `self.client = client` where the parameter is annotated keeps the annotation.
        let value = match value {
            LocalValue::Alias(Expr::Name(name)) => self
                .facts
                .bindings
                .iter()
                .rev()
                .find(|b| b.scope == scope && b.name == name)
                .map_or(LocalValue::Opaque, |b| b.value.clone()),
            other => other,
        };
        if matches!(value, LocalValue::Opaque | LocalValue::Param(_)) {
            return;
        }
        let name = self.text(attr).to_string();
        if let Some(class) = self.facts.classes.get_mut(class as usize) {
            class.attrs.push((name, value, scope));
        }
    }

    fn bind_pattern(&mut self, pattern: Node<'_>) {
        let mut cursor = pattern.walk();
        let names: Vec<&str> = pattern
            .named_children(&mut cursor)
            .filter(|c| self.g.kind(*c) == Kind::Identifier)
            .map(|c| self.text(c))
            .collect();
        for name in names {
            self.bind(name, LocalValue::Opaque);
        }
    }

    fn string_list(&self, node: Node<'_>) -> Vec<String> {
        if !matches!(self.g.kind(node), Kind::List | Kind::Tuple) {
            return Vec::new();
        }
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .filter(|c| self.g.kind(*c) == Kind::String)
            .filter_map(|c| self.string_value(c))
            .collect()
    }

    /// Turns a name, attribute chain or call into an [`Expr`].
    fn expr(&self, node: Node<'_>) -> Expr {
        self.expr_at(node, 0)
    }

    fn expr_at(&self, node: Node<'_>, depth: u32) -> Expr {
        let g = self.g;
        if depth > MAX_EXPR_DEPTH {
            return Expr::Other(self.short_text(node));
        }
        match g.kind(node) {
            Kind::Identifier => Expr::Name(self.text(node).to_string()),
            Kind::Attribute => match (
                g.field(node, g.field_object),
                g.field(node, g.field_attribute),
            ) {
                (Some(object), Some(attr)) => Expr::Attr(
                    Box::new(self.expr_at(object, depth + 1)),
                    self.text(attr).to_string(),
                ),
                _ => Expr::Other(self.short_text(node)),
            },
            Kind::Call => match g.field(node, g.field_function) {
                Some(f) if g.kind(f) == Kind::Identifier && self.text(f) == "super" => Expr::Super,
                Some(f) => Expr::Call(Box::new(self.expr_at(f, depth + 1))),
                None => Expr::Other(self.short_text(node)),
            },
            Kind::ParenthesizedExpression => match node.named_child(0) {
                Some(inner) => self.expr_at(inner, depth + 1),
                None => Expr::Other(self.short_text(node)),
            },
            _ => Expr::Other(self.short_text(node)),
        }
    }

    /// The docstring of a block (or module): its first statement, if a string.
    fn docstring_of_block(&self, block: Node<'_>) -> Option<String> {
        let mut cursor = block.walk();
        let first = block
            .named_children(&mut cursor)
            .find(|c| self.g.kind(*c) != Kind::Comment)?;
        if self.g.kind(first) != Kind::ExpressionStatement {
            return None;
        }
        let string = first.named_child(0)?;
        let raw = match self.g.kind(string) {
            Kind::String => self.string_value(string)?,
            Kind::ConcatenatedString => {
                let mut cursor = string.walk();
                string
                    .named_children(&mut cursor)
                    .filter_map(|s| self.string_value(s))
                    .collect()
            }
            _ => return None,
        };
        let cleaned = clean_docstring(&raw);
        (!cleaned.is_empty()).then_some(cleaned)
    }

    /// The text between a string's quotes (escapes are left as written).
    fn string_value(&self, node: Node<'_>) -> Option<String> {
        let mut cursor = node.walk();
        let mut start = None;
        let mut end = None;
        for child in node.children(&mut cursor) {
            match self.g.kind(child) {
                Kind::StringStart => start = Some(child.end_byte()),
                Kind::StringEnd => end = Some(child.start_byte()),
                _ => {}
            }
        }
        let (start, end) = (start?, end?);
        self.src.get(start..end).map(str::to_string)
    }
}

/// What an annotation says the value is an instance of, when it names one class:
/// `Foo`, `mod.Foo`, `"Foo"`, `Optional[Foo]`, `Foo | None`.
pub(crate) fn annotation_target(text: &str) -> Option<Expr> {
    let text = text.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    if let Some(inner) = text
        .strip_prefix("Optional[")
        .or_else(|| text.strip_prefix("typing.Optional["))
        .and_then(|rest| rest.strip_suffix(']'))
    {
        return annotation_target(inner);
    }
    if text.contains('|') {
        let mut parts = text.split('|').map(str::trim).filter(|p| *p != "None");
        let only = parts.next()?;
        return if parts.next().is_none() {
            annotation_target(only)
        } else {
            None
        };
    }
    Expr::dotted(text)
}

fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

pub(crate) fn truncate(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn line_of(row: usize) -> u32 {
    u32::try_from(row).map_or(u32::MAX, |r| r.saturating_add(1))
}

pub(crate) fn count_lines(text: &str) -> u32 {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    let lines = if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    };
    u32::try_from(lines).unwrap_or(u32::MAX)
}

/// Removes the common indentation of a docstring, like `inspect.cleandoc`.
pub(crate) fn clean_docstring(raw: &str) -> String {
    let mut lines = raw.lines();
    let first = lines.next().unwrap_or("").trim();
    let rest: Vec<&str> = lines.collect();
    let indent = rest
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<&str> = Vec::with_capacity(rest.len() + 1);
    out.push(first);
    for line in &rest {
        out.push(
            line.get(indent..)
                .unwrap_or_else(|| line.trim_start())
                .trim_end(),
        );
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.is_empty()) {
        out.remove(0);
    }
    out.join("\n")
}

/// Splits the cost of one file into parsing and extraction (for the measure tool).
#[doc(hidden)]
pub fn time_parse_and_extract(text: &str) -> Option<(std::time::Duration, std::time::Duration)> {
    let mut parser = PythonParser::new().ok()?;
    let t = std::time::Instant::now();
    let tree = parser.parse_tree(text)?;
    let parse = t.elapsed();
    let t = std::time::Instant::now();
    let facts = Extractor::new(text).run(&tree);
    std::hint::black_box(facts);
    Some((parse, t.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(src: &str) -> FileFacts {
        let mut parser = PythonParser::new().unwrap();
        parser.extract(src).unwrap()
    }

    #[test]
    fn functions_classes_and_docstrings() {
        let f = facts(
            "\"\"\"Module doc.\n\n    More.\"\"\"\nclass A(B, metaclass=M):\n    '''Class doc.'''\n    def m(self, x: int = 1, *args, y, **kw) -> 'A':\n        '''Method.'''\n        return x\n\nasync def top(): pass\n",
        );
        assert_eq!(f.docstring.as_deref(), Some("Module doc.\n\nMore."));
        assert_eq!(f.classes.len(), 1);
        assert_eq!(f.classes[0].bases.len(), 1);
        assert_eq!(f.classes[0].docstring.as_deref(), Some("Class doc."));
        let m = &f.functions[0];
        assert_eq!(m.local_path, "A.m");
        assert_eq!(m.kind, FunctionKind::Method);
        let kinds: Vec<ParamKind> = m.params.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                ParamKind::Normal,
                ParamKind::Normal,
                ParamKind::VarPositional,
                ParamKind::KeywordOnly,
                ParamKind::VarKeyword
            ]
        );
        assert_eq!(m.params[1].annotation.as_deref(), Some("int"));
        assert_eq!(m.params[1].default.as_deref(), Some("1"));
        assert_eq!(m.returns_expr, Some(Expr::Name("A".into())));
        assert!(f.functions[1].is_async);
    }

    #[test]
    fn imports_of_every_form() {
        let f = facts(
            "import a.b as c, d\nfrom ..x.y import z as w, v\nfrom . import q\nfrom m import *\ntry:\n    import fast\nexcept ImportError:\n    fast = None\ndef f():\n    import inner\n",
        );
        type Row = (String, u32, Option<String>, Option<String>, bool);
        let summary: Vec<Row> = f
            .imports
            .iter()
            .map(|i| {
                (
                    i.module.clone(),
                    i.level,
                    i.name.clone(),
                    i.alias.clone(),
                    i.in_try,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a.b".into(), 0, None, Some("c".into()), false),
                ("d".into(), 0, None, None, false),
                ("x.y".into(), 2, Some("z".into()), Some("w".into()), false),
                ("x.y".into(), 2, Some("v".into()), None, false),
                ("".into(), 1, Some("q".into()), None, false),
                ("m".into(), 0, None, None, false),
                ("fast".into(), 0, None, None, true),
                ("inner".into(), 0, None, None, false),
            ]
        );
        assert_eq!(f.imports[7].scope, ScopeRef::Function(0));
    }

    #[test]
    fn calls_and_complexity() {
        let f = facts(
            "def f(cb):\n    if x:\n        for i in y:\n            cb(i)\n    return [g(a.b) for a in z]\n",
        );
        assert_eq!(f.functions[0].complexity.branches, 3);
        assert_eq!(f.functions[0].called_params, vec![0]);
        let callees: Vec<String> = f.calls.iter().map(|c| c.callee.render()).collect();
        assert_eq!(callees, ["cb", "g"]);
        assert_eq!(f.calls[1].args[0].value.render(), "a.b");
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let src = format!("x = {}1{}\n", "(".repeat(50_000), ")".repeat(50_000));
        let f = facts(&src);
        assert!(f.calls.is_empty());
        let src = format!("x = a{}\n", ".b".repeat(20_000));
        let _ = facts(&src);
        let src = format!("f(){}\n", "()".repeat(20_000));
        let f = facts(&src);
        assert!(!f.calls.is_empty());
    }

    #[test]
    fn annotations() {
        assert_eq!(annotation_target("Optional[a.B]"), Expr::dotted("a.B"));
        assert_eq!(annotation_target("'B' "), Expr::dotted("B"));
        assert_eq!(annotation_target("B | None"), Expr::dotted("B"));
        assert_eq!(annotation_target("list[B]"), None);
        assert_eq!(annotation_target("A | B"), None);
    }
}
