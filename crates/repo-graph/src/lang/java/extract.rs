//! Per-file extraction of Java facts from a tree-sitter syntax tree.
//!
//! The shape mirrors [`crate::lang::python`]: one iterative pre-order walk with a
//! [`tree_sitter::TreeCursor`] fills a [`JavaFacts`], and the facts depend
//! only on the file's bytes. Java needs more than Python's name bindings:
//! declared types of fields, parameters and locals (with the byte range in
//! which each local is visible), call sites with their arity, and the type
//! names the file mentions. Everything that needs other files (which type a
//! name denotes, which overload a call picks) happens in
//! [`crate::lang::java::resolve`].

use std::sync::OnceLock;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use tree_sitter::{Language, Node, Parser, Tree};

use crate::lang::python::{count_lines, truncate};
use crate::model::{BaseRelation, Complexity, FunctionKind, JavaTypeKind, Modifier, Span};
use crate::routes::{Framework, HttpMethod};

/// Longest text kept verbatim for annotations and unresolved expressions.
const MAX_TEXT: usize = 120;
/// Deepest receiver chain turned into a [`JExpr`]; deeper is [`JExpr::Other`].
const MAX_EXPR_DEPTH: u32 = 48;
/// Types and methods nested deeper than this are not recorded as entities
/// (their code counts for the deepest recorded one): each level lengthens
/// every qualified name below it, so hostile nesting would cost quadratic
/// memory.
const MAX_ENTITY_DEPTH: usize = 200;
/// Prunable nodes shorter than this are scanned even inside a scanned one.
const SHORT_NODE: usize = 200;
/// `path(...)` route groups nested deeper than this are ignored.
const MAX_PATH_GROUPS: usize = 64;
/// Name of constructors in qualified names (as in the JVM).
pub(crate) const CONSTRUCTOR: &str = "<init>";

/// A lexical scope of a Java file: the compilation unit, or a type or method
/// by local index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum JScope {
    Unit,
    Type(u32),
    Method(u32),
}

