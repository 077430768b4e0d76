//! Per-file extraction of Python facts from a tree-sitter syntax tree.
//!
//! One pre-order walk with a [`tree_sitter::TreeCursor`] fills a
//! [`PythonFacts`]. The walk is iterative (an explicit frame stack instead of
//! recursion) so that hostile nesting depth cannot overflow the stack. The
//! facts depend only on the file's text, never on its module name or on other
//! files, which is what lets them be cached by content hash and computed in
//! parallel; resolution across files happens later in [`crate::assemble`].

use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use tree_sitter::{Language, Node, Tree};

use super::convert::is_marker_decorator;
use super::facts::*;
use crate::facts::Spent;
use crate::model::{Complexity, FunctionKind, Param, ParamKind, Span};
use crate::text::{clean_docstring, count_lines, truncate};

/// Longest callee or decorator text kept verbatim.
const MAX_TEXT: usize = 120;
/// Deepest attribute/call chain turned into an [`Expr`] or [`ValueExpr`];
/// deeper is [`Expr::Other`] or [`ValueExpr::Unknown`] (the walk still records
/// the calls below it, each from its own node).
pub(super) const MAX_EXPR_DEPTH: u32 = 48;

/// Node kinds the walk reacts to, looked up through a table indexed by kind id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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
    ForStatement,
    WhileStatement,
    WithItem,
    ExceptClause,
    Lambda,
    /// List, set, dict comprehensions and generator expressions.
    Comprehension,
    ReturnStatement,
    Yield,
    RaiseStatement,
    GlobalStatement,
    NonlocalStatement,
    ConditionalExpression,
    BooleanOperator,
    Subscript,
    Await,
    NamedExpression,
    PatternList,
    TuplePattern,
    ListPattern,
    ExpressionList,
    Dictionary,
    Pair,
    Set,
    ForInClause,
    IfClause,
    AsPattern,
    Slice,
    IfStatement,
    Integer,
    ElifClause,
    ElseClause,
    /// A construct counted by the complexity measure.
    Branch,
}

pub(super) struct Grammar {
    pub(super) language: Language,
    kinds: Vec<Kind>,
    pub(super) field_body: u16,
    pub(super) field_name: u16,
    pub(super) field_parameters: u16,
    pub(super) field_return_type: u16,
    pub(super) field_superclasses: u16,
    pub(super) field_function: u16,
    pub(super) field_arguments: u16,
    pub(super) field_left: u16,
    pub(super) field_right: u16,
    pub(super) field_type: u16,
    pub(super) field_object: u16,
    pub(super) field_attribute: u16,
    pub(super) field_module_name: u16,
    pub(super) field_alias: u16,
    pub(super) field_value: u16,
    pub(super) field_definition: u16,
    pub(super) field_cause: u16,
    pub(super) field_consequence: u16,
    pub(super) field_subscript: u16,
    pub(super) field_key: u16,
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
                    ("for_statement", true) => Kind::ForStatement,
                    ("while_statement", true) => Kind::WhileStatement,
                    ("with_item", true) => Kind::WithItem,
                    ("except_clause", true) => Kind::ExceptClause,
                    ("lambda", true) => Kind::Lambda,
                    (
                        "list_comprehension"
                        | "set_comprehension"
                        | "dictionary_comprehension"
                        | "generator_expression",
                        true,
                    ) => Kind::Comprehension,
                    ("return_statement", true) => Kind::ReturnStatement,
                    ("yield", true) => Kind::Yield,
                    ("raise_statement", true) => Kind::RaiseStatement,
                    ("global_statement", true) => Kind::GlobalStatement,
                    ("nonlocal_statement", true) => Kind::NonlocalStatement,
                    ("conditional_expression", true) => Kind::ConditionalExpression,
                    ("boolean_operator", true) => Kind::BooleanOperator,
                    ("subscript", true) => Kind::Subscript,
                    ("await", true) => Kind::Await,
                    ("named_expression", true) => Kind::NamedExpression,
                    ("pattern_list", true) => Kind::PatternList,
                    ("tuple_pattern", true) => Kind::TuplePattern,
                    ("list_pattern", true) => Kind::ListPattern,
                    ("expression_list", true) => Kind::ExpressionList,
                    ("dictionary", true) => Kind::Dictionary,
                    ("pair", true) => Kind::Pair,
                    ("set", true) => Kind::Set,
                    ("for_in_clause", true) => Kind::ForInClause,
                    ("if_clause", true) => Kind::IfClause,
                    ("as_pattern", true) => Kind::AsPattern,
                    ("slice", true) => Kind::Slice,
                    ("if_statement", true) => Kind::IfStatement,
                    ("integer", true) => Kind::Integer,
                    ("elif_clause", true) => Kind::ElifClause,
                    ("else_clause", true) => Kind::ElseClause,
                    ("case_clause", true) => Kind::Branch,
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
            field_cause: field("cause"),
            field_consequence: field("consequence"),
            field_subscript: field("subscript"),
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

/// A tree-sitter parser configured for Python; one per thread.
pub(crate) struct PythonParser {
    parser: crate::lang::SyntaxParser,
}

impl PythonParser {
    pub(crate) fn new() -> Result<Self, crate::Error> {
        let parser = crate::lang::SyntaxParser::new(&grammar().language, crate::Language::Python)?;
        Ok(Self { parser })
    }

