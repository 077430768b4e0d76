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
use tree_sitter::{Language, Node, Tree};

use crate::facts::Spent;
use crate::model::{BaseRelation, Complexity, JavaTypeKind, Modifier, Span};
use crate::text::{count_lines, truncate};

use super::facts::*;
use super::routes::*;

/// Longest text kept verbatim for annotations and unresolved expressions.
pub(super) const MAX_TEXT: usize = 120;

/// Types and methods nested deeper than this are not recorded as entities
/// (their code counts for the deepest recorded one): each level lengthens
/// every qualified name below it, so hostile nesting would cost quadratic
/// memory.
pub(super) const MAX_ENTITY_DEPTH: usize = 200;
/// Prunable nodes shorter than this are scanned even inside a scanned one.
pub(super) const SHORT_NODE: usize = 200;
/// `path(...)` route groups nested deeper than this are ignored.
pub(super) const MAX_PATH_GROUPS: usize = 64;

/// Node kinds the walk reacts to, looked up through a table indexed by kind id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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

pub(super) struct Grammar {
    pub(super) language: Language,
    pub(super) kinds: Vec<Kind>,
    pub(super) field_name: u16,
    pub(super) field_body: u16,
    pub(super) field_type: u16,
    pub(super) field_type_parameters: u16,
    pub(super) field_superclass: u16,
    pub(super) field_interfaces: u16,
    pub(super) field_parameters: u16,
    pub(super) field_declarator: Option<std::num::NonZeroU16>,
    pub(super) field_value: u16,
    pub(super) field_object: u16,
    pub(super) field_arguments: u16,
    pub(super) field_field: u16,
    pub(super) field_constructor: u16,
    pub(super) field_dimensions: u16,
    pub(super) field_key: u16,
}

pub(super) fn grammar() -> &'static Grammar {
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
    pub(super) fn kind(&self, node: Node<'_>) -> Kind {
        crate::lang::kind_in(&self.kinds, node, Kind::Other)
    }

    pub(super) fn field<'t>(&self, node: Node<'t>, field: u16) -> Option<Node<'t>> {
        node.child_by_field_id(field)
    }
}

/// A tree-sitter parser configured for Java; one per thread.
pub(crate) struct JavaParser {
    parser: crate::lang::SyntaxParser,
}

impl JavaParser {
    pub(crate) fn new() -> Result<Self, crate::Error> {
        let parser = crate::lang::SyntaxParser::new(&grammar().language, crate::Language::Java)?;
        Ok(Self { parser })
    }

    /// Parses only, for measuring the raw parse cost (and for tests).
    #[cfg(any(test, feature = "measure"))]
    pub(crate) fn parse_tree(&mut self, text: &str) -> Option<Tree> {
        self.parser.parse(text)
    }

    /// Parses `text` and extracts its facts, with what they cost (`None`
    /// only if tree-sitter gives up).
    pub(crate) fn extract(&mut self, text: &str) -> Option<(JavaFacts, Spent)> {
        let tree = self.parser.parse(text)?;
        Some(Extractor::new(text).run(&tree))
    }
}

/// An entity scope being walked, popped when the walk leaves `end_node`.
pub(super) struct Frame {
    pub(super) scope: Scope,
    pub(super) end_node: usize,
}

/// A scope that opens when the walk reaches its body node.
pub(super) struct PendingScope {
    pub(super) body_node: usize,
    pub(super) frame: Frame,
}

/// Keywords that name primitive types, never internal ones.
pub(super) const PRIMITIVE_NAMES: &[&str] = &[
    "int", "long", "short", "byte", "char", "boolean", "float", "double", "void",
];

/// Web frameworks the file imports, for call-based routes.
#[derive(Default, Clone, Copy)]
pub(super) struct Imported {
    pub(super) javalin: bool,
    pub(super) spark: bool,
    pub(super) micronaut: bool,
}