/// A receiver or argument expression, as far as resolution can use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum JExpr {
    /// A simple name: a variable, a type or the first segment of a package.
    Name(String),
    /// `base.name` (`Outer.this` is `Field(Outer, "this")`).
    Field(Box<JExpr>, String),
    /// The result of calling `name` with `arity` arguments. `start` and
    /// `end` are the bytes of the invocation, which identify it: it is also
    /// a call site of its own ([`JCall::pos`], [`JCall::end`]), and
    /// resolution evaluates each invocation once however long the chain.
    Invoke {
        receiver: Option<Box<JExpr>>,
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

impl JExpr {
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
            JExpr::Name(n) => out.push_str(n),
            JExpr::Field(base, name) => {
                base.render_into(out, depth + 1);
                out.push('.');
                out.push_str(name);
            }
            JExpr::Invoke { receiver, name, .. } => {
                if let Some(r) = receiver {
                    r.render_into(out, depth + 1);
                    out.push('.');
                }
                out.push_str(name);
                out.push_str("()");
            }
            JExpr::New(t) => {
                out.push_str("new ");
                out.push_str(t);
                out.push_str("()");
            }
            JExpr::Cast(t) => {
                out.push_str("((");
                out.push_str(t);
                out.push_str(") …)");
            }
            JExpr::Type(t) => out.push_str(t),
            JExpr::Str => out.push_str("\"…\""),
            JExpr::This => out.push_str("this"),
            JExpr::Super => out.push_str("super"),
            JExpr::Other(text) => out.push_str(text),
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
pub(crate) enum JCallee {
    /// `name(...)` or `receiver.name(...)`.
    Method {
        receiver: Option<JExpr>,
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
    Ref { target: JExpr, name: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JCall {
    pub scope: JScope,
    /// Start byte of the call, to tell which locals are visible.
    pub pos: u32,
    /// End byte of the call (with `pos`, the invocation's identity).
    pub end: u32,
    pub line: u32,
    pub callee: JCallee,
    /// Number of arguments (unknown for method references: 0).
    pub arity: u32,
    /// Literal kinds of the arguments; empty when no argument is a literal.
    pub args: Vec<ArgKind>,
}

/// The type of a local variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum JLocalType {
    /// A declared type, erased (`List<Foo>` → `List`, arrays keep `[]`).
    Declared(String),
    /// `var x = expr;`
    Inferred(JExpr),
    /// A lambda parameter without a type.
    Untyped,
}

/// A local variable, parameter of a lambda, catch or pattern variable,
/// visible from `start` to `end` (bytes) inside `scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JLocal {
    pub scope: JScope,
    pub name: String,
    pub ty: JLocalType,
    pub start: u32,
    pub end: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JImport {
    /// The dotted name without `.*`.
    pub path: String,
    pub is_static: bool,
    pub on_demand: bool,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JTypeParam {
    pub name: String,
    /// The first bound, erased.
    pub bound: Option<String>,
    /// As written, e.g. `T extends Comparable<T>`.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JSuper {
    /// As written.
    pub text: String,
    /// Erased (`Base<T>` → `Base`).
    pub name: String,
    pub relation: BaseRelation,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JField {
    pub name: String,
    /// As written (resolution erases it with [`erase`]).
    pub type_text: String,
    pub modifiers: Vec<Modifier>,
    pub annotations: Vec<String>,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JTypeFacts {
    pub name: String,
    /// Dotted path inside the compilation unit, e.g. `Outer.Inner` or
    /// `App.start.$1` for an anonymous class in method `start`.
    pub local_path: String,
    pub parent: JScope,
    pub kind: JavaTypeKind,
    pub anonymous: bool,
    pub modifiers: Vec<Modifier>,
    pub annotations: Vec<String>,
    pub type_params: Vec<JTypeParam>,
    pub supers: Vec<JSuper>,
    pub fields: Vec<JField>,
    pub docstring: Option<String>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JParam {
    pub name: String,
    /// As written (`String...` for varargs, `int[]` for `int x[]`).
    pub type_text: String,
    pub varargs: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JMethodFacts {
    /// The method name, or [`CONSTRUCTOR`].
    pub name: String,
    /// Dotted path inside the compilation unit; overloaded methods end in
    /// their erased parameter types, e.g. `App.print(int)`.
    pub local_path: String,
    pub parent: JScope,
    pub kind: FunctionKind,
    pub params: Vec<JParam>,
    /// The return type as written (`None` for constructors).
    pub returns: Option<String>,
    pub modifiers: Vec<Modifier>,
    pub annotations: Vec<String>,
    pub type_params: Vec<JTypeParam>,
    pub throws: Vec<String>,
    pub has_body: bool,
    pub docstring: Option<String>,
    pub span: Span,
    pub complexity: Complexity,
}

/// The handler of a route, before resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum JHandler {
    /// An annotated method of this file.
    Method(u32),
    /// An inline lambda in this scope.
    Lambda(JScope),
    /// A method reference `target::name`.
    Ref { target: JExpr, name: String },
    /// An object whose `handle` method serves the route.
    Object(JExpr),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JRoute {
    pub framework: Framework,
    pub method: HttpMethod,
    pub path: String,
    pub handler: JHandler,
    /// Scope the handler expression is evaluated in.
    pub scope: JScope,
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
    pub imports: Vec<JImport>,
    pub types: Vec<JTypeFacts>,
    pub methods: Vec<JMethodFacts>,
    pub locals: Vec<JLocal>,
    pub calls: Vec<JCall>,
    /// Distinct type names written in the file (dotted, erased), for the
    /// module dependency graph.
    pub type_names: Vec<String>,
    pub routes: Vec<JRoute>,
}

/// Node kinds the walk reacts to, looked up through a table indexed by kind id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Other,
    Package,
    Import,
    ClassDecl,
    InterfaceDecl,
    EnumDecl,
    RecordDecl,
    AnnotationDecl,
    EnumConstant,
    MethodDecl,
    ConstructorDecl,
    CompactConstructorDecl,
    AnnotationElementDecl,
    FieldDecl,
    LocalVarDecl,
    Modifiers,
    MarkerAnnotation,
    Annotation,
    TypeBody,
    Block,
    LocalScope,
    MethodInvocation,
    ObjectCreation,
    ExplicitConstructorInvocation,
    MethodReference,
    Lambda,
    EnhancedFor,
    For,
    CatchClause,
    CatchFormalParameter,
    Resource,
    Instanceof,
    TypePattern,
    Branch,
    SwitchLabel,
    BlockComment,
    LineComment,
    StringLiteral,
    CharacterLiteral,
    IntegerLiteral,
    FloatLiteral,
    BoolLiteral,
    NullLiteral,
    TypeIdentifier,
    ScopedTypeIdentifier,
    Identifier,
    FieldAccess,
    This,
    Super,
    ParenthesizedExpression,
    Cast,
    FormalParameters,
    FormalParameter,
    SpreadParameter,
    InferredParameters,
    VariableDeclarator,
    TypeParameters,
    TypeParameter,
    TypeBound,
    TypeList,
    ExtendsInterfaces,
    Asterisk,
    ElementValuePair,
    ElementValueArray,
    Throws,
    ClassBody,
    ArgumentList,
    /// A type other than a plain or scoped type identifier; holds no code.
    TypeNode,
    /// An array initializer or binary expression: pruned when its text
    /// shows it holds no call, lambda, method reference or ternary.
    Prunable,
    AnonymousNew,
    AnonymousDefault,
}

struct Grammar {
    language: Language,
    kinds: Vec<Kind>,
    field_name: u16,
    field_body: u16,
    field_type: u16,
    field_type_parameters: u16,
    field_superclass: u16,
    field_interfaces: u16,
    field_parameters: u16,
    field_declarator: Option<std::num::NonZeroU16>,
    field_value: u16,
    field_object: u16,
    field_arguments: u16,
    field_field: u16,
    field_constructor: u16,
    field_dimensions: u16,
    field_key: u16,
}

fn grammar() -> &'static Grammar {
    static GRAMMAR: OnceLock<Grammar> = OnceLock::new();
    GRAMMAR.get_or_init(|| {
        let language: Language = tree_sitter_java::LANGUAGE.into();
        let count = language.node_kind_count();
        let kinds = (0..count)
            .map(|id| {
                let id = u16::try_from(id).unwrap_or(u16::MAX);
                let named = language.node_kind_is_named(id);
                match (language.node_kind_for_id(id).unwrap_or(""), named) {
                    ("package_declaration", true) => Kind::Package,
                    ("import_declaration", true) => Kind::Import,
                    ("class_declaration", true) => Kind::ClassDecl,
                    ("interface_declaration", true) => Kind::InterfaceDecl,
                    ("enum_declaration", true) => Kind::EnumDecl,
                    ("record_declaration", true) => Kind::RecordDecl,
                    ("annotation_type_declaration", true) => Kind::AnnotationDecl,
                    ("enum_constant", true) => Kind::EnumConstant,
                    ("method_declaration", true) => Kind::MethodDecl,
                    ("constructor_declaration", true) => Kind::ConstructorDecl,
                    ("compact_constructor_declaration", true) => Kind::CompactConstructorDecl,
                    ("annotation_type_element_declaration", true) => Kind::AnnotationElementDecl,
                    ("field_declaration" | "constant_declaration", true) => Kind::FieldDecl,
                    ("local_variable_declaration", true) => Kind::LocalVarDecl,
                    ("modifiers", true) => Kind::Modifiers,
                    ("marker_annotation", true) => Kind::MarkerAnnotation,
                    ("annotation", true) => Kind::Annotation,
                    ("class_body", true) => Kind::ClassBody,
                    ("interface_body" | "enum_body" | "annotation_type_body", true) => {
                        Kind::TypeBody
                    }
                    ("block" | "constructor_body", true) => Kind::Block,
                    (
                        "switch_block_statement_group"
                        | "switch_rule"
                        | "try_with_resources_statement",
                        true,
                    ) => Kind::LocalScope,
                    ("method_invocation", true) => Kind::MethodInvocation,
                    ("object_creation_expression", true) => Kind::ObjectCreation,
                    ("explicit_constructor_invocation", true) => {
                        Kind::ExplicitConstructorInvocation
                    }
                    ("method_reference", true) => Kind::MethodReference,
                    ("lambda_expression", true) => Kind::Lambda,
                    ("enhanced_for_statement", true) => Kind::EnhancedFor,
                    ("for_statement", true) => Kind::For,
                    ("catch_clause", true) => Kind::CatchClause,
                    ("catch_formal_parameter", true) => Kind::CatchFormalParameter,
                    ("resource", true) => Kind::Resource,
                    ("instanceof_expression", true) => Kind::Instanceof,
                    ("type_pattern", true) => Kind::TypePattern,
                    (
                        "if_statement" | "while_statement" | "do_statement" | "ternary_expression",
                        true,
                    ) => Kind::Branch,
                    ("switch_label", true) => Kind::SwitchLabel,
                    ("block_comment", true) => Kind::BlockComment,
                    ("line_comment", true) => Kind::LineComment,
                    ("string_literal", true) => Kind::StringLiteral,
                    ("character_literal", true) => Kind::CharacterLiteral,
                    (
                        "decimal_integer_literal"
                        | "hex_integer_literal"
                        | "octal_integer_literal"
                        | "binary_integer_literal",
                        true,
                    ) => Kind::IntegerLiteral,
                    ("decimal_floating_point_literal" | "hex_floating_point_literal", true) => {
                        Kind::FloatLiteral
                    }
                    ("true" | "false", true) => Kind::BoolLiteral,
                    ("null_literal", true) => Kind::NullLiteral,
                    ("type_identifier", true) => Kind::TypeIdentifier,
                    ("scoped_type_identifier", true) => Kind::ScopedTypeIdentifier,
                    ("identifier", true) => Kind::Identifier,
                    ("field_access", true) => Kind::FieldAccess,
                    ("this", true) => Kind::This,
                    ("super", true) => Kind::Super,
                    ("parenthesized_expression", true) => Kind::ParenthesizedExpression,
                    ("cast_expression", true) => Kind::Cast,
                    ("formal_parameters", true) => Kind::FormalParameters,
                    ("formal_parameter", true) => Kind::FormalParameter,
                    ("spread_parameter", true) => Kind::SpreadParameter,
                    ("inferred_parameters", true) => Kind::InferredParameters,
                    ("variable_declarator", true) => Kind::VariableDeclarator,
                    ("type_parameters", true) => Kind::TypeParameters,
                    ("type_parameter", true) => Kind::TypeParameter,
                    ("type_bound", true) => Kind::TypeBound,
                    ("type_list", true) => Kind::TypeList,
                    ("extends_interfaces", true) => Kind::ExtendsInterfaces,
                    ("asterisk", true) => Kind::Asterisk,
                    ("element_value_pair", true) => Kind::ElementValuePair,
                    ("element_value_array_initializer", true) => Kind::ElementValueArray,
                    ("throws", true) => Kind::Throws,
                    ("argument_list", true) => Kind::ArgumentList,
                    (
                        "generic_type"
                        | "array_type"
                        | "integral_type"
                        | "floating_point_type"
                        | "boolean_type"
                        | "void_type"
                        | "annotated_type"
                        | "type_arguments"
                        | "dimensions"
                        | "wildcard",
                        true,
                    ) => Kind::TypeNode,
                    (
                        "array_initializer"
                        | "binary_expression"
                        | "assignment_expression"
                        | "array_access"
                        | "unary_expression"
                        | "update_expression"
                        | "return_statement"
                        | "expression_statement",
                        true,
                    ) => Kind::Prunable,
                    ("new", false) => Kind::AnonymousNew,
                    ("default", false) => Kind::AnonymousDefault,
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
            field_name: field("name"),
            field_body: field("body"),
            field_type: field("type"),
            field_type_parameters: field("type_parameters"),
            field_superclass: field("superclass"),
            field_interfaces: field("interfaces"),
            field_parameters: field("parameters"),
            field_declarator: language.field_id_for_name("declarator"),
            field_value: field("value"),
            field_object: field("object"),
            field_arguments: field("arguments"),
            field_field: field("field"),
            field_constructor: field("constructor"),
            field_dimensions: field("dimensions"),
            field_key: field("key"),
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

/// A tree-sitter parser configured for Java; one per thread.
pub(crate) struct JavaParser {
    parser: Parser,
}

impl JavaParser {
    pub(crate) fn new() -> Result<Self, crate::Error> {
        let mut parser = Parser::new();
        parser
            .set_language(&grammar().language)
            .map_err(|e| crate::Error::Parser(format!("Java: {e}")))?;
        Ok(Self { parser })
    }

    /// Parses only, for measuring the raw parse cost.
    pub(crate) fn parse_tree(&mut self, text: &str) -> Option<Tree> {
        self.parser.parse(text, None)
    }

    /// Parses `text` and extracts its facts (`None` only if tree-sitter gives up).
    pub(crate) fn extract(&mut self, text: &str) -> Option<JavaFacts> {
        let tree = self.parser.parse(text, None)?;
        Some(Extractor::new(text).run(&tree))
    }
}

/// An entity scope being walked, popped when the walk leaves `end_node`.
struct Frame {
    scope: JScope,
    end_node: usize,
}

/// A scope that opens when the walk reaches its body node.
struct PendingScope {
    body_node: usize,
    frame: Frame,
}

/// An annotation that may declare a route, with its arguments.
struct RouteAnnotation {
    name: String,
    line: u32,
    /// (key, string values, other values as written); key `None` for the
    /// single unnamed argument.
    args: Vec<(Option<String>, Vec<String>, Vec<String>)>,
}

impl RouteAnnotation {
    /// String values of the first of `keys` present (`None` stands for the
    /// unnamed argument); empty when none is given.
    fn strings(&self, keys: &[Option<&str>]) -> Vec<String> {
        for key in keys {
            if let Some((_, strings, _)) = self.args.iter().find(|(k, _, _)| k.as_deref() == *key) {
                return strings.clone();
            }
        }
        Vec::new()
    }

    fn others(&self, key: &str) -> &[String] {
        self.args
            .iter()
            .find(|(k, _, _)| k.as_deref() == Some(key))
            .map_or(&[], |(_, _, others)| others.as_slice())
    }
}

/// Simple names of annotations that can declare routes or route prefixes.
const ROUTE_ANNOTATIONS: &[&str] = &[
    "RequestMapping",
    "GetMapping",
    "PostMapping",
    "PutMapping",
    "DeleteMapping",
    "PatchMapping",
    "Path",
    "GET",
    "POST",
    "PUT",
    "DELETE",
    "PATCH",
    "HEAD",
    "OPTIONS",
    "Controller",
    "Get",
    "Post",
    "Put",
    "Delete",
    "Patch",
    "Head",
    "Options",
];

/// Keywords that name primitive types, never internal ones.
const PRIMITIVE_NAMES: &[&str] = &[
    "int", "long", "short", "byte", "char", "boolean", "float", "double", "void",
];

/// Web frameworks the file imports, for call-based routes.
#[derive(Default, Clone, Copy)]
struct Imported {
    javalin: bool,
    spark: bool,
    micronaut: bool,
}

struct Extractor<'s> {
    src: &'s str,
    g: &'static Grammar,
    facts: JavaFacts,
    frames: Vec<Frame>,
    pending: Vec<PendingScope>,
    /// Open nodes that bound the visibility of locals: (node id, end byte).
    blocks: Vec<(usize, u32)>,
    block_depth: u32,
    /// The last Javadoc comment seen: its byte range.
    last_doc: Option<(usize, usize)>,
    package_doc: Option<String>,
    /// Entities in creation order, for computing local paths parents first.
    order: Vec<JScope>,
    anonymous_count: FxHashMap<JScope, u32>,
    type_names: FxHashSet<&'s str>,
    route_annotations: Vec<(JScope, RouteAnnotation)>,
    imported: Imported,
    /// `path("/x", () -> { ... })` groups being walked: (lambda node id, prefix).
    path_groups: Vec<(usize, String)>,
    /// Argument lists of recorded calls not reached yet: (node id, call index).
    argument_lists: Vec<(usize, u32)>,
    /// The outermost prunable node being walked because its text may hold code.
    scanned: Option<usize>,
}

impl<'s> Extractor<'s> {
    fn new(src: &'s str) -> Self {
        Extractor {
            src,
            g: grammar(),
            facts: JavaFacts {
                package: None,
                docstring: None,
                line_count: count_lines(src),
                has_syntax_errors: false,
                complexity: Complexity::default(),
                imports: Vec::new(),
                types: Vec::new(),
                methods: Vec::new(),
                locals: Vec::new(),
                calls: Vec::new(),
                type_names: Vec::new(),
                routes: Vec::new(),
            },
            frames: Vec::new(),
            pending: Vec::new(),
            blocks: Vec::new(),
            block_depth: 0,
            last_doc: None,
            package_doc: None,
            order: Vec::new(),
            anonymous_count: FxHashMap::default(),
            type_names: FxHashSet::default(),
            route_annotations: Vec::new(),
            imported: Imported::default(),
            path_groups: Vec::new(),
            argument_lists: Vec::new(),
            scanned: None,
        }
    }

    fn run(mut self, tree: &Tree) -> JavaFacts {
        let root = tree.root_node();
        self.facts.has_syntax_errors = root.has_error();
        let mut cursor = root.walk();
        // For each open ancestor: the call whose arguments its children are.
        let mut argument_of: Vec<Option<u32>> = Vec::new();
        'walk: loop {
            let node = cursor.node();
            let kind = self.g.kind(node);
            if let Some(Some(call)) = argument_of.last() {
                self.count_argument(*call, node, kind);
            }
            let descend = self.enter(node, kind);
            // Most nodes are leaves; asking the cursor for their first child
            // costs more than asking the node.
            if descend && node.child_count() > 0 && cursor.goto_first_child() {
                argument_of.push(if kind == Kind::ArgumentList {
                    self.take_argument_list(node.id())
                } else {
                    None
                });
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
                argument_of.pop();
                let parent = cursor.node();
                self.leave(parent, self.g.kind(parent));
            }
        }
        self.finish()
    }

    /// Arities and literal kinds are counted as the walk passes the
    /// arguments, instead of iterating every argument list a second time.
    fn count_argument(&mut self, call: u32, node: Node<'_>, kind: Kind) {
        if !node.is_named() || matches!(kind, Kind::LineComment | Kind::BlockComment) {
            return;
        }
        let literal = match kind {
            Kind::StringLiteral => ArgKind::Str,
            Kind::CharacterLiteral => ArgKind::Char,
            Kind::IntegerLiteral if self.text(node).ends_with(['l', 'L']) => ArgKind::Long,
            Kind::IntegerLiteral => ArgKind::Int,
            Kind::FloatLiteral if self.text(node).ends_with(['f', 'F']) => ArgKind::Float,
            Kind::FloatLiteral => ArgKind::Double,
            Kind::BoolLiteral => ArgKind::Bool,
            Kind::NullLiteral => ArgKind::Null,
            _ => ArgKind::Other,
        };
        let Some(call) = self.facts.calls.get_mut(call as usize) else {
            return;
        };
        call.arity += 1;
        if literal != ArgKind::Other {
            let position = call.arity as usize - 1;
            call.args.resize(position, ArgKind::Other);
            call.args.push(literal);
        }
    }

    /// The call whose argument list `id` is, if one was recorded.
    fn take_argument_list(&mut self, id: usize) -> Option<u32> {
        let position = self
            .argument_lists
            .iter()
            .rposition(|(list, _)| *list == id)?;
        Some(self.argument_lists.swap_remove(position).1)
    }

    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// The node's text with whitespace collapsed, cut to [`MAX_TEXT`]. Only
    /// a prefix is looked at: receivers of long call chains would otherwise
    /// be copied once per call.
    fn short_text(&self, node: Node<'_>) -> String {
        let text = self.text(node);
        let mut end = text.len().min(4 * MAX_TEXT);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        truncate(&squash(&text[..end]), MAX_TEXT)
    }

    fn scope(&self) -> JScope {
        self.frames.last().map_or(JScope::Unit, |f| f.scope)
    }

    /// The innermost method frame, if the walk is inside a method body.
    fn method_frame(&self) -> Option<u32> {
        self.frames.iter().rev().find_map(|f| match f.scope {
            JScope::Method(m) => Some(m),
            _ => None,
        })
    }

    fn visible_until(&self) -> u32 {
        self.blocks.last().map_or(u32::MAX, |(_, end)| *end)
    }

    fn span(&self, node: Node<'_>) -> Span {
        let range = node.byte_range();
        Span {
            start_byte: byte(range.start),
            end_byte: byte(range.end),
            start_line: line_of(node.start_position().row),
            end_line: line_of(node.end_position().row),
        }
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
            Kind::LineComment => return false,
            Kind::BlockComment => {
                if self.text(node).starts_with("/**") {
                    self.last_doc = Some((node.start_byte(), node.end_byte()));
                }
                return false;
            }
            Kind::Package => {
                self.enter_package(node);
                return false;
            }
            Kind::Import => {
                self.enter_import(node);
                return false;
            }
            Kind::ClassDecl
            | Kind::InterfaceDecl
            | Kind::EnumDecl
            | Kind::RecordDecl
            | Kind::AnnotationDecl => self.enter_type(node, kind),
            Kind::EnumConstant => self.enter_enum_constant(node),
            Kind::MethodDecl
            | Kind::ConstructorDecl
            | Kind::CompactConstructorDecl
            | Kind::AnnotationElementDecl => self.enter_method(node, kind),
            Kind::FieldDecl => self.enter_field(node),
            Kind::LocalVarDecl => self.enter_local(node),
            // Annotations hold constants only; declarations read them.
            Kind::Modifiers => return false,
            Kind::ClassBody | Kind::TypeBody => self.block_depth += 1,
            Kind::Block => {
                self.block_depth += 1;
                self.blocks.push((node.id(), byte(node.end_byte())));
            }
            Kind::LocalScope => self.blocks.push((node.id(), byte(node.end_byte()))),
            Kind::MethodInvocation => self.enter_invocation(node),
            Kind::ObjectCreation => self.enter_new(node),
            Kind::ExplicitConstructorInvocation => self.enter_explicit_constructor(node),
            Kind::MethodReference => self.enter_method_reference(node),
            Kind::Lambda => self.enter_lambda(node),
            Kind::EnhancedFor => {
                self.branch();
                self.blocks.push((node.id(), byte(node.end_byte())));
                self.declare_typed(node, false);
            }
            Kind::For => {
                self.branch();
                self.blocks.push((node.id(), byte(node.end_byte())));
            }
            Kind::CatchClause => {
                self.branch();
                self.blocks.push((node.id(), byte(node.end_byte())));
            }
            Kind::CatchFormalParameter => self.enter_catch_parameter(node),
            Kind::Resource => self.declare_typed(node, true),
            Kind::Instanceof => self.declare_typed(node, false),
            Kind::TypePattern => self.enter_type_pattern(node),
            Kind::Branch => self.branch(),
            Kind::SwitchLabel
                if node
                    .child(0)
                    .is_some_and(|c| self.g.kind(c) != Kind::AnonymousDefault) =>
            {
                self.branch();
            }
            Kind::TypeIdentifier | Kind::ScopedTypeIdentifier | Kind::TypeNode => {
                self.note_type_names(self.text(node));
                return false;
            }
            // Parameters hold no code; declarations and lambdas read them.
            Kind::FormalParameters => return false,
            Kind::Prunable | Kind::VariableDeclarator => return self.may_hold_code(node),
            Kind::FieldAccess => self.field_access(node),
            Kind::StringLiteral
            | Kind::CharacterLiteral
            | Kind::IntegerLiteral
            | Kind::FloatLiteral
            | Kind::BoolLiteral
            | Kind::NullLiteral => return false,
            _ => {}
        }
        true
    }

    fn leave(&mut self, node: Node<'_>, kind: Kind) {
        match kind {
            Kind::ClassBody | Kind::TypeBody | Kind::Block => {
                if matches!(kind, Kind::Block)
                    && self.blocks.last().is_some_and(|b| b.0 == node.id())
                {
                    self.blocks.pop();
                }
                self.block_depth = self.block_depth.saturating_sub(1);
                if self.frames.last().is_some_and(|f| f.end_node == node.id()) {
                    self.frames.pop();
                }
            }
            Kind::LocalScope | Kind::EnhancedFor | Kind::For | Kind::CatchClause
                if self.blocks.last().is_some_and(|b| b.0 == node.id()) =>
            {
                self.blocks.pop();
            }
            Kind::Prunable | Kind::VariableDeclarator if self.scanned == Some(node.id()) => {
                self.scanned = None;
            }
            Kind::Lambda => {
                if self.blocks.last().is_some_and(|b| b.0 == node.id()) {
                    self.blocks.pop();
                }
                if self.path_groups.last().is_some_and(|g| g.0 == node.id()) {
                    self.path_groups.pop();
                }
            }
            _ => {}
        }
    }

    /// Whether a prunable node's text shows it may hold a call, lambda,
    /// method reference, ternary or pattern variable. Only the outermost of
    /// nested prunable nodes is scanned (and short ones inside it), so a
    /// deep `1 + 1 + ... + 1` costs one pass over its text.
    fn may_hold_code(&mut self, node: Node<'_>) -> bool {
        let short = node.end_byte() - node.start_byte() < SHORT_NODE;
        if self.scanned.is_some() && !short {
            return true;
        }
        let text = self.text(node).as_bytes();
        let may_hold_code = text.iter().any(|b| matches!(b, b'(' | b':' | b'?'))
            || text.windows(10).any(|w| w == b"instanceof");
        if may_hold_code && self.scanned.is_none() {
            self.scanned = Some(node.id());
        }
        may_hold_code
    }

    /// `Constants.X` mentions the type `Constants`.
    fn field_access(&mut self, node: Node<'_>) {
        if let Some(object) = self.g.field(node, self.g.field_object)
            && self.g.kind(object) == Kind::Identifier
        {
            let name = self.text(object);
            if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                self.type_names.insert(name);
            }
        }
    }

    /// Records the type names a type's text mentions (`Map<K, List<a.B>>`
    /// mentions `Map`, `K`, `List` and `a.B`).
    fn note_type_names(&mut self, text: &'s str) {
        let is_part = |c: char| c.is_alphanumeric() || c == '_' || c == '$' || c == '.';
        for token in text.split(|c: char| !is_part(c)) {
            let token = token.trim_matches('.');
            if token.is_empty()
                || matches!(token, "extends" | "super")
                || PRIMITIVE_NAMES.contains(&token)
                || token.starts_with(|c: char| c.is_ascii_digit())
            {
                continue;
            }
            self.type_names.insert(token);
        }
    }

    fn branch(&mut self) {
        self.facts.complexity.branches += 1;
        if let Some(m) = self.method_frame()
            && let Some(method) = self.facts.methods.get_mut(m as usize)
        {
            method.complexity.branches += 1;
        }
    }

    /// The Javadoc directly before `node` (only whitespace between), if any.
    fn javadoc(&mut self, node: Node<'_>) -> Option<String> {
        let (start, end) = self.last_doc?;
        let between = self.src.get(end..node.start_byte())?;
        if !between.bytes().all(|b| b.is_ascii_whitespace()) {
            return None;
        }
        self.last_doc = None;
        clean_javadoc(self.src.get(start..end)?)
    }

    fn enter_package(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let name = node
            .named_children(&mut cursor)
            .find(|c| matches!(self.g.kind(*c), Kind::Identifier | Kind::Other));
        if let Some(name) = name {
            let package = compact(self.text(name));
            if !package.is_empty() {
                self.facts.package = Some(package);
            }
        }
        self.package_doc = self.javadoc(node);
    }

    fn enter_import(&mut self, node: Node<'_>) {
        let mut is_static = false;
        let mut on_demand = false;
        let mut path = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match self.g.kind(child) {
                Kind::Asterisk => on_demand = true,
                Kind::Identifier | Kind::Other if child.is_named() => {
                    path = Some(compact(self.text(child)));
                }
                _ if !child.is_named() && child.kind() == "static" => is_static = true,
                _ => {}
            }
        }
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            return;
        };
        if path.starts_with("io.javalin") {
            self.imported.javalin = true;
        } else if path == "spark" || path.starts_with("spark.") {
            self.imported.spark = true;
        } else if path.starts_with("io.micronaut") {
            self.imported.micronaut = true;
        }
        self.facts.imports.push(JImport {
            path,
            is_static,
            on_demand,
            line: line_of(node.start_position().row),
        });
    }

    /// Modifiers and annotation texts of a declaration; route annotations
    /// are remembered for `owner`.
    fn modifiers(&mut self, node: Node<'_>, owner: Option<JScope>) -> (Vec<Modifier>, Vec<String>) {
        // Modifiers always come first in a declaration.
        let Some(list) = node.child(0).filter(|c| self.g.kind(*c) == Kind::Modifiers) else {
            return (Vec::new(), Vec::new());
        };
        let mut modifiers = Vec::new();
        let mut annotations = Vec::new();
        let mut cursor = list.walk();
        for child in list.children(&mut cursor) {
            match self.g.kind(child) {
                Kind::MarkerAnnotation | Kind::Annotation => {
                    if let Some(name) = self.g.field(child, self.g.field_name) {
                        self.type_names.insert(self.text(name));
                    }
                    let text = self.text(child).trim_start_matches('@').trim();
                    annotations.push(truncate(&squash(text), MAX_TEXT));
                    if let Some(owner) = owner {
                        self.route_annotation(child, owner);
                    }
                }
                _ if !child.is_named() => {
                    if let Some(m) = Modifier::from_keyword(child.kind()) {
                        modifiers.push(m);
                    }
                }
                _ => {}
            }
        }
        (modifiers, annotations)
    }

    fn route_annotation(&mut self, node: Node<'_>, owner: JScope) {
        let g = self.g;
        let Some(name_node) = g.field(node, g.field_name) else {
            return;
        };
        let full = self.text(name_node);
        let name = full.rsplit('.').next().unwrap_or(full);
        if !ROUTE_ANNOTATIONS.contains(&name) {
            return;
        }
        let mut args = Vec::new();
        if let Some(list) = g.field(node, g.field_arguments) {
            let mut cursor = list.walk();
            for arg in list.named_children(&mut cursor) {
                match g.kind(arg) {
                    Kind::ElementValuePair => {
                        let key = g.field(arg, g.field_key).map(|k| self.text(k).to_string());
                        let (strings, others) = g
                            .field(arg, g.field_value)
                            .map(|v| self.element_values(v))
                            .unwrap_or_default();
                        args.push((key, strings, others));
                    }
                    Kind::LineComment | Kind::BlockComment => {}
                    _ => {
                        let (strings, others) = self.element_values(arg);
                        args.push((None, strings, others));
                    }
                }
            }
        }
        self.route_annotations.push((
            owner,
            RouteAnnotation {
                name: name.to_string(),
                line: line_of(node.start_position().row),
                args,
            },
        ));
    }

    /// String literals and other values of an annotation element.
    fn element_values(&self, node: Node<'_>) -> (Vec<String>, Vec<String>) {
        let mut strings = Vec::new();
        let mut others = Vec::new();
        let mut one = |n: Node<'_>| match self.g.kind(n) {
            Kind::StringLiteral => strings.push(string_value(self.text(n))),
            Kind::LineComment | Kind::BlockComment => {}
            _ => others.push(compact(self.text(n))),
        };
        if self.g.kind(node) == Kind::ElementValueArray {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                one(child);
            }
        } else {
            one(node);
        }
        (strings, others)
    }

    fn type_params(&self, list: Option<Node<'_>>) -> Vec<JTypeParam> {
        let Some(list) = list else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut cursor = list.walk();
        for param in list.named_children(&mut cursor) {
            if self.g.kind(param) != Kind::TypeParameter {
                continue;
            }
            let mut inner = param.walk();
            let mut name = None;
            let mut bound = None;
            for child in param.named_children(&mut inner) {
                match self.g.kind(child) {
                    Kind::TypeIdentifier if name.is_none() => name = Some(self.text(child)),
                    Kind::TypeBound => {
                        bound = child
                            .named_child(0)
                            .map(|b| erase(self.text(b)).into_owned());
                    }
                    _ => {}
                }
            }
            if let Some(name) = name {
                out.push(JTypeParam {
                    name: name.to_string(),
                    bound,
                    text: squash(self.text(param)),
                });
            }
        }
        out
    }

    fn enter_type(&mut self, node: Node<'_>, kind: Kind) {
        let g = self.g;
        let ([name_node, superclass, interfaces, params, body], [extends]) = self.children(
            node,
            [
                g.field_name,
                g.field_superclass,
                g.field_interfaces,
                g.field_parameters,
                g.field_body,
            ],
            [Kind::ExtendsInterfaces],
        );
        let Some(name_node) = name_node else {
            return;
        };
        let java_kind = match kind {
            Kind::InterfaceDecl => JavaTypeKind::Interface,
            Kind::EnumDecl => JavaTypeKind::Enum,
            Kind::RecordDecl => JavaTypeKind::Record,
            Kind::AnnotationDecl => JavaTypeKind::Annotation,
            _ => JavaTypeKind::Class,
        };
        let mut supers = Vec::new();
        if let Some(ty) = superclass.and_then(|s| s.named_child(0)) {
            self.push_super(&mut supers, ty, BaseRelation::Extends);
        }
        for (list, relation) in [
            (extends, BaseRelation::Extends),
            (interfaces, BaseRelation::Implements),
        ] {
            let Some(list) = list.and_then(|l| {
                let mut c = l.walk();
                l.named_children(&mut c)
                    .find(|n| g.kind(*n) == Kind::TypeList)
            }) else {
                continue;
            };
            let mut inner = list.walk();
            for ty in list.named_children(&mut inner) {
                self.push_super(&mut supers, ty, relation);
            }
        }
        let mut fields = Vec::new();
        if kind == Kind::RecordDecl
            && let Some(params) = params
        {
            for param in self.parameters(params) {
                fields.push(JField {
                    name: param.name,
                    type_text: param.type_text,
                    modifiers: Vec::new(),
                    annotations: Vec::new(),
                    line: line_of(params.start_position().row),
                });
            }
        }
        let name = self.text(name_node).to_string();
        self.push_type(node, name, java_kind, supers, fields, false, body);
    }

    fn push_super(&self, supers: &mut Vec<JSuper>, ty: Node<'_>, relation: BaseRelation) {
        let text = squash(self.text(ty));
        if text.is_empty() {
            return;
        }
        supers.push(JSuper {
            name: erase(&text).into_owned(),
            text,
            relation,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn push_type(
        &mut self,
        node: Node<'_>,
        name: String,
        kind: JavaTypeKind,
        supers: Vec<JSuper>,
        fields: Vec<JField>,
        anonymous: bool,
        body: Option<Node<'_>>,
    ) {
        if self.frames.len() + self.pending.len() >= MAX_ENTITY_DEPTH {
            return;
        }
        let id = u32::try_from(self.facts.types.len()).unwrap_or(u32::MAX);
        let scope = JScope::Type(id);
        let docstring = if anonymous { None } else { self.javadoc(node) };
        let (modifiers, annotations) = self.modifiers(node, Some(scope));
        let type_params = self.type_params(self.g.field(node, self.g.field_type_parameters));
        let parent = self.scope();
        let depth = self.block_depth;
        self.facts.complexity.max_def_depth = self.facts.complexity.max_def_depth.max(depth);
        self.facts.types.push(JTypeFacts {
            name,
            local_path: String::new(),
            parent,
            kind,
            anonymous,
            modifiers,
            annotations,
            type_params,
            supers,
            fields,
            docstring,
            span: self.span(node),
        });
        self.order.push(scope);
        if let Some(body) = body {
            self.pending.push(PendingScope {
                body_node: body.id(),
                frame: Frame {
                    scope,
                    end_node: body.id(),
                },
            });
        }
    }

    fn enter_enum_constant(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(name_node) = g.field(node, g.field_name) else {
            return;
        };
        let JScope::Type(owner) = self.scope() else {
            return;
        };
        let Some(enum_name) = self.facts.types.get(owner as usize).map(|t| t.name.clone()) else {
            return;
        };
        let name = self.text(name_node).to_string();
        let (modifiers, annotations) = self.modifiers(node, None);
        if let Some(owner) = self.facts.types.get_mut(owner as usize) {
            owner.fields.push(JField {
                name: name.clone(),
                type_text: enum_name.clone(),
                modifiers,
                annotations,
                line: line_of(node.start_position().row),
            });
        }
        let arguments = g.field(node, g.field_arguments);
        self.push_call(node, JCallee::New(enum_name.clone()), arguments);
        if let Some(body) = g.field(node, g.field_body) {
            let supers = vec![JSuper {
                text: enum_name.clone(),
                name: enum_name,
                relation: BaseRelation::Extends,
            }];
            self.push_type(
                node,
                name,
                JavaTypeKind::Class,
                supers,
                Vec::new(),
                true,
                Some(body),
            );
        }
    }

    /// The children of `node` that carry a field, each visited once (one
    /// cursor pass instead of a `child_by_field_id` lookup per field), plus
    /// its first unfielded child of each kind in `kinds`.
    fn children<'t, const F: usize, const K: usize>(
        &self,
        node: Node<'t>,
        fields: [u16; F],
        kinds: [Kind; K],
    ) -> ([Option<Node<'t>>; F], [Option<Node<'t>>; K]) {
        let mut by_field = [None; F];
        let mut by_kind = [None; K];
        let mut cursor = node.walk();
        if !cursor.goto_first_child() {
            return (by_field, by_kind);
        }
        loop {
            let child = cursor.node();
            match cursor.field_id() {
                Some(id) => {
                    if let Some(i) = fields.iter().position(|f| *f == id.get())
                        && by_field[i].is_none()
                    {
                        by_field[i] = Some(child);
                    }
                }
                None if K > 0 => {
                    let kind = self.g.kind(child);
                    if let Some(i) = kinds.iter().position(|k| *k == kind)
                        && by_kind[i].is_none()
                    {
                        by_kind[i] = Some(child);
                    }
                }
                None => {}
            }
            if !cursor.goto_next_sibling() {
                return (by_field, by_kind);
            }
        }
    }

    /// The parameters of a method, constructor, record or lambda (the walk
    /// does not descend into them, so their type names are noted here).
    fn parameters(&mut self, node: Node<'_>) -> Vec<JParam> {
        let g = self.g;
        let mut out = Vec::new();
        let mut cursor = node.walk();
        if !cursor.goto_first_child() {
            return out;
        }
        loop {
            let param = cursor.node();
            match g.kind(param) {
                Kind::FormalParameter => {
                    let ([ty, name, dims], []) =
                        self.children(param, [g.field_type, g.field_name, g.field_dimensions], []);
                    if let Some(ty) = ty {
                        let text = self.text(ty);
                        self.note_type_names(text);
                        let mut type_text = squash(text);
                        if let Some(dims) = dims {
                            type_text.push_str(&compact(self.text(dims)));
                        }
                        out.push(JParam {
                            name: name.map_or("", |n| self.text(n)).to_string(),
                            type_text,
                            varargs: false,
                        });
                    }
                }
                Kind::SpreadParameter => {
                    let mut inner = param.walk();
                    let mut ty = None;
                    let mut name = "";
                    for child in param.named_children(&mut inner) {
                        match g.kind(child) {
                            Kind::VariableDeclarator => {
                                name = g.field(child, g.field_name).map_or("", |n| self.text(n));
                            }
                            Kind::Modifiers | Kind::MarkerAnnotation | Kind::Annotation => {}
                            _ if ty.is_none() => ty = Some(child),
                            _ => {}
                        }
                    }
                    if let Some(ty) = ty {
                        self.note_type_names(self.text(ty));
                        out.push(JParam {
                            name: name.to_string(),
                            type_text: format!("{}...", squash(self.text(ty))),
                            varargs: true,
                        });
                    }
                }
                _ => {}
            }
            if !cursor.goto_next_sibling() {
                return out;
            }
        }
    }

    fn enter_method(&mut self, node: Node<'_>, kind: Kind) {
        let g = self.g;
        let (
            [
                name_node,
                params_node,
                type_node,
                dims,
                body,
                type_params_node,
            ],
            [throws_node],
        ) = self.children(
            node,
            [
                g.field_name,
                g.field_parameters,
                g.field_type,
                g.field_dimensions,
                g.field_body,
                g.field_type_parameters,
            ],
            [Kind::Throws],
        );
        let Some(name_node) = name_node else {
            return;
        };
        if self.frames.len() + self.pending.len() >= MAX_ENTITY_DEPTH {
            return;
        }
        let parent = self.scope();
        let id = u32::try_from(self.facts.methods.len()).unwrap_or(u32::MAX);
        let scope = JScope::Method(id);
        let docstring = self.javadoc(node);
        let (modifiers, annotations) = self.modifiers(node, Some(scope));
        let is_constructor = matches!(kind, Kind::ConstructorDecl | Kind::CompactConstructorDecl);
        let name = if is_constructor {
            CONSTRUCTOR.to_string()
        } else {
            self.text(name_node).to_string()
        };
        let params = match (kind, params_node) {
            (_, Some(p)) => self.parameters(p),
            // A compact constructor takes the record's components.
            (Kind::CompactConstructorDecl, None) => match parent {
                JScope::Type(t) => self.facts.types.get(t as usize).map_or_else(Vec::new, |t| {
                    t.fields
                        .iter()
                        .map(|f| JParam {
                            name: f.name.clone(),
                            type_text: f.type_text.clone(),
                            varargs: false,
                        })
                        .collect()
                }),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let returns = match (is_constructor, type_node) {
            (false, Some(t)) => {
                let text = self.text(t);
                self.note_type_names(text);
                let mut text = squash(text);
                if let Some(dims) = dims {
                    text.push_str(&compact(self.text(dims)));
                }
                Some(text)
            }
            _ => None,
        };
        let mut throws = Vec::new();
        if let Some(list) = throws_node {
            let mut inner = list.walk();
            for ty in list.named_children(&mut inner) {
                if !matches!(g.kind(ty), Kind::LineComment | Kind::BlockComment) {
                    throws.push(squash(self.text(ty)));
                }
            }
        }
        let is_static = modifiers.contains(&Modifier::Static);
        let function_kind = match (is_constructor, is_static) {
            (true, _) => FunctionKind::Constructor,
            (false, true) => FunctionKind::StaticMethod,
            (false, false) => FunctionKind::Method,
        };
        let depth = self.block_depth;
        self.facts.complexity.max_def_depth = self.facts.complexity.max_def_depth.max(depth);
        let type_params = self.type_params(type_params_node);
        self.facts.methods.push(JMethodFacts {
            name,
            local_path: String::new(),
            parent,
            kind: function_kind,
            params,
            returns,
            modifiers,
            annotations,
            type_params,
            throws,
            has_body: body.is_some(),
            docstring,
            span: self.span(node),
            complexity: Complexity {
                branches: 0,
                max_def_depth: depth,
            },
        });
        self.order.push(scope);
        if let Some(body) = body {
            self.pending.push(PendingScope {
                body_node: body.id(),
                frame: Frame {
                    scope,
                    end_node: body.id(),
                },
            });
        }
    }

    /// Calls `each(type, declarator)` for the declarators of a field or
    /// local variable declaration, in one pass over its children.
    fn declarators<'t>(&self, node: Node<'t>) -> (Option<Node<'t>>, Vec<Node<'t>>) {
        let g = self.g;
        let mut ty = None;
        let mut declarators = Vec::new();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                match cursor.field_id().map(|f| f.get()) {
                    Some(f) if f == g.field_type => ty = Some(cursor.node()),
                    Some(f) if g.field_declarator.is_some_and(|d| d.get() == f) => {
                        declarators.push(cursor.node())
                    }
                    _ => {}
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        (ty, declarators)
    }

    fn enter_field(&mut self, node: Node<'_>) {
        let g = self.g;
        let JScope::Type(owner) = self.scope() else {
            return;
        };
        let (Some(ty), declarators) = self.declarators(node) else {
            return;
        };
        let (modifiers, annotations) = self.modifiers(node, None);
        let base_text = squash(self.text(ty));
        let line = line_of(node.start_position().row);
        let mut fields = Vec::with_capacity(declarators.len());
        for declarator in declarators {
            let ([name, dims], []) =
                self.children(declarator, [g.field_name, g.field_dimensions], []);
            let Some(name) = name else {
                continue;
            };
            let mut type_text = base_text.clone();
            if let Some(dims) = dims {
                type_text.push_str(&compact(self.text(dims)));
            }
            fields.push(JField {
                name: self.text(name).to_string(),
                type_text,
                modifiers: modifiers.clone(),
                annotations: annotations.clone(),
                line,
            });
        }
        // A field's Javadoc is not kept, but must not attach to what follows.
        self.last_doc = None;
        if let Some(owner) = self.facts.types.get_mut(owner as usize) {
            owner.fields.extend(fields);
        }
    }

    fn enter_local(&mut self, node: Node<'_>) {
        let g = self.g;
        let (Some(ty), declarators) = self.declarators(node) else {
            return;
        };
        let type_text = self.text(ty);
        let is_var = type_text == "var";
        let scope = self.scope();
        let end = self.visible_until();
        let mut locals = Vec::with_capacity(declarators.len());
        for declarator in declarators {
            let ([name, dims, value], []) = self.children(
                declarator,
                [g.field_name, g.field_dimensions, g.field_value],
                [],
            );
            let Some(name) = name else {
                continue;
            };
            let ty = if is_var {
                match value {
                    Some(value) => JLocalType::Inferred(self.expr(value)),
                    None => JLocalType::Untyped,
                }
            } else {
                let mut text = erase(type_text).into_owned();
                if let Some(dims) = dims {
                    text.push_str(&compact(self.text(dims)));
                }
                JLocalType::Declared(text)
            };
            locals.push(JLocal {
                scope,
                name: self.text(name).to_string(),
                ty,
                start: byte(declarator.start_byte()),
                end,
            });
        }
        self.facts.locals.extend(locals);
    }

    /// A variable declared by a `type` and `name` field pair (enhanced for,
    /// resource, `instanceof` pattern), visible to the end of the enclosing
    /// block. `var` takes the type of the `value` field only when that is
    /// the initializer (a resource), not the iterable of an enhanced `for`.
    fn declare_typed(&mut self, node: Node<'_>, value_initializes: bool) {
        let g = self.g;
        let (Some(name), Some(ty)) = (
            g.field(node, g.field_name),
            g.field(node, g.field_type)
                .or_else(|| node.child_by_field_name("right")),
        ) else {
            return;
        };
        let text = self.text(ty);
        let ty = match (text == "var", g.field(node, g.field_value)) {
            (true, Some(value)) if value_initializes => JLocalType::Inferred(self.expr(value)),
            (true, _) => JLocalType::Untyped,
            (false, _) => JLocalType::Declared(erase(text).into_owned()),
        };
        let local = JLocal {
            scope: self.scope(),
            name: self.text(name).to_string(),
            ty,
            start: byte(node.start_byte()),
            end: self.visible_until(),
        };
        self.facts.locals.push(local);
    }

    fn enter_catch_parameter(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(name) = g.field(node, g.field_name) else {
            return;
        };
        let mut cursor = node.walk();
        let types: Vec<Node<'_>> = node
            .named_children(&mut cursor)
            .filter(|c| c.kind() == "catch_type")
            .collect();
        // A multi-catch variable has the types' union: only one type is followed.
        let ty = types
            .first()
            .and_then(|t| t.named_child(0))
            .map_or(JLocalType::Untyped, |t| {
                JLocalType::Declared(erase(self.text(t)).into_owned())
            });
        let local = JLocal {
            scope: self.scope(),
            name: self.text(name).to_string(),
            ty,
            start: byte(node.start_byte()),
            end: self.visible_until(),
        };
        self.facts.locals.push(local);
    }

    fn enter_type_pattern(&mut self, node: Node<'_>) {
        let (Some(ty), Some(name)) = (node.named_child(0), node.named_child(1)) else {
            return;
        };
        let local = JLocal {
            scope: self.scope(),
            name: self.text(name).to_string(),
            ty: JLocalType::Declared(erase(self.text(ty)).into_owned()),
            start: byte(node.start_byte()),
            end: self.visible_until(),
        };
        self.facts.locals.push(local);
    }

    fn enter_lambda(&mut self, node: Node<'_>) {
        let g = self.g;
        let start = byte(node.start_byte());
        let end = byte(node.end_byte());
        self.blocks.push((node.id(), end));
        let scope = self.scope();
        let Some(params) = g.field(node, g.field_parameters) else {
            return;
        };
        let mut locals = Vec::new();
        let mut untyped = |name: &str| {
            locals.push(JLocal {
                scope,
                name: name.to_string(),
                ty: JLocalType::Untyped,
                start,
                end,
            })
        };
        match g.kind(params) {
            Kind::Identifier => untyped(self.text(params)),
            Kind::InferredParameters => {
                let mut cursor = params.walk();
                for p in params.named_children(&mut cursor) {
                    if g.kind(p) == Kind::Identifier {
                        untyped(self.text(p));
                    }
                }
            }
            Kind::FormalParameters => {
                for p in self.parameters(params) {
                    locals.push(JLocal {
                        scope,
                        name: p.name,
                        ty: JLocalType::Declared(erase(&p.type_text).into_owned()),
                        start,
                        end,
                    });
                }
            }
            _ => {}
        }
        self.facts.locals.extend(locals);
    }

    /// Records a call; the walk counts its arguments when it reaches `arguments`.
    fn push_call(&mut self, node: Node<'_>, callee: JCallee, arguments: Option<Node<'_>>) {
        let scope = self.scope();
        let index = u32::try_from(self.facts.calls.len()).unwrap_or(u32::MAX);
        if let Some(list) = arguments {
            self.argument_lists.push((list.id(), index));
        }
        self.facts.calls.push(JCall {
            scope,
            pos: byte(node.start_byte()),
            end: byte(node.end_byte()),
            line: line_of(node.start_position().row),
            callee,
            arity: 0,
            args: Vec::new(),
        });
    }

    fn enter_invocation(&mut self, node: Node<'_>) {
        let g = self.g;
        let ([name_node, object, arguments], []) =
            self.children(node, [g.field_name, g.field_object, g.field_arguments], []);
        let Some(name_node) = name_node else {
            return;
        };
        let name = self.text(name_node);
        let receiver = object.map(|o| self.expr(o));
        if (self.imported.javalin || self.imported.spark)
            && let Some(list) = arguments
        {
            self.call_route(node, name, list);
        }
        self.push_call(
            node,
            JCallee::Method {
                receiver,
                name: name.to_string(),
            },
            arguments,
        );
    }

    /// Javalin and Spark declare routes with calls: `app.get("/x", handler)`,
    /// `get("/x", handler)` and `path("/x", () -> { ... })` groups.
    fn call_route(&mut self, node: Node<'_>, name: &str, list: Node<'_>) {
        let g = self.g;
        let mut cursor = list.walk();
        let args: Vec<Node<'_>> = list
            .named_children(&mut cursor)
            .filter(|a| !matches!(g.kind(*a), Kind::LineComment | Kind::BlockComment))
            .collect();
        let path = args
            .first()
            .filter(|a| g.kind(**a) == Kind::StringLiteral)
            .map(|a| string_value(self.text(*a)));
        if name == "path" {
            if let (Some(path), Some(group)) = (path, args.get(1))
                && g.kind(*group) == Kind::Lambda
                && self.path_groups.len() < MAX_PATH_GROUPS
            {
                self.path_groups.push((group.id(), path));
            }
            return;
        }
        let Some(method) = HttpMethod::from_verb(name) else {
            return;
        };
        let in_group = !self.path_groups.is_empty();
        if path.is_none() && !in_group {
            return;
        }
        // The handler is the first lambda, method reference or `new` after
        // the path (Spark may put a content type first, Javalin roles last),
        // else the first name.
        let rest = || args.iter().skip(usize::from(path.is_some()));
        let Some(handler_node) = rest()
            .find(|a| {
                matches!(
                    g.kind(**a),
                    Kind::Lambda | Kind::MethodReference | Kind::ObjectCreation
                )
            })
            .or_else(|| {
                rest().find(|a| matches!(g.kind(**a), Kind::Identifier | Kind::FieldAccess))
            })
        else {
            return;
        };
        let handler = match g.kind(*handler_node) {
            Kind::Lambda => JHandler::Lambda(self.scope()),
            Kind::MethodReference => match self.method_reference(*handler_node) {
                Some(JCallee::Ref { target, name }) => JHandler::Ref { target, name },
                _ => return,
            },
            Kind::ObjectCreation => JHandler::Object(self.expr(*handler_node)),
            Kind::Identifier | Kind::FieldAccess
                if in_group || path.as_deref().is_some_and(|p| p.starts_with('/')) =>
            {
                JHandler::Object(self.expr(*handler_node))
            }
            _ => return,
        };
        let mut full = String::new();
        for (_, prefix) in &self.path_groups {
            full = crate::routes::join_paths(&full, prefix);
        }
        let full = crate::routes::join_paths(&full, path.as_deref().unwrap_or(""));
        let framework = if self.imported.javalin {
            Framework::Javalin
        } else {
            Framework::Spark
        };
        self.facts.routes.push(JRoute {
            framework,
            method,
            path: full,
            handler,
            scope: self.scope(),
            pos: byte(node.start_byte()),
            line: line_of(node.start_position().row),
        });
    }

    fn enter_new(&mut self, node: Node<'_>) {
        let g = self.g;
        let ([ty, arguments], [body]) =
            self.children(node, [g.field_type, g.field_arguments], [Kind::ClassBody]);
        let Some(ty) = ty else {
            return;
        };
        let erased = erase(self.text(ty)).into_owned();
        self.push_call(node, JCallee::New(erased.clone()), arguments);
        if let Some(body) = body {
            let parent = self.scope();
            let n = self.anonymous_count.entry(parent).or_insert(0);
            *n += 1;
            let name = format!("${n}");
            let supers = vec![JSuper {
                text: squash(self.text(ty)),
                name: erased,
                relation: BaseRelation::Extends,
            }];
            self.push_type(
                node,
                name,
                JavaTypeKind::Class,
                supers,
                Vec::new(),
                true,
                Some(body),
            );
        }
    }

    fn enter_explicit_constructor(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(which) = g.field(node, g.field_constructor) else {
            return;
        };
        let callee = match g.kind(which) {
            Kind::This => JCallee::This,
            _ => JCallee::Super,
        };
        self.push_call(node, callee, g.field(node, g.field_arguments));
    }

    fn method_reference(&self, node: Node<'_>) -> Option<JCallee> {
        let target = node.named_child(0)?;
        let last = node.child(node.child_count().checked_sub(1)?)?;
        let name = if self.g.kind(last) == Kind::AnonymousNew {
            CONSTRUCTOR.to_string()
        } else if self.g.kind(last) == Kind::Identifier {
            self.text(last).to_string()
        } else {
            return None;
        };
        let target = match self.g.kind(target) {
            Kind::TypeIdentifier | Kind::ScopedTypeIdentifier => {
                JExpr::Type(erase(self.text(target)).into_owned())
            }
            Kind::Identifier
            | Kind::FieldAccess
            | Kind::This
            | Kind::Super
            | Kind::MethodInvocation
            | Kind::ObjectCreation
            | Kind::ParenthesizedExpression => self.expr(target),
            _ => JExpr::Type(erase(self.text(target)).into_owned()),
        };
        Some(JCallee::Ref { target, name })
    }

    fn enter_method_reference(&mut self, node: Node<'_>) {
        if let Some(callee) = self.method_reference(node) {
            self.push_call(node, callee, None);
        }
    }

    fn expr(&self, node: Node<'_>) -> JExpr {
        self.expr_at(node, 0)
    }

    fn expr_at(&self, node: Node<'_>, depth: u32) -> JExpr {
        let g = self.g;
        if depth > MAX_EXPR_DEPTH {
            return JExpr::Other(self.short_text(node));
        }
        match g.kind(node) {
            Kind::Identifier => JExpr::Name(self.text(node).to_string()),
            Kind::This => JExpr::This,
            Kind::Super => JExpr::Super,
            Kind::StringLiteral => JExpr::Str,
            Kind::FieldAccess => {
                match (g.field(node, g.field_object), g.field(node, g.field_field)) {
                    (Some(object), Some(field)) => JExpr::Field(
                        Box::new(self.expr_at(object, depth + 1)),
                        self.text(field).to_string(),
                    ),
                    _ => JExpr::Other(self.short_text(node)),
                }
            }
            Kind::MethodInvocation => match g.field(node, g.field_name) {
                Some(name) => JExpr::Invoke {
                    receiver: g
                        .field(node, g.field_object)
                        .map(|o| Box::new(self.expr_at(o, depth + 1))),
                    name: self.text(name).to_string(),
                    // Comments among the arguments would count; they are rare
                    // enough in call chains not to iterate every list.
                    arity: g.field(node, g.field_arguments).map_or(0, |a| {
                        u32::try_from(a.named_child_count()).unwrap_or(u32::MAX)
                    }),
                    start: byte(node.start_byte()),
                    end: byte(node.end_byte()),
                },
                None => JExpr::Other(self.short_text(node)),
            },
            Kind::ObjectCreation => match g.field(node, g.field_type) {
                Some(ty) => JExpr::New(erase(self.text(ty)).into_owned()),
                None => JExpr::Other(self.short_text(node)),
            },
            Kind::Cast => match g.field(node, g.field_type) {
                Some(ty) => JExpr::Cast(erase(self.text(ty)).into_owned()),
                None => JExpr::Other(self.short_text(node)),
            },
            Kind::ParenthesizedExpression => match node.named_child(0) {
                Some(inner) => self.expr_at(inner, depth + 1),
                None => JExpr::Other(self.short_text(node)),
            },
            _ => JExpr::Other(self.short_text(node)),
        }
    }

    fn finish(mut self) -> JavaFacts {
        self.local_paths();
        self.annotation_routes();
        let mut type_names: Vec<String> = self
            .type_names
            .iter()
            .filter(|n| !n.is_empty() && **n != "var")
            .map(|n| (*n).to_string())
            .collect();
        let params: FxHashSet<&str> = self
            .facts
            .types
            .iter()
            .flat_map(|t| &t.type_params)
            .chain(self.facts.methods.iter().flat_map(|m| &m.type_params))
            .map(|p| p.name.as_str())
            .collect();
        type_names.retain(|n| !params.contains(n.as_str()));
        type_names.sort_unstable();
        self.facts.type_names = type_names;
        self.facts.docstring = self.package_doc.take().or_else(|| {
            let top = || self.facts.types.iter().filter(|t| t.parent == JScope::Unit);
            top()
                .find(|t| t.modifiers.contains(&Modifier::Public))
                .or_else(|| top().next())
                .and_then(|t| t.docstring.clone())
        });
        self.facts
    }

    /// Computes every entity's dotted path inside the file, parents first.
    /// Overloaded methods (and constructors) get their erased parameter
    /// types as a suffix; anything still ambiguous gets `#2`, `#3`, ...
    fn local_paths(&mut self) {
        let facts = &mut self.facts;
        let mut overloads: FxHashMap<(JScope, &str), u32> = FxHashMap::default();
        for m in &facts.methods {
            *overloads.entry((m.parent, m.name.as_str())).or_default() += 1;
        }
        let segments: Vec<String> = facts
            .methods
            .iter()
            .map(|m| {
                if overloads
                    .get(&(m.parent, m.name.as_str()))
                    .copied()
                    .unwrap_or(0)
                    > 1
                {
                    let types: Vec<String> = m
                        .params
                        .iter()
                        .map(|p| simple_type(&erase(&p.type_text)).to_string())
                        .collect();
                    format!("{}({})", m.name, types.join(","))
                } else {
                    m.name.clone()
                }
            })
            .collect();
        let mut seen: FxHashMap<(JScope, String), u32> = FxHashMap::default();
        for &entity in &self.order {
            let (parent, segment) = match entity {
                JScope::Type(t) => match facts.types.get(t as usize) {
                    Some(t) => (t.parent, t.name.clone()),
                    None => continue,
                },
                JScope::Method(m) => {
                    match (facts.methods.get(m as usize), segments.get(m as usize)) {
                        (Some(method), Some(segment)) => (method.parent, segment.clone()),
                        _ => continue,
                    }
                }
                JScope::Unit => continue,
            };
            let n = seen.entry((parent, segment.clone())).or_insert(0);
            *n += 1;
            let segment = if *n > 1 {
                format!("{segment}#{n}")
            } else {
                segment
            };
            let prefix = match parent {
                JScope::Unit => None,
                JScope::Type(t) => facts.types.get(t as usize).map(|t| t.local_path.as_str()),
                JScope::Method(m) => facts.methods.get(m as usize).map(|m| m.local_path.as_str()),
            };
            let path = match prefix {
                Some(p) if !p.is_empty() => format!("{p}.{segment}"),
                _ => segment,
            };
            match entity {
                JScope::Type(t) => {
                    if let Some(t) = facts.types.get_mut(t as usize) {
                        t.local_path = path;
                    }
                }
                JScope::Method(m) => {
                    if let Some(m) = facts.methods.get_mut(m as usize) {
                        m.local_path = path;
                    }
                }
                JScope::Unit => {}
            }
        }
    }

    /// Routes declared by annotations: Spring (`@GetMapping`,
    /// `@RequestMapping` with class-level prefixes), JAX-RS (`@Path` with
    /// `@GET`, ...) and Micronaut (`@Controller("/x")` with `@Get`, ...).
    fn annotation_routes(&mut self) {
        let annotations = std::mem::take(&mut self.route_annotations);
        let on = |scope: JScope| {
            annotations
                .iter()
                .filter(move |(s, _)| *s == scope)
                .map(|(_, a)| a)
        };
        let mut routes = Vec::new();
        for (m, method) in self.facts.methods.iter().enumerate() {
            let scope = JScope::Method(u32::try_from(m).unwrap_or(u32::MAX));
            if !annotations.iter().any(|(s, _)| *s == scope) {
                continue;
            }
            let class = match method.parent {
                JScope::Type(t) => Some(JScope::Type(t)),
                _ => None,
            };
            let class_annotations: Vec<&RouteAnnotation> =
                class.map(|c| on(c).collect()).unwrap_or_default();
            let class_paths = |name: &str, keys: &[Option<&str>]| -> Vec<String> {
                let paths: Vec<String> = class_annotations
                    .iter()
                    .filter(|a| a.name == name)
                    .flat_map(|a| a.strings(keys))
                    .collect();
                if paths.is_empty() {
                    vec![String::new()]
                } else {
                    paths
                }
            };
            let micronaut = self.imported.micronaut
                || class_annotations
                    .iter()
                    .any(|a| a.name == "Controller" && !a.args.is_empty());
            let mut jaxrs_methods = Vec::new();
            let mut jaxrs_path: Option<Vec<String>> = None;
            for annotation in on(scope) {
                let spring_verb = match annotation.name.as_str() {
                    "GetMapping" => Some(vec![HttpMethod::Get]),
                    "PostMapping" => Some(vec![HttpMethod::Post]),
                    "PutMapping" => Some(vec![HttpMethod::Put]),
                    "DeleteMapping" => Some(vec![HttpMethod::Delete]),
                    "PatchMapping" => Some(vec![HttpMethod::Patch]),
                    "RequestMapping" => {
                        let verbs: Vec<HttpMethod> = annotation
                            .others("method")
                            .iter()
                            .filter_map(|v| {
                                HttpMethod::from_verb(v.rsplit('.').next().unwrap_or(v))
                            })
                            .collect();
                        Some(if verbs.is_empty() {
                            vec![HttpMethod::Any]
                        } else {
                            verbs
                        })
                    }
                    _ => None,
                };
                if let Some(verbs) = spring_verb {
                    let mut paths = annotation.strings(&[None, Some("value"), Some("path")]);
                    if paths.is_empty() {
                        paths.push(String::new());
                    }
                    for prefix in
                        class_paths("RequestMapping", &[None, Some("value"), Some("path")])
                    {
                        for path in &paths {
                            for verb in &verbs {
                                routes.push(JRoute {
                                    framework: Framework::Spring,
                                    method: *verb,
                                    path: crate::routes::join_paths(&prefix, path),
                                    handler: JHandler::Method(m as u32),
                                    scope,
                                    pos: method.span.start_byte,
                                    line: annotation.line,
                                });
                            }
                        }
                    }
                    continue;
                }
                match annotation.name.as_str() {
                    "GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS" => {
                        if let Some(verb) = HttpMethod::from_verb(&annotation.name) {
                            jaxrs_methods.push((verb, annotation.line));
                        }
                    }
                    "Path" => jaxrs_path = Some(annotation.strings(&[None, Some("value")])),
                    "Get" | "Post" | "Put" | "Delete" | "Patch" | "Head" | "Options"
                        if micronaut =>
                    {
                        let Some(verb) = HttpMethod::from_verb(&annotation.name) else {
                            continue;
                        };
                        let mut paths =
                            annotation.strings(&[None, Some("value"), Some("uri"), Some("uris")]);
                        if paths.is_empty() {
                            paths.push(String::new());
                        }
                        for prefix in class_paths("Controller", &[None, Some("value")]) {
                            for path in &paths {
                                routes.push(JRoute {
                                    framework: Framework::Micronaut,
                                    method: verb,
                                    path: crate::routes::join_paths(&prefix, path),
                                    handler: JHandler::Method(m as u32),
                                    scope,
                                    pos: method.span.start_byte,
                                    line: annotation.line,
                                });
                            }
                        }
                    }
                    _ => {}
                }
            }
            let paths = jaxrs_path.unwrap_or_default();
            let paths = if paths.is_empty() {
                vec![String::new()]
            } else {
                paths
            };
            for (verb, line) in jaxrs_methods {
                for prefix in class_paths("Path", &[None, Some("value")]) {
                    for path in &paths {
                        routes.push(JRoute {
                            framework: Framework::JaxRs,
                            method: verb,
                            path: crate::routes::join_paths(&prefix, path),
                            handler: JHandler::Method(m as u32),
                            scope,
                            pos: method.span.start_byte,
                            line,
                        });
                    }
                }
            }
        }
        self.facts.routes.extend(routes);
    }
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

/// Collapses runs of whitespace into one space.
pub(crate) fn squash(text: &str) -> String {
    let text = text.trim();
    if !text.contains(['\n', '\r', '\t', ' ']) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}

fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The contents of a string literal as written (escapes kept).
fn string_value(literal: &str) -> String {
    let inner = literal
        .strip_prefix("\"\"\"")
        .and_then(|s| s.strip_suffix("\"\"\""))
        .or_else(|| literal.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
        .unwrap_or(literal);
    inner.to_string()
}

/// The text of a Javadoc comment without its `/**`, `*/` and leading `*`s.
pub(crate) fn clean_javadoc(raw: &str) -> Option<String> {
    let body = raw
        .strip_prefix("/**")
        .unwrap_or(raw)
        .strip_suffix("*/")
        .unwrap_or(raw);
    let mut out = String::with_capacity(body.len());
    let mut pending_blank = false;
    for line in body.lines() {
        let line = line.trim();
        let line = line.strip_prefix('*').unwrap_or(line);
        let line = line.strip_prefix(' ').unwrap_or(line).trim_end();
        if line.is_empty() {
            pending_blank = !out.is_empty();
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if pending_blank {
                out.push('\n');
            }
        }
        pending_blank = false;
        out.push_str(line);
    }
    (!out.is_empty()).then_some(out)
}

fn byte(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

fn line_of(row: usize) -> u32 {
    u32::try_from(row).map_or(u32::MAX, |r| r.saturating_add(1))
}

/// Splits the cost of one file into parsing and extraction (for the measure tool).
pub(crate) fn time_parse_and_extract(
    text: &str,
) -> Option<(std::time::Duration, std::time::Duration)> {
    let mut parser = JavaParser::new().ok()?;
    let t = std::time::Instant::now();
    let tree = parser.parse_tree(text)?;
    let parse = t.elapsed();
    let t = std::time::Instant::now();
    let facts = Extractor::new(text).run(&tree);
    std::hint::black_box(facts);
    Some((parse, t.elapsed()))
}