    /// Parses only, for measuring the raw parse cost (and for tests).
    #[cfg(any(test, feature = "measure"))]
    pub(crate) fn parse_tree(&mut self, text: &str) -> Option<Tree> {
        self.parser.parse(text)
    }

    /// Parses `text` and extracts its facts, with what they cost (`None`
    /// only if tree-sitter gives up).
    pub(crate) fn extract(&mut self, text: &str) -> Option<(PythonFacts, Spent)> {
        let tree = self.parser.parse(text)?;
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
    /// Names declared `global` (true) or `nonlocal` (false) in this function.
    declared: Vec<(String, bool)>,
}

/// A definition whose scope opens when the walk reaches its body block.
struct PendingScope {
    body_node: usize,
    frame: Frame,
}

/// A block of statements, for the reaching-bindings pass: blocks are
/// numbered in pre-order, so `a` encloses `b` exactly when
/// `a <= b < end[a]`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    /// One past the last block nested in this one.
    pub end: u32,
    /// The outermost loop body enclosing this block within its scope.
    pub outer_loop: Option<u32>,
}

/// A decorator of the definition being entered: its text and, unless it
/// only marks the function (`staticmethod`, `property`, `x.setter`), its value.
type Decorator = (String, Option<ValueExpr>);

impl crate::lang::Visitor for Extractor<'_> {
    fn enter(&mut self, node: Node<'_>) -> bool {
        // Past the facts budget nothing more is entered, and so nothing
        // more is left either: the nodes already open close as usual.
        if self.over_budget(node) {
            self.skip_leave = true;
            return false;
        }
        let kind = self.g.kind(node);
        self.enter_node(node, kind)
    }

    fn leave(&mut self, node: Node<'_>) {
        if std::mem::take(&mut self.skip_leave) {
            return;
        }
        let kind = self.g.kind(node);
        self.leave_node(node, kind);
    }
}