impl crate::lang::Visitor for Extractor<'_> {
    fn enter(&mut self, node: Node<'_>) -> bool {
        // Past the facts budget nothing more is entered, and so nothing
        // more is left either: the nodes already open close as usual.
        if self.over_budget(node) {
            self.skip_leave = true;
            return false;
        }
        let kind = self.g.kind(node);
        if let Some(Some(call)) = self.argument_of.last() {
            self.count_argument(*call, node, kind);
        }
        self.enter_node(node, kind)
    }

    fn leave(&mut self, node: Node<'_>) {
        if std::mem::take(&mut self.skip_leave) {
            return;
        }
        let kind = self.g.kind(node);
        self.leave_node(node, kind);
    }

    fn down(&mut self, node: Node<'_>) {
        let call = if self.g.kind(node) == Kind::ArgumentList {
            self.take_argument_list(node.id())
        } else {
            None
        };
        self.argument_of.push(call);
    }

    fn up(&mut self) {
        self.argument_of.pop();
    }
}

pub(super) struct Extractor<'s> {
    /// For each open ancestor of the walk: the call whose arguments its
    /// children are.
    pub(super) argument_of: Vec<Option<u32>>,
    pub(super) src: &'s str,
    pub(super) g: &'static Grammar,
    pub(super) facts: JavaFacts,
    pub(super) frames: Vec<Frame>,
    pub(super) pending: Vec<PendingScope>,
    /// Open nodes that bound the visibility of locals: (node id, end byte).
    pub(super) blocks: Vec<(usize, u32)>,
    pub(super) block_depth: u32,
    /// The last Javadoc comment seen: its byte range.
    pub(super) last_doc: Option<(usize, usize)>,
    pub(super) package_doc: Option<String>,
    /// Entities in creation order, for computing local paths parents first.
    pub(super) order: Vec<Scope>,
    pub(super) anonymous_count: FxHashMap<Scope, u32>,
    pub(super) type_names: FxHashSet<&'s str>,
    pub(super) route_annotations: Vec<(Scope, RouteAnnotation)>,
    pub(super) imported: Imported,
    /// `path("/x", () -> { ... })` groups being walked: (lambda node id, prefix).
    pub(super) path_groups: Vec<(usize, String)>,
    /// Argument lists of recorded calls not reached yet: (node id, call index).
    pub(super) argument_lists: Vec<(usize, u32)>,
    /// The outermost prunable node being walked because its text may hold code.
    pub(super) scanned: Option<usize>,
    /// Fact units not counted by the facts' own lengths: expression nodes
    /// (a call's receiver chain) and fields (see [`Extractor::units`]).
    /// A `Cell` because expressions are built through `&self`.
    pub(super) nested_units: std::cell::Cell<u64>,
    /// The facts budget ([`crate::MAX_FILE_FACTS`]; smaller in tests).
    pub(super) max_units: u64,
    /// The line where the facts budget ran out.
    cut_line: Option<u32>,
    /// The node just entered was refused: its leave is skipped too.
    skip_leave: bool,
}

impl<'s> Extractor<'s> {
    pub(super) fn new(src: &'s str) -> Self {
        Extractor {
            argument_of: Vec::new(),
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
            nested_units: std::cell::Cell::new(0),
            max_units: crate::MAX_FILE_FACTS,
            cut_line: None,
            skip_leave: false,
        }
    }

    /// Counts `n` fact units held inside other facts.
    pub(super) fn spend(&self, n: u64) {
        self.nested_units
            .set(self.nested_units.get().saturating_add(n));
    }

    /// Fact units held so far (see [`Spent::units`]).
    fn units(&self) -> u64 {
        let f = &self.facts;
        let records = f.imports.len()
            + f.types.len()
            + f.methods.len()
            + f.locals.len()
            + f.calls.len()
            + f.routes.len()
            + self.type_names.len();
        (records as u64).saturating_add(self.nested_units.get())
    }

    /// True once the facts budget is spent; the first time, records the
    /// line of `node` as where the file was cut.
    fn over_budget(&mut self, node: Node<'_>) -> bool {
        if self.cut_line.is_some() {
            return true;
        }
        if self.units() <= self.max_units {
            return false;
        }
        self.cut_line = Some(line_of(node.start_position().row));
        true
    }

    pub(super) fn run(mut self, tree: &Tree) -> (JavaFacts, Spent) {
        let root = tree.root_node();
        self.facts.has_syntax_errors = root.has_error();
        crate::lang::walk(tree, &mut self);
        let spent = Spent {
            units: self.units(),
            cut_line: self.cut_line,
        };
        (self.finish(), spent)
    }

    /// Arities and literal kinds are counted as the walk passes the
    /// arguments, instead of iterating every argument list a second time.
    pub(super) fn count_argument(&mut self, call: u32, node: Node<'_>, kind: Kind) {
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
    pub(super) fn take_argument_list(&mut self, id: usize) -> Option<u32> {
        let position = self
            .argument_lists
            .iter()
            .rposition(|(list, _)| *list == id)?;
        Some(self.argument_lists.swap_remove(position).1)
    }

    pub(super) fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// The node's text with whitespace collapsed, cut to [`MAX_TEXT`]. Only
    /// a prefix is looked at: receivers of long call chains would otherwise
    /// be copied once per call.
    pub(super) fn short_text(&self, node: Node<'_>) -> String {
        let text = self.text(node);
        let end = text.floor_char_boundary(4 * MAX_TEXT);
        truncate(&squash(&text[..end]), MAX_TEXT)
    }

    pub(super) fn scope(&self) -> Scope {
        self.frames.last().map_or(Scope::Unit, |f| f.scope)
    }

    /// The innermost method frame, if the walk is inside a method body.
    pub(super) fn method_frame(&self) -> Option<u32> {
        self.frames.iter().rev().find_map(|f| match f.scope {
            Scope::Method(m) => Some(m),
            _ => None,
        })
    }

    pub(super) fn visible_until(&self) -> u32 {
        self.blocks.last().map_or(u32::MAX, |(_, end)| *end)
    }

    pub(super) fn span(&self, node: Node<'_>) -> Span {
        let range = node.byte_range();
        Span {
            start_byte: byte(range.start),
            end_byte: byte(range.end),
            start_line: line_of(node.start_position().row),
            end_line: line_of(node.end_position().row),
        }
    }

    /// Returns whether to descend into the node's children.
    pub(super) fn enter_node(&mut self, node: Node<'_>, kind: Kind) -> bool {
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

    pub(super) fn leave_node(&mut self, node: Node<'_>, kind: Kind) {
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
    pub(super) fn may_hold_code(&mut self, node: Node<'_>) -> bool {
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
    pub(super) fn field_access(&mut self, node: Node<'_>) {
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
    pub(super) fn note_type_names(&mut self, text: &'s str) {
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

    pub(super) fn branch(&mut self) {
        self.facts.complexity.branches += 1;
        if let Some(m) = self.method_frame()
            && let Some(method) = self.facts.methods.get_mut(m as usize)
        {
            method.complexity.branches += 1;
        }
    }

    /// The Javadoc directly before `node` (only whitespace between), if any.
    pub(super) fn javadoc(&mut self, node: Node<'_>) -> Option<String> {
        let (start, end) = self.last_doc?;
        let between = self.src.get(end..node.start_byte())?;
        if !between.bytes().all(|b| b.is_ascii_whitespace()) {
            return None;
        }
        self.last_doc = None;
        clean_javadoc(self.src.get(start..end)?)
    }

    pub(super) fn enter_package(&mut self, node: Node<'_>) {
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

    pub(super) fn enter_import(&mut self, node: Node<'_>) {
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
        self.facts.imports.push(ImportFacts {
            path,
            is_static,
            on_demand,
            line: line_of(node.start_position().row),
        });
    }

    /// Records a call; the walk counts its arguments when it reaches `arguments`.
    pub(super) fn push_call(
        &mut self,
        node: Node<'_>,
        callee: Callee,
        arguments: Option<Node<'_>>,
    ) {
        let scope = self.scope();
        let index = u32::try_from(self.facts.calls.len()).unwrap_or(u32::MAX);
        if let Some(list) = arguments {
            self.argument_lists.push((list.id(), index));
        }
        self.facts.calls.push(Call {
            scope,
            pos: byte(node.start_byte()),
            end: byte(node.end_byte()),
            line: line_of(node.start_position().row),
            callee,
            arity: 0,
            args: Vec::new(),
        });
    }

    pub(super) fn enter_invocation(&mut self, node: Node<'_>) {
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
            Callee::Method {
                receiver,
                name: name.to_string(),
            },
            arguments,
        );
    }

    pub(super) fn enter_new(&mut self, node: Node<'_>) {
        let g = self.g;
        let ([ty, arguments], [body]) =
            self.children(node, [g.field_type, g.field_arguments], [Kind::ClassBody]);
        let Some(ty) = ty else {
            return;
        };
        let erased = erase(self.text(ty)).into_owned();
        self.push_call(node, Callee::New(erased.clone()), arguments);
        if let Some(body) = body {
            let parent = self.scope();
            let n = self.anonymous_count.entry(parent).or_insert(0);
            *n += 1;
            let name = format!("${n}");
            let supers = vec![SuperFacts {
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

    pub(super) fn enter_explicit_constructor(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(which) = g.field(node, g.field_constructor) else {
            return;
        };
        let callee = match g.kind(which) {
            Kind::This => Callee::This,
            _ => Callee::Super,
        };
        self.push_call(node, callee, g.field(node, g.field_arguments));
    }

    pub(super) fn method_reference(&self, node: Node<'_>) -> Option<Callee> {
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
                Expr::Type(erase(self.text(target)).into_owned())
            }
            Kind::Identifier
            | Kind::FieldAccess
            | Kind::This
            | Kind::Super
            | Kind::MethodInvocation
            | Kind::ObjectCreation
            | Kind::ParenthesizedExpression => self.expr(target),
            _ => Expr::Type(erase(self.text(target)).into_owned()),
        };
        Some(Callee::Ref { target, name })
    }

    pub(super) fn enter_method_reference(&mut self, node: Node<'_>) {
        if let Some(callee) = self.method_reference(node) {
            self.push_call(node, callee, None);
        }
    }

    pub(super) fn expr(&self, node: Node<'_>) -> Expr {
        self.expr_at(node, 0)
    }

    pub(super) fn expr_at(&self, node: Node<'_>, depth: u32) -> Expr {
        let g = self.g;
        self.spend(1);
        if depth > MAX_EXPR_DEPTH {
            return Expr::Other(self.short_text(node));
        }
        match g.kind(node) {
            Kind::Identifier => Expr::Name(self.text(node).to_string()),
            Kind::This => Expr::This,
            Kind::Super => Expr::Super,
            Kind::StringLiteral => Expr::Str,
            Kind::FieldAccess => {
                match (g.field(node, g.field_object), g.field(node, g.field_field)) {
                    (Some(object), Some(field)) => Expr::Field(
                        Box::new(self.expr_at(object, depth + 1)),
                        self.text(field).to_string(),
                    ),
                    _ => Expr::Other(self.short_text(node)),
                }
            }
            Kind::MethodInvocation => match g.field(node, g.field_name) {
                Some(name) => Expr::Invoke {
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
                None => Expr::Other(self.short_text(node)),
            },
            Kind::ObjectCreation => match g.field(node, g.field_type) {
                Some(ty) => Expr::New(erase(self.text(ty)).into_owned()),
                None => Expr::Other(self.short_text(node)),
            },
            Kind::Cast => match g.field(node, g.field_type) {
                Some(ty) => Expr::Cast(erase(self.text(ty)).into_owned()),
                None => Expr::Other(self.short_text(node)),
            },
            Kind::ParenthesizedExpression => match node.named_child(0) {
                Some(inner) => self.expr_at(inner, depth + 1),
                None => Expr::Other(self.short_text(node)),
            },
            _ => Expr::Other(self.short_text(node)),
        }
    }

    pub(super) fn finish(mut self) -> JavaFacts {
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
            let top = || self.facts.types.iter().filter(|t| t.parent == Scope::Unit);
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
    pub(super) fn local_paths(&mut self) {
        let facts = &mut self.facts;
        let mut overloads: FxHashMap<(Scope, &str), u32> = FxHashMap::default();
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
        let mut seen: FxHashMap<(Scope, String), u32> = FxHashMap::default();
        for &entity in &self.order {
            let (parent, segment) = match entity {
                Scope::Type(t) => match facts.types.get(t as usize) {
                    Some(t) => (t.parent, t.name.clone()),
                    None => continue,
                },
                Scope::Method(m) => {
                    match (facts.methods.get(m as usize), segments.get(m as usize)) {
                        (Some(method), Some(segment)) => (method.parent, segment.clone()),
                        _ => continue,
                    }
                }
                Scope::Unit => continue,
            };
            let n = seen.entry((parent, segment.clone())).or_insert(0);
            *n += 1;
            let segment = if *n > 1 {
                format!("{segment}#{n}")
            } else {
                segment
            };
            let prefix = match parent {
                Scope::Unit => None,
                Scope::Type(t) => facts.types.get(t as usize).map(|t| t.local_path.as_str()),
                Scope::Method(m) => facts.methods.get(m as usize).map(|m| m.local_path.as_str()),
            };
            let path = match prefix {
                Some(p) if !p.is_empty() => format!("{p}.{segment}"),
                _ => segment,
            };
            match entity {
                Scope::Type(t) => {
                    if let Some(t) = facts.types.get_mut(t as usize) {
                        t.local_path = path;
                    }
                }
                Scope::Method(m) => {
                    if let Some(m) = facts.methods.get_mut(m as usize) {
                        m.local_path = path;
                    }
                }
                Scope::Unit => {}
            }
        }
    }
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

pub(super) fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The contents of a string literal as written (escapes kept).
pub(super) fn string_value(literal: &str) -> String {
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

pub(super) fn byte(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

pub(super) fn line_of(row: usize) -> u32 {
    u32::try_from(row).map_or(u32::MAX, |r| r.saturating_add(1))
}

/// Splits the cost of one file into parsing and extraction (for the measure tool).
#[cfg(feature = "measure")]
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The facts of `src` extracted under a budget of `units`.
    fn facts_within(src: &str, units: u64) -> (JavaFacts, Spent) {
        let mut parser = JavaParser::new().unwrap();
        let tree = parser.parse_tree(src).unwrap();
        let mut extractor = Extractor::new(src);
        extractor.max_units = units;
        extractor.run(&tree)
    }

    #[test]
    fn the_facts_budget_stops_the_walk_and_keeps_what_came_before() {
        let file = |calls: usize| {
            format!(
                "class A {{\n  void g() {{}}\n  void run() {{\n{}  }}\n  void h() {{ g(); }}\n}}\n",
                "    g();\n".repeat(calls)
            )
        };
        let (facts, spent) = facts_within(&file(1_000), 300);
        assert!(spent.units <= 310, "{}", spent.units);
        let line = spent.cut_line.expect("the budget ran out");
        assert!((4..1_004).contains(&line), "{line}");
        let names: Vec<&str> = facts.methods.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["g", "run"], "what follows the cut is not walked");
        let (_, doubled) = facts_within(&file(2_000), 300);
        assert_eq!(doubled.units, spent.units);
        let (facts, spent) = facts_within(&file(10), 300);
        assert_eq!(spent.cut_line, None);
        assert_eq!(facts.methods.len(), 3);
    }

    #[test]
    fn receiver_chains_count_every_copied_node() {
        // Each call of `x.a().a()...` copies its receiver (up to
        // MAX_EXPR_DEPTH nodes): those copies are what the budget counts.
        let src = format!(
            "class A {{ A a() {{ return this; }} void m(A x) {{ x{}; }} }}\n",
            ".a()".repeat(2_000)
        );
        let (facts, spent) = facts_within(&src, 10_000);
        assert_eq!(spent.cut_line, Some(1));
        // The budget may be passed by one call: its receiver's nodes (at
        // most MAX_EXPR_DEPTH + 2) and the call itself.
        assert!(
            spent.units <= 10_000 + u64::from(MAX_EXPR_DEPTH) + 3,
            "{}",
            spent.units
        );
        assert!(facts.calls.len() < 2_000);
    }
}