pub(super) struct Extractor<'s> {
    pub(super) src: &'s str,
    pub(super) g: &'static Grammar,
    pub(super) facts: PythonFacts,
    frames: Vec<Frame>,
    pending: Vec<PendingScope>,
    pub(super) try_depth: u32,
    block_depth: u32,
    /// The decorated definition being entered: (definition node id, outer span, decorators).
    decorated: Option<(usize, Span, Vec<Decorator>)>,
    /// Blocks, and the stack of those the walk is in.
    pub(super) blocks: Vec<Block>,
    pub(super) block_stack: Vec<u32>,
    /// Body blocks of `for` and `while` statements not yet entered.
    loop_bodies: Vec<usize>,
    /// Position and block of each use and binding, aligned with the facts.
    pub(super) use_at: Vec<(u32, u32)>,
    pub(super) binding_at: Vec<(u32, u32)>,
    /// What converting expressions has built ([`super::convert`]).
    pub(super) conversion: super::convert::Conversion,
    /// `if` statements being walked, for the bindings every branch makes.
    ifs: Vec<IfFrame>,
    /// Name id of each distinct name in [`PythonFacts::names`].
    name_ids: FxHashMap<String, u32>,
    /// CLI objects and the main block being walked ([`super::usage`]).
    pub(super) usage: super::usage::UsageState,
    /// The facts budget ([`crate::MAX_FILE_FACTS`]; smaller in tests).
    max_units: u64,
    /// The line where the facts budget ran out.
    cut_line: Option<u32>,
    /// The node just entered was refused: its leave is skipped too.
    skip_leave: bool,
}

/// An `if` statement being walked: when it has an `else`, a name that
/// every branch binds is certainly rebound after it.
struct IfFrame {
    node: usize,
    /// Body blocks of the branches, by node id, and as entered.
    expected: Vec<usize>,
    branches: Vec<u32>,
    has_else: bool,
    first_binding: usize,
}

/// Bindings an `if` statement may hold for its join to be computed.
const MAX_JOIN_BINDINGS: usize = 512;

impl<'s> Extractor<'s> {
    fn new(src: &'s str) -> Self {
        Extractor {
            src,
            g: grammar(),
            facts: PythonFacts {
                docstring: None,
                line_count: count_lines(src),
                has_syntax_errors: false,
                complexity: Complexity::default(),
                all: None,
                names: Vec::new(),
                classes: Vec::new(),
                functions: Vec::new(),
                imports: Vec::new(),
                bindings: Vec::new(),
                uses: Vec::new(),
                calls: Vec::new(),
                lambdas: Vec::new(),
                effects: Vec::new(),
                containers: 0,
                container_kinds: Vec::new(),
                routes: Vec::new(),
                usage: Default::default(),
            },
            frames: Vec::new(),
            pending: Vec::new(),
            try_depth: 0,
            block_depth: 0,
            decorated: None,
            blocks: vec![Block {
                end: u32::MAX,
                outer_loop: None,
            }],
            block_stack: vec![0],
            loop_bodies: Vec::new(),
            use_at: Vec::new(),
            binding_at: Vec::new(),
            conversion: Default::default(),
            ifs: Vec::new(),
            name_ids: FxHashMap::default(),
            usage: Default::default(),
            max_units: crate::MAX_FILE_FACTS,
            cut_line: None,
            skip_leave: false,
        }
    }

    /// Fact units held so far (see [`Spent::units`]): a few additions,
    /// cheap enough to check at every node.
    fn units(&self) -> u64 {
        let f = &self.facts;
        let records = f.uses.len()
            + f.bindings.len()
            + f.calls.len()
            + f.effects.len()
            + f.lambdas.len()
            + f.names.len()
            + f.classes.len()
            + f.functions.len()
            + f.imports.len()
            + f.routes.len();
        records as u64 + self.conversion.vexprs
    }

    /// True once the facts budget is spent; the first time, records the
    /// line of `node` as where the file was cut.
    pub(super) fn over_budget(&mut self, node: Node<'_>) -> bool {
        if self.cut_line.is_some() {
            return true;
        }
        if self.units() <= self.max_units {
            return false;
        }
        self.cut_line = Some(line_of(node.start_position().row));
        true
    }

    /// The id of `text` in the file's name table.
    pub(super) fn name_id(&mut self, text: &str) -> u32 {
        if let Some(id) = self.name_ids.get(text) {
            return *id;
        }
        let id = u32::try_from(self.facts.names.len()).unwrap_or(u32::MAX);
        self.facts.names.push(text.to_string());
        self.name_ids.insert(text.to_string(), id);
        id
    }

    fn run(mut self, tree: &Tree) -> (PythonFacts, Spent) {
        let root = tree.root_node();
        self.facts.has_syntax_errors = root.has_error();
        self.facts.docstring = self.docstring_of_block(root);
        crate::lang::walk(tree, &mut self);
        let total = u32::try_from(self.blocks.len()).unwrap_or(u32::MAX);
        if let Some(root) = self.blocks.first_mut() {
            root.end = total;
        }
        super::reach::compute(
            &mut self.facts,
            &self.use_at,
            &self.binding_at,
            &self.blocks,
        );
        super::keyed::strong_updates(
            &mut self.facts,
            &self.use_at,
            &self.binding_at,
            &self.blocks,
            &self.conversion.keyed_stores,
            self.conversion.has_slices,
        );
        self.facts.shrink();
        let spent = Spent {
            units: self.units(),
            cut_line: self.cut_line,
        };
        (self.facts, spent)
    }

    pub(super) fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    pub(super) fn short_text(&self, node: Node<'_>) -> String {
        truncate(self.text(node), MAX_TEXT)
    }

    pub(super) fn scope(&self) -> ScopeRef {
        if let Some(scope) = self.conversion.scope_override.last() {
            return *scope;
        }
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
            ScopeRef::Module | ScopeRef::Lambda(_) => None,
            ScopeRef::Class(c) => self.facts.classes.get(c as usize).map(|c| &c.local_path),
            ScopeRef::Function(f) => self.facts.functions.get(f as usize).map(|f| &f.local_path),
        };
        match parent {
            Some(p) => format!("{p}.{name}"),
            None => name.to_string(),
        }
    }

    pub(super) fn current_block(&self) -> u32 {
        self.block_stack.last().copied().unwrap_or(0)
    }

    /// Binds `name` in the current scope (or where `global`/`nonlocal`
    /// sends it), taking effect at byte `pos`; returns the binding's index.
    pub(super) fn bind(&mut self, name: &str, value: BindValue, pos: usize) -> u32 {
        let mut scope = self.scope();
        if self.conversion.scope_override.is_empty()
            && matches!(scope, ScopeRef::Function(_))
            && let Some(frame) = self.frames.last()
            && let Some((_, global)) = frame.declared.iter().find(|(n, _)| n == name)
        {
            scope = if *global {
                ScopeRef::Module
            } else {
                self.frames
                    .iter()
                    .rev()
                    .skip(1)
                    .find(|f| matches!(f.scope, ScopeRef::Function(_)))
                    .map_or(ScopeRef::Module, |f| f.scope)
            };
        }
        let index = u32::try_from(self.facts.bindings.len()).unwrap_or(u32::MAX);
        let name = self.name_id(name);
        self.facts.bindings.push(Binding { scope, name, value });
        let block = self.current_block();
        self.binding_at
            .push((u32::try_from(pos).unwrap_or(u32::MAX), block));
        index
    }

    /// Opens a block nested in the current one.
    pub(super) fn push_block(&mut self, scope_root: bool, is_loop: bool) {
        let index = u32::try_from(self.blocks.len()).unwrap_or(u32::MAX);
        let parent_loop = if scope_root {
            None
        } else {
            self.blocks
                .get(self.current_block() as usize)
                .and_then(|b| b.outer_loop)
        };
        self.blocks.push(Block {
            end: u32::MAX,
            outer_loop: parent_loop.or(is_loop.then_some(index)),
        });
        self.block_stack.push(index);
    }

    pub(super) fn pop_block(&mut self) {
        if self.block_stack.len() <= 1 {
            return;
        }
        let total = u32::try_from(self.blocks.len()).unwrap_or(u32::MAX);
        if let Some(index) = self.block_stack.pop()
            && let Some(block) = self.blocks.get_mut(index as usize)
        {
            block.end = total;
        }
    }

    /// Returns whether to descend into the node's children.
    fn enter_node(&mut self, node: Node<'_>, kind: Kind) -> bool {
        let mut scope_root = false;
        if let Some(pending) = self.pending.last()
            && pending.body_node == node.id()
            && let Some(pending) = self.pending.pop()
        {
            self.frames.push(pending.frame);
            scope_root = true;
        }
        match kind {
            Kind::FunctionDefinition => self.enter_function(node),
            Kind::ClassDefinition => self.enter_class(node),
            Kind::DecoratedDefinition => self.enter_decorated(node),
            Kind::Call if !self.conversion.calls_by_node.contains_key(&node.id()) => {
                self.vexpr(node, 0);
            }
            Kind::Lambda if !self.conversion.lambdas_by_node.contains_key(&node.id()) => {
                self.vexpr(node, 0);
            }
            Kind::Comprehension => {
                self.count_branch();
                if !self.conversion.done.contains(&node.id()) {
                    self.vexpr(node, 0);
                }
            }
            // Attribute reads outside any converted expression (conditions,
            // operators, f-strings) still load, so a property there is called.
            Kind::NamedExpression if !self.conversion.done.contains(&node.id()) => {
                self.vexpr(node, 0);
            }
            Kind::Attribute if !self.conversion.done.contains(&node.id()) => {
                let value = self.vexpr(node, 0);
                let scope = self.scope();
                self.facts.effects.push((scope, Effect::Eval(value)));
            }
            Kind::Import | Kind::ImportFrom | Kind::FutureImport => {
                self.enter_import(node);
                return false;
            }
            Kind::Assignment => self.enter_assignment(node),
            Kind::AugmentedAssignment => self.enter_augmented_assignment(node),
            Kind::ForStatement => {
                self.count_branch();
                self.enter_for(node);
            }
            Kind::WhileStatement => {
                self.count_branch();
                if let Some(body) = self.g.field(node, self.g.field_body) {
                    self.loop_bodies.push(body.id());
                }
            }
            Kind::WithItem => self.enter_with_item(node),
            Kind::ExceptClause => {
                self.count_branch();
                self.enter_except(node);
            }
            Kind::ReturnStatement => self.enter_return(node),
            Kind::Yield => self.enter_yield(node),
            Kind::RaiseStatement => self.enter_raise(node),
            Kind::GlobalStatement | Kind::NonlocalStatement => {
                self.enter_declaration(node, kind == Kind::GlobalStatement)
            }
            Kind::Try => self.try_depth += 1,
            Kind::Block => {
                self.block_depth += 1;
                let is_loop = self.loop_bodies.last() == Some(&node.id());
                if is_loop {
                    self.loop_bodies.pop();
                }
                self.push_block(scope_root, is_loop);
                let block = self.current_block();
                if let Some(frame) = self.ifs.last_mut()
                    && frame.expected.contains(&node.id())
                {
                    frame.branches.push(block);
                }
            }
            Kind::IfStatement => {
                self.count_branch();
                self.enter_if(node);
                self.enter_main_block(node);
            }
            Kind::ElifClause => self.count_branch(),
            Kind::Branch => self.count_branch(),
            Kind::Comment | Kind::Type => return false,
            // Only f-strings hold code (interpolations); other strings are skipped whole.
            Kind::String => return self.is_f_string(node),
            _ => {}
        }
        true
    }

    fn enter_if(&mut self, node: Node<'_>) {
        let g = self.g;
        let mut expected = Vec::new();
        let mut has_else = false;
        if let Some(body) = g.field(node, g.field_consequence) {
            expected.push(body.id());
        }
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match g.kind(child) {
                Kind::ElifClause => {
                    if let Some(body) = g.field(child, g.field_consequence) {
                        expected.push(body.id());
                    }
                }
                Kind::ElseClause => {
                    has_else = true;
                    if let Some(body) = g.field(child, g.field_body) {
                        expected.push(body.id());
                    }
                }
                _ => {}
            }
        }
        self.ifs.push(IfFrame {
            node: node.id(),
            expected,
            branches: Vec::new(),
            has_else,
            first_binding: self.facts.bindings.len(),
        });
    }

    /// After `if/elif/else`, a name bound directly in every branch holds
    /// one of those values: a join binding that hides the older ones.
    fn leave_if(&mut self, node: Node<'_>) {
        let Some(frame) = self.ifs.pop() else {
            return;
        };
        if frame.node != node.id() {
            return;
        }
        let end = self.facts.bindings.len();
        if !frame.has_else
            || frame.branches.len() != frame.expected.len()
            || end - frame.first_binding > MAX_JOIN_BINDINGS
        {
            return;
        }
        let scope = self.scope();
        // name -> last binding in each branch
        let mut last: Vec<(u32, Vec<Option<u32>>)> = Vec::new();
        for b in frame.first_binding..end {
            let (Some(binding), Some((_, block))) =
                (self.facts.bindings.get(b), self.binding_at.get(b))
            else {
                continue;
            };
            let Some(branch) = frame.branches.iter().position(|x| x == block) else {
                continue;
            };
            if self.facts.name(binding.name).is_empty() || binding.scope != scope {
                continue;
            }
            let entry = match last.iter().position(|(n, _)| *n == binding.name) {
                Some(i) => &mut last[i].1,
                None => {
                    last.push((binding.name, vec![None; frame.branches.len()]));
                    match last.last_mut() {
                        Some(l) => &mut l.1,
                        None => continue,
                    }
                }
            };
            entry[branch] = Some(b as u32);
        }
        for (name, branches) in last {
            let all: Option<Vec<u32>> = branches.into_iter().collect();
            if let Some(all) = all {
                let value = ValueExpr::union(all.into_iter().map(ValueExpr::Ref).collect());
                let name = self.facts.name(name).to_string();
                self.bind(&name, BindValue::Expr(value), node.end_byte());
            }
        }
    }

    fn count_branch(&mut self) {
        self.facts.complexity.branches += 1;
        if let Some(ScopeRef::Function(f)) = self.function_frame().map(|f| f.scope)
            && let Some(function) = self.facts.functions.get_mut(f as usize)
        {
            function.complexity.branches += 1;
        }
    }

    pub(super) fn is_f_string(&self, node: Node<'_>) -> bool {
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
    fn leave_node(&mut self, node: Node<'_>, kind: Kind) {
        match kind {
            Kind::Try => self.try_depth = self.try_depth.saturating_sub(1),
            Kind::IfStatement => {
                self.leave_if(node);
                self.leave_main_block(node);
            }
            Kind::Block => {
                self.block_depth = self.block_depth.saturating_sub(1);
                self.pop_block();
                if self.frames.last().is_some_and(|f| f.end_node == node.id()) {
                    self.frames.pop();
                }
            }
            _ => {}
        }
    }

    /// Remembers the decorators for the definition that follows them, and
    /// evaluates them where they are written (before the definition).
    /// (`Node::parent` would walk down from the root for every definition.)
    fn enter_decorated(&mut self, node: Node<'_>) {
        let Some(definition) = node.child_by_field_id(self.g.field_definition) else {
            return;
        };
        let mut decorators = Vec::new();
        let mut cursor = node.walk();
        let is_function = self.g.kind(definition) == Kind::FunctionDefinition;
        let children: Vec<Node<'_>> = node
            .named_children(&mut cursor)
            .filter(|c| self.g.kind(*c) == Kind::Decorator)
            .collect();
        for child in children.iter().copied() {
            let text = truncate(self.text(child).trim_start_matches('@').trim(), MAX_TEXT);
            if is_function {
                self.route_decorator(child);
            }
            let value = match child.named_child(0) {
                Some(expr) if !is_marker_decorator(&text) => Some(self.vexpr(expr, 0)),
                _ => None,
            };
            decorators.push((text, value));
        }
        if is_function {
            self.usage_decorators(&children, definition, self.span(node));
        }
        self.decorated = Some((definition.id(), self.span(node), decorators));
    }

    /// The binding value of a definition: the decorators applied to it,
    /// innermost first, each a call site of its own.
    fn decorate(
        &mut self,
        definition: ValueExpr,
        decorators: &[Decorator],
        line: u32,
    ) -> ValueExpr {
        let mut value = definition;
        for (_, decorator) in decorators.iter().rev() {
            let Some(decorator) = decorator else { continue };
            let index = self.push_call(CallFacts {
                scope: self.scope(),
                callee: decorator.clone(),
                args: Box::new([Arg {
                    kind: ArgKind::Positional(0),
                    value,
                }]),
                line,
                kind: CallKind::Decorator,
            });
            value = ValueExpr::Call(index);
        }
        value
    }

    pub(super) fn push_call(&mut self, call: CallFacts) -> u32 {
        let index = u32::try_from(self.facts.calls.len()).unwrap_or(u32::MAX);
        self.facts.calls.push(call);
        index
    }

    /// The span including decorators, and the decorator texts, of a definition.
    fn decorations(&mut self, node: Node<'_>) -> (Span, Vec<Decorator>) {
        match self.decorated.take() {
            Some((id, span, decorators)) if id == node.id() => (span, decorators),
            other => {
                self.decorated = other;
                (self.span(node), Vec::new())
            }
        }
    }

    pub(super) fn span(&self, node: Node<'_>) -> Span {
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
        let has = |wanted: &[&str]| {
            decorators.iter().any(|(d, _)| {
                wanted
                    .iter()
                    .any(|w| d == w || d.rsplit_once('.').is_some_and(|(_, last)| last == *w))
            })
        };
        let kind = match enclosing_class {
            None => FunctionKind::Function,
            Some(_) if has(&["staticmethod"]) => FunctionKind::StaticMethod,
            Some(_) if has(&["classmethod"]) => FunctionKind::ClassMethod,
            Some(_) => FunctionKind::Method,
        };
        let is_property = has(&["property", "cached_property"]);
        let is_accessor = decorators.iter().any(|(d, _)| {
            d.ends_with(".setter") || d.ends_with(".deleter") || d.ends_with(".getter")
        });
        let is_async = node
            .child(0)
            .is_some_and(|first| self.text(first) == "async");
        let params_node = g.field(node, g.field_parameters);
        let params = params_node.map(|p| self.parameters(p)).unwrap_or_default();
        let return_node = g.field(node, g.field_return_type);
        let returns = return_node.map(|r| self.short_text(r));
        let returns_value = match (&returns, return_node) {
            (Some(text), Some(r)) => self.annotation_value(text, r.start_byte()),
            _ => None,
        };
        // Defaults and annotations are evaluated in the enclosing scope.
        let param_values = params_node
            .map(|p| self.parameter_values(p))
            .unwrap_or_default();
        let body = g.field(node, g.field_body);
        let docstring = body.and_then(|b| self.docstring_of_block(b));
        let id = u32::try_from(self.facts.functions.len()).unwrap_or(u32::MAX);
        let local_path = self.local_path(&name);
        let depth = self.block_depth;
        self.facts.complexity.max_def_depth = self.facts.complexity.max_def_depth.max(depth);

        let line = line_of(node.start_position().row);
        let value = self.decorate(ValueExpr::Function(id), &decorators, line);
        if !is_accessor {
            self.bind(&name, BindValue::Expr(value), node.end_byte());
        }
        let scope = ScopeRef::Function(id);
        let self_name = match kind {
            FunctionKind::Method | FunctionKind::ClassMethod => params
                .first()
                .filter(|p| p.kind == ParamKind::Normal)
                .map(|p| p.name.clone()),
            _ => None,
        };
        let block = self.current_block();
        for ((position, param), (annotation, default)) in
            params.iter().enumerate().zip(param_values)
        {
            if param.name.is_empty() {
                continue;
            }
            let name = self.name_id(&param.name);
            self.facts.bindings.push(Binding {
                scope,
                name,
                value: BindValue::Param {
                    position: u32::try_from(position).unwrap_or(u32::MAX),
                    star: matches!(param.kind, ParamKind::VarPositional | ParamKind::VarKeyword),
                    annotation,
                    default,
                },
            });
            self.binding_at.push((0, block));
        }
        self.facts.functions.push(FunctionFacts {
            name,
            local_path,
            parent,
            kind,
            params,
            returns,
            returns_value,
            decorators: decorators.into_iter().map(|(text, _)| text).collect(),
            is_async,
            is_generator: false,
            is_property,
            docstring,
            span: outer,
            complexity: Complexity {
                branches: 0,
                max_def_depth: depth,
            },
        });
        if let Some(body) = body {
            self.pending.push(PendingScope {
                body_node: body.id(),
                frame: Frame {
                    scope,
                    end_node: body.id(),
                    self_name,
                    class: enclosing_class,
                    declared: Vec::new(),
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
            let nodes: Vec<Node<'_>> = list
                .named_children(&mut cursor)
                .filter(|b| !matches!(g.kind(*b), Kind::KeywordArgument | Kind::Comment))
                .collect();
            for base in nodes {
                let value = self.vexpr(base, 0);
                bases.push((self.short_text(base), value));
            }
        }
        let body = g.field(node, g.field_body);
        let docstring = body.and_then(|b| self.docstring_of_block(b));
        let id = u32::try_from(self.facts.classes.len()).unwrap_or(u32::MAX);
        let local_path = self.local_path(&name);
        let parent = self.scope();
        let line = line_of(node.start_position().row);
        let value = self.decorate(ValueExpr::Class(id), &decorators, line);
        self.bind(&name, BindValue::Expr(value), node.end_byte());
        self.facts.classes.push(ClassFacts {
            name,
            local_path,
            parent,
            bases,
            decorators: decorators.into_iter().map(|(text, _)| text).collect(),
            docstring,
            span: outer,
            self_attrs: Vec::new(),
        });
        if let Some(body) = body {
            self.pending.push(PendingScope {
                body_node: body.id(),
                frame: Frame {
                    scope: ScopeRef::Class(id),
                    end_node: body.id(),
                    self_name: None,
                    class: None,
                    declared: Vec::new(),
                },
            });
        }
    }

    pub(super) fn loop_body(&mut self, body: usize) {
        self.loop_bodies.push(body);
    }

    /// The `self` name and class of the method being walked.
    pub(super) fn method_self(&self) -> Option<(&str, u32)> {
        if !self.conversion.scope_override.is_empty() {
            return None;
        }
        let frame = self.function_frame()?;
        Some((frame.self_name.as_deref()?, frame.class?))
    }

    /// The innermost function scope, outside lambdas.
    pub(super) fn innermost_function(&self) -> Option<ScopeRef> {
        self.function_frame().map(|f| f.scope)
    }

    /// `global x` / `nonlocal x`: later bindings of `x` in this function go
    /// to the module or the enclosing function.
    pub(super) fn enter_declaration(&mut self, node: Node<'_>, global: bool) {
        let mut cursor = node.walk();
        let names: Vec<String> = node
            .named_children(&mut cursor)
            .filter(|c| self.g.kind(*c) == Kind::Identifier)
            .map(|c| self.text(c).to_string())
            .collect();
        if let Some(frame) = self
            .frames
            .last_mut()
            .filter(|f| matches!(f.scope, ScopeRef::Function(_)))
        {
            frame
                .declared
                .extend(names.into_iter().map(|n| (n, global)));
        }
    }

    pub(super) fn string_list(&self, node: Node<'_>) -> Vec<String> {
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
    pub(super) fn expr(&self, node: Node<'_>) -> Expr {
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
    pub(super) fn docstring_of_block(&self, block: Node<'_>) -> Option<String> {
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
    pub(super) fn string_value(&self, node: Node<'_>) -> Option<String> {
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
pub(super) fn annotation_target(text: &str) -> Option<Expr> {
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

pub(super) fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

pub(super) fn line_of(row: usize) -> u32 {
    u32::try_from(row).map_or(u32::MAX, |r| r.saturating_add(1))
}

/// Splits the cost of one file into parsing and extraction (for the measure tool).
#[doc(hidden)]
#[cfg(feature = "measure")]
pub(crate) fn time_parse_and_extract(
    text: &str,
) -> Option<(std::time::Duration, std::time::Duration)> {
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
#[path = "extract_tests.rs"]
mod tests;
