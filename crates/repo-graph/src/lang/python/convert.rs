//! Turning expressions and binding statements into the value-flow facts
//! ([`ValueExpr`], bindings, uses, call sites, effects) of one file.
//!
//! Conversion recurses on expressions only to [`MAX_EXPR_DEPTH`]; deeper
//! subtrees become [`ValueExpr::Unknown`], and the walk in [`super::extract`]
//! still turns every call node it meets into a call site of its own, so
//! nothing is lost to the bound except value flow through absurdly deep
//! expressions. Every node is converted at most once (calls and lambdas are
//! remembered by node id), which keeps extraction linear.

use rustc_hash::{FxHashMap, FxHashSet};
use tree_sitter::Node;

use super::extract::{Extractor, Kind, MAX_EXPR_DEPTH, annotation_target, line_of};
use super::facts::*;

/// What converting expressions has built so far in one file: the nodes
/// already turned into call sites, lambdas or parts of another
/// conversion, the lambda bodies being converted, and the cost.
#[derive(Default)]
pub(super) struct Conversion {
    /// Call nodes already turned into call sites.
    pub(super) calls_by_node: FxHashMap<usize, u32>,
    /// Lambda nodes already turned into lambdas.
    pub(super) lambdas_by_node: FxHashMap<usize, u32>,
    /// Expression and statement nodes already converted as part of another.
    pub(super) done: FxHashSet<usize>,
    /// Scopes entered by conversion (lambda bodies), innermost last.
    pub(super) scope_override: Vec<ScopeRef>,
    /// Value expression nodes built, for [`Extractor::units`].
    pub(super) vexprs: u64,
    /// Literal-key stores into a plain name ([`super::keyed`]).
    pub(super) keyed_stores: Vec<super::keyed::KeyedStore>,
    /// Whether a [`ValueExpr::Slice`] was made ([`super::keyed`]).
    pub(super) has_slices: bool,
}

/// Decorators that only mark a function: the name stays bound to it.
pub(super) fn is_marker_decorator(text: &str) -> bool {
    let last = text.rsplit_once('.').map_or(text, |(_, last)| last);
    matches!(
        last,
        "staticmethod"
            | "classmethod"
            | "property"
            | "cached_property"
            | "abstractmethod"
            | "overload"
            | "setter"
            | "getter"
            | "deleter"
            | "override"
            | "final"
    )
}

/// Longest chain of `a = b = c = ...` targets followed.
const MAX_CHAIN: usize = 4096;

impl<'s> Extractor<'s> {
    /// Records a read of `name` at byte `pos`.
    pub(super) fn use_name(&mut self, name: &str, pos: usize) -> ValueExpr {
        let index = u32::try_from(self.facts.uses.len()).unwrap_or(u32::MAX);
        let name = self.name_id(name);
        self.facts.uses.push(Use {
            scope: self.scope(),
            name,
            reach: Reach::Enclosing,
        });
        let block = self.current_block();
        self.use_at
            .push((u32::try_from(pos).unwrap_or(u32::MAX), block));
        ValueExpr::Use(index)
    }

    /// The value of an expression node.
    pub(super) fn vexpr(&mut self, node: Node<'_>, depth: u32) -> ValueExpr {
        if depth > MAX_EXPR_DEPTH || self.over_budget(node) {
            return ValueExpr::Unknown;
        }
        self.conversion.vexprs += 1;
        let g = self.g;
        match g.kind(node) {
            Kind::Identifier => {
                let name = self.text(node);
                self.use_name(name, node.start_byte())
            }
            Kind::Attribute | Kind::Call | Kind::Subscript => self.spine(node, depth),
            Kind::ParenthesizedExpression | Kind::Await => match node.named_child(0) {
                Some(inner) => self.vexpr(inner, depth + 1),
                None => ValueExpr::Unknown,
            },
            Kind::Tuple | Kind::List | Kind::Set | Kind::ExpressionList | Kind::Dictionary => {
                self.container(node, depth)
            }
            Kind::Comprehension => self.comprehension(node, depth),
            Kind::Lambda => self.lambda(node, depth),
            Kind::ConditionalExpression => {
                let mut cursor = node.walk();
                let parts: Vec<Node<'_>> = node
                    .named_children(&mut cursor)
                    .filter(|c| g.kind(*c) != Kind::Comment)
                    .collect();
                // `a if condition else b`: the condition's calls are walked anyway.
                let values = [parts.first(), parts.get(2)]
                    .into_iter()
                    .flatten()
                    .copied()
                    .map(|p| self.vexpr(p, depth + 1))
                    .collect();
                ValueExpr::union(values)
            }
            Kind::BooleanOperator => {
                let parts = [g.field(node, g.field_left), g.field(node, g.field_right)];
                ValueExpr::union(
                    parts
                        .into_iter()
                        .flatten()
                        .map(|p| self.vexpr(p, depth + 1))
                        .collect(),
                )
            }
            Kind::NamedExpression => {
                self.conversion.done.insert(node.id());
                let (Some(name), Some(value)) =
                    (g.field(node, g.field_name), g.field(node, g.field_value))
                else {
                    return ValueExpr::Unknown;
                };
                let value = self.vexpr(value, depth + 1);
                let name = self.text(name).to_string();
                let binding = self.bind(&name, BindValue::Expr(value), node.end_byte());
                ValueExpr::Ref(binding)
            }
            _ => ValueExpr::Unknown,
        }
    }

    /// A call expression: a call site (once per node), or what a few
    /// builtins mean for value flow.
    /// An attribute, call and subscript chain (`a.b(x).c[0]()`), walked
    /// down its spine without recursion and built back up from the base,
    /// so a chain of any length keeps every call linked to its callee. Only
    /// runs of attributes and subscripts longer than [`MAX_EXPR_DEPTH`]
    /// between two calls lose their base.
    fn spine(&mut self, node: Node<'_>, depth: u32) -> ValueExpr {
        let g = self.g;
        let mut chain = Vec::new();
        let mut current = node;
        let mut base = None;
        loop {
            let next = match g.kind(current) {
                Kind::Call => {
                    if let Some(index) = self.conversion.calls_by_node.get(&current.id()) {
                        base = Some(if *index == u32::MAX {
                            ValueExpr::Unknown
                        } else {
                            ValueExpr::Call(*index)
                        });
                        break;
                    }
                    g.field(current, g.field_function)
                }
                Kind::Attribute => g.field(current, g.field_object),
                Kind::Subscript => g.field(current, g.field_value),
                Kind::ParenthesizedExpression | Kind::Await => match current.named_child(0) {
                    Some(inner) => {
                        current = inner;
                        continue;
                    }
                    None => {
                        base = Some(ValueExpr::Unknown);
                        break;
                    }
                },
                _ => break,
            };
            chain.push(current);
            match next {
                Some(next) => current = next,
                None => {
                    base = Some(ValueExpr::Unknown);
                    break;
                }
            }
        }
        let mut value = match base {
            Some(value) => value,
            // `", ".join(parts)`: a method of `str` (a literal nowhere else
            // becomes a value, so strings do not flow through the program).
            None if g.kind(current) == Kind::String
                && chain.last().is_some_and(|l| g.kind(*l) == Kind::Attribute) =>
            {
                ValueExpr::StrLiteral
            }
            None => self.vexpr(current, depth + 1),
        };
        let mut nested = 0u32;
        for link in chain.into_iter().rev() {
            // One statement can hold a chain as long as the file: the
            // budget is checked at every link, not only between statements.
            if self.over_budget(link) {
                return ValueExpr::Unknown;
            }
            self.conversion.vexprs += 1;
            match g.kind(link) {
                Kind::Call => {
                    value = self.call(link, value, depth);
                    nested = 0;
                }
                kind => {
                    self.conversion.done.insert(link.id());
                    nested += 1;
                    if nested > MAX_EXPR_DEPTH {
                        nested = 0;
                        value = ValueExpr::Unknown;
                    } else if kind == Kind::Attribute {
                        value = match g.field(link, g.field_attribute) {
                            Some(attr) => {
                                let attr = self.name_id(self.text(attr));
                                ValueExpr::Attr(Box::new(value), attr)
                            }
                            None => ValueExpr::Unknown,
                        };
                    } else {
                        let subscript = g.field(link, g.field_subscript);
                        // A slice is a container of the same elements, or
                        // of some of them when its bounds are literal.
                        if let Some(slice) = subscript.filter(|k| g.kind(*k) == Kind::Slice) {
                            if let Some((start, stop)) = self.literal_bounds(slice) {
                                self.conversion.has_slices = true;
                                value =
                                    ValueExpr::Slice(Box::new(SliceExpr { value, start, stop }));
                            }
                            continue;
                        }
                        let key = subscript.and_then(|k| self.literal_key(k));
                        value = match key {
                            Some(key) => ValueExpr::ElemAt(Box::new(value), key),
                            None => ValueExpr::Elem(Box::new(value)),
                        };
                    }
                }
            }
        }
        value
    }

    /// A call expression whose callee evaluates to `callee`: a call site
    /// (once per node), or what a few builtins mean for value flow.
    fn call(&mut self, node: Node<'_>, callee: ValueExpr, depth: u32) -> ValueExpr {
        if let Some(index) = self.conversion.calls_by_node.get(&node.id()) {
            return ValueExpr::Call(*index);
        }
        let g = self.g;
        let Some(function) = g.field(node, g.field_function) else {
            return ValueExpr::Unknown;
        };
        let arguments = g.field(node, g.field_arguments);
        if g.kind(function) == Kind::Identifier {
            match self.text(function) {
                "super" => {
                    let value = match arguments.and_then(|args| {
                        Some((self.positional_arg(args, 0)?, self.positional_arg(args, 1)?))
                    }) {
                        Some((class, object)) => {
                            let class = self.vexpr(class, depth + 1);
                            let object = self.vexpr(object, depth + 1);
                            ValueExpr::SuperOf(Box::new((class, object)))
                        }
                        None => ValueExpr::Super,
                    };
                    // Still a call of the builtin, for the record (an
                    // external callee, `builtins.super`, unless shadowed);
                    // its result is never read: the value is the super
                    // object above, and a second conversion of the node
                    // finds no site (`u32::MAX`), as before.
                    self.push_call(CallFacts {
                        scope: self.scope(),
                        callee,
                        args: Box::default(),
                        line: line_of(node.start_position().row),
                        kind: CallKind::Written,
                    });
                    self.conversion.calls_by_node.insert(node.id(), u32::MAX);
                    return value;
                }
                // `getattr(obj, "name")` reads the attribute.
                "getattr" => {
                    if let Some(args) = arguments
                        && let Some(object) = self.positional_arg(args, 0)
                        && let Some(name) = self
                            .positional_arg(args, 1)
                            .and_then(|n| self.plain_string(n))
                            .filter(|n| is_identifier(n))
                    {
                        let base = self.vexpr(object, depth + 1);
                        let name = self.name_id(&name);
                        let mut value = ValueExpr::Attr(Box::new(base), name);
                        if let Some(default) = self.positional_arg(args, 2) {
                            let default = self.vexpr(default, depth + 1);
                            value = ValueExpr::union(vec![value, default]);
                        }
                        // Still a call of the builtin, for the record.
                        let index = self.push_call(CallFacts {
                            scope: self.scope(),
                            callee,
                            args: Box::default(),
                            line: line_of(node.start_position().row),
                            kind: CallKind::Written,
                        });
                        self.conversion.calls_by_node.insert(node.id(), index);
                        return value;
                    }
                }
                "eval" | "exec" => self.evaluated_call(node, arguments),
                _ => {}
            }
        }
        let mut args = Vec::new();
        if let Some(list) = arguments {
            if g.kind(list) == Kind::Comprehension {
                // `f(x for x in xs)`: one generator argument.
                let value = self.vexpr(list, depth + 1);
                args.push(Arg {
                    kind: ArgKind::Positional(0),
                    value,
                });
            } else {
                let mut cursor = list.walk();
                let children: Vec<Node<'_>> = list.named_children(&mut cursor).collect();
                let mut position = 0u32;
                for arg in children {
                    let (kind, value) = match g.kind(arg) {
                        Kind::KeywordArgument => {
                            let keyword = g
                                .field(arg, g.field_name)
                                .map(|n| self.text(n).to_string())
                                .unwrap_or_default();
                            let value = match g.field(arg, g.field_value) {
                                Some(v) => self.vexpr(v, depth + 1),
                                None => ValueExpr::Unknown,
                            };
                            (ArgKind::Keyword(self.name_id(&keyword)), value)
                        }
                        Kind::ListSplat => {
                            let value = match arg.named_child(0) {
                                Some(v) => self.vexpr(v, depth + 1),
                                None => ValueExpr::Unknown,
                            };
                            (ArgKind::Star, value)
                        }
                        Kind::DictionarySplat => {
                            let value = match arg.named_child(0) {
                                Some(v) => self.vexpr(v, depth + 1),
                                None => ValueExpr::Unknown,
                            };
                            (ArgKind::DoubleStar, value)
                        }
                        Kind::Comment => continue,
                        _ => {
                            let value = self.vexpr(arg, depth + 1);
                            position += 1;
                            (ArgKind::Positional(position - 1), value)
                        }
                    };
                    args.push(Arg { kind, value });
                }
            }
        }
        // The callee is turned into an `Expr` only for a mount: every call
        // of a long chain would otherwise copy the chain below it.
        if let Some(list) = arguments
            && g.kind(function) == Kind::Attribute
            && g.field(function, g.field_attribute)
                .is_some_and(|verb| super::routes::mount_prefix_keyword(self.text(verb)).is_some())
            && let Expr::Attr(receiver, verb) = self.expr(function)
        {
            self.mount_call(&receiver, &verb, list);
        }
        self.usage_call(node, function, arguments);
        self.update_stores(node, &callee, &args);
        let index = self.push_call(CallFacts {
            scope: self.scope(),
            callee,
            args: args.into_boxed_slice(),
            line: line_of(node.start_position().row),
            kind: CallKind::Written,
        });
        self.conversion.calls_by_node.insert(node.id(), index);
        ValueExpr::Call(index)
    }

    /// `eval("handler()")`: the code of a string literal that is a call of a
    /// dotted name is a call the program makes, from where `eval` is
    /// called (an implicit site: its arguments are not followed, and
    /// nothing is reported when it does not resolve).
    fn evaluated_call(&mut self, node: Node<'_>, arguments: Option<Node<'_>>) {
        let Some(code) = arguments
            .and_then(|args| self.positional_arg(args, 0))
            .and_then(|code| self.plain_string(code))
        else {
            return;
        };
        let Some(callee) = called_name(&code) else {
            return;
        };
        let pos = node.start_byte();
        let mut parts = callee.split('.');
        let Some(first) = parts.next() else {
            return;
        };
        let mut callee = self.use_name(first, pos);
        for part in parts {
            let part = self.name_id(part);
            callee = ValueExpr::Attr(Box::new(callee), part);
        }
        self.push_call(CallFacts {
            scope: self.scope(),
            callee,
            args: Box::default(),
            line: line_of(node.start_position().row),
            kind: CallKind::Implicit,
        });
    }

    /// `d.update({"k": v, ...})` on a name also stores each literal key,
    /// so that [`super::keyed`] sees the update as the stores it is.
    fn update_stores(&mut self, node: Node<'_>, callee: &ValueExpr, args: &[Arg]) {
        let ValueExpr::Attr(receiver, method) = callee else {
            return;
        };
        if !matches!(**receiver, ValueExpr::Use(_)) || self.facts.name(*method) != "update" {
            return;
        }
        let [
            Arg {
                kind: ArgKind::Positional(0),
                value: ValueExpr::Container(display),
            },
        ] = args
        else {
            return;
        };
        if self.facts.container_kinds.get(display.site as usize) != Some(&ContainerKind::Dict) {
            return;
        }
        let pos = u32::try_from(node.end_byte()).unwrap_or(u32::MAX);
        let block = self.current_block();
        let scope = self.scope();
        for (key, value) in display.elements.iter() {
            let Some(key) = key else {
                continue;
            };
            self.conversion.keyed_stores.push(super::keyed::KeyedStore {
                effect: u32::try_from(self.facts.effects.len()).unwrap_or(u32::MAX),
                pos,
                block,
            });
            self.facts.effects.push((
                scope,
                Effect::ElemStore {
                    container: (**receiver).clone(),
                    key: Some(*key),
                    value: value.clone(),
                },
            ));
        }
    }

    fn next_container(&mut self, kind: ContainerKind) -> u32 {
        let site = self.facts.containers;
        self.facts.containers = self.facts.containers.saturating_add(1);
        self.facts.container_kinds.push(kind);
        site
    }

    fn container(&mut self, node: Node<'_>, depth: u32) -> ValueExpr {
        let g = self.g;
        let kind = match g.kind(node) {
            Kind::List => ContainerKind::List,
            Kind::Set => ContainerKind::Set,
            Kind::Dictionary => ContainerKind::Dict,
            _ => ContainerKind::Tuple,
        };
        let site = self.next_container(kind);
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let mut elements = Vec::with_capacity(children.len());
        // Positions are keys until a splat makes them unknown; sets have none.
        let mut position = (g.kind(node) != Kind::Set).then_some(0u32);
        for child in children {
            let (key, value) = match g.kind(child) {
                Kind::Comment => continue,
                Kind::ListSplat | Kind::DictionarySplat => {
                    position = None;
                    match child.named_child(0) {
                        Some(inner) => (
                            None,
                            ValueExpr::Elem(Box::new(self.vexpr(inner, depth + 1))),
                        ),
                        None => continue,
                    }
                }
                Kind::Pair => {
                    let key = g
                        .field(child, g.field_key)
                        .and_then(|k| self.literal_key(k));
                    match g.field(child, g.field_value) {
                        Some(value) => (key, self.vexpr(value, depth + 1)),
                        None => continue,
                    }
                }
                _ => {
                    let key = position.map(|p| self.index_key(u64::from(p)));
                    position = position.map(|p| p + 1);
                    (key, self.vexpr(child, depth + 1))
                }
            };
            if value != ValueExpr::Unknown {
                elements.push((key, value));
            }
        }
        ValueExpr::container(site, elements)
    }

    /// A string or integer literal used as a key or index, as a name id.
    /// A string key is its text (so `d["a"]` meets `dict(a=...)`); an
    /// integer is [`Self::index_key`], so `d[1]` and `d["1"]` differ as they
    /// do in Python.
    pub(super) fn literal_key(&mut self, node: Node<'_>) -> Option<u32> {
        match self.g.kind(node) {
            Kind::String => {
                let text = self.plain_string(node)?;
                Some(self.name_id(&text))
            }
            Kind::Integer => {
                let text = self.text(node).replace('_', "");
                let value = match text.get(..2) {
                    Some("0x" | "0X") => u64::from_str_radix(&text[2..], 16).ok(),
                    Some("0o" | "0O") => u64::from_str_radix(&text[2..], 8).ok(),
                    Some("0b" | "0B") => u64::from_str_radix(&text[2..], 2).ok(),
                    _ => text.parse().ok(),
                }?;
                Some(self.index_key(value))
            }
            _ => None,
        }
    }

    /// The bounds of a slice written with literal non-negative integers (or
    /// none) and no step other than 1: `[1:]`, `[:3]`, `[1:3]`.
    fn literal_bounds(&self, slice: Node<'_>) -> Option<(u32, Option<u32>)> {
        let mut parts: [Option<u32>; 3] = [None; 3];
        let mut colons = 0usize;
        let mut cursor = slice.walk();
        for child in slice.children(&mut cursor) {
            match child.kind() {
                ":" => colons += 1,
                "comment" => {}
                _ if self.g.kind(child) == Kind::Integer => {
                    let value = self.text(child).replace('_', "").parse::<u32>().ok()?;
                    *parts.get_mut(colons)? = Some(value);
                }
                _ => return None,
            }
        }
        match parts {
            [start, stop, None | Some(1)] => Some((start.unwrap_or(0), stop)),
            _ => None,
        }
    }

    /// The name id of integer key or position `index` (`[0]`: no
    /// identifier or string key spelled alike can be mistaken for it).
    pub(super) fn index_key(&mut self, index: u64) -> u32 {
        self.name_id(&position_name(index))
    }

    /// A comprehension's variables are bound in a block of their own,
    /// so they reach its element but do not shadow names after it.
    fn comprehension(&mut self, node: Node<'_>, depth: u32) -> ValueExpr {
        let g = self.g;
        self.conversion.done.insert(node.id());
        let kind = match node.kind() {
            "list_comprehension" => ContainerKind::List,
            "set_comprehension" => ContainerKind::Set,
            "dictionary_comprehension" => ContainerKind::Dict,
            _ => ContainerKind::Generator,
        };
        let site = self.next_container(kind);
        self.push_block(false, false);
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in &children {
            if g.kind(*child) == Kind::ForInClause
                && let (Some(left), Some(right)) = (
                    g.field(*child, g.field_left),
                    g.field(*child, g.field_right),
                )
            {
                let iterable = self.vexpr(right, depth + 1);
                let value = self.iteration(iterable, line_of(child.start_position().row));
                self.assign_target(left, value, None, node.start_byte(), depth + 1);
            }
        }
        let element = match g.field(node, g.field_body) {
            Some(body) if g.kind(body) == Kind::Pair => match g.field(body, g.field_value) {
                Some(value) => self.vexpr(value, depth + 1),
                None => ValueExpr::Unknown,
            },
            Some(body) => self.vexpr(body, depth + 1),
            None => ValueExpr::Unknown,
        };
        self.pop_block();
        ValueExpr::container(site, vec![(None, element)])
    }

    fn lambda(&mut self, node: Node<'_>, depth: u32) -> ValueExpr {
        if let Some(index) = self.conversion.lambdas_by_node.get(&node.id()) {
            return ValueExpr::Lambda(*index);
        }
        let g = self.g;
        let index = u32::try_from(self.facts.lambdas.len()).unwrap_or(u32::MAX);
        self.facts.lambdas.push(LambdaFacts {
            parent: self.scope(),
            body: ValueExpr::Unknown,
        });
        self.conversion.lambdas_by_node.insert(node.id(), index);
        let defaults: Vec<(String, bool, Option<ValueExpr>)> =
            match g.field(node, g.field_parameters) {
                Some(params) => {
                    let mut cursor = params.walk();
                    let children: Vec<Node<'_>> = params.named_children(&mut cursor).collect();
                    children
                        .into_iter()
                        .filter_map(|p| match g.kind(p) {
                            Kind::Identifier => Some((self.text(p).to_string(), false, None)),
                            Kind::DefaultParameter => {
                                let name = g.field(p, g.field_name).map(|n| self.text(n))?;
                                let default =
                                    g.field(p, g.field_value).map(|v| self.vexpr(v, depth + 1));
                                Some((name.to_string(), false, default))
                            }
                            Kind::ListSplatPattern | Kind::DictionarySplatPattern => {
                                let name = p.named_child(0).map(|n| self.text(n))?;
                                Some((name.to_string(), true, None))
                            }
                            _ => None,
                        })
                        .collect()
                }
                None => Vec::new(),
            };
        self.conversion.scope_override.push(ScopeRef::Lambda(index));
        self.push_block(true, false);
        for (position, (name, star, default)) in defaults.into_iter().enumerate() {
            self.bind(
                &name,
                BindValue::Param {
                    position: u32::try_from(position).unwrap_or(u32::MAX),
                    star,
                    annotation: None,
                    default,
                },
                0,
            );
        }
        let body = match g.field(node, g.field_body) {
            Some(body) => self.vexpr(body, depth + 1),
            None => ValueExpr::Unknown,
        };
        self.pop_block();
        self.conversion.scope_override.pop();
        if let Some(lambda) = self.facts.lambdas.get_mut(index as usize) {
            lambda.body = body;
        }
        ValueExpr::Lambda(index)
    }

    /// An annotation as the instance it declares (`Optional[T]` → `T`).
    pub(super) fn annotation_value(&mut self, text: &str, pos: usize) -> Option<ValueExpr> {
        let expr = annotation_target(text)?;
        Some(ValueExpr::Instance(Box::new(self.dotted_value(&expr, pos))))
    }

    fn dotted_value(&mut self, expr: &Expr, pos: usize) -> ValueExpr {
        match expr {
            Expr::Name(name) => self.use_name(name, pos),
            Expr::Attr(base, attr) => {
                let base = self.dotted_value(base, pos);
                ValueExpr::Attr(Box::new(base), self.name_id(attr))
            }
            _ => ValueExpr::Unknown,
        }
    }

    /// Annotation and default values of each parameter, aligned with
    /// `parameters()`.
    pub(super) fn parameter_values(
        &mut self,
        node: Node<'_>,
    ) -> Vec<(Option<ValueExpr>, Option<ValueExpr>)> {
        let g = self.g;
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let mut values = Vec::with_capacity(children.len());
        for child in children {
            match g.kind(child) {
                Kind::Identifier | Kind::ListSplatPattern | Kind::DictionarySplatPattern => {
                    values.push((None, None))
                }
                Kind::TypedParameter | Kind::DefaultParameter | Kind::TypedDefaultParameter => {
                    let annotation = g.field(child, g.field_type).and_then(|t| {
                        let text = self.text(t).to_string();
                        self.annotation_value(&text, t.start_byte())
                    });
                    let default = g.field(child, g.field_value).map(|v| self.vexpr(v, 0));
                    values.push((annotation, default));
                }
                _ => {}
            }
        }
        values
    }

    /// Binds the names of an assignment target to `value`. `source` is the
    /// right-hand side node, when a literal tuple can be matched element by
    /// element.
    pub(super) fn assign_target(
        &mut self,
        target: Node<'_>,
        value: ValueExpr,
        source: Option<Node<'_>>,
        pos: usize,
        depth: u32,
    ) {
        if depth > MAX_EXPR_DEPTH {
            return;
        }
        let g = self.g;
        match g.kind(target) {
            Kind::Identifier => {
                let name = self.text(target).to_string();
                self.bind(&name, BindValue::Expr(value), pos);
            }
            Kind::Attribute => {
                // A store, not a read: the walk must not load it.
                self.conversion.done.insert(target.id());
                let (Some(object), Some(attr)) = (
                    g.field(target, g.field_object),
                    g.field(target, g.field_attribute),
                ) else {
                    return;
                };
                let attr_text = self.text(attr);
                self.note_self_attr(object, attr_text);
                let attr = self.name_id(attr_text);
                let object = self.vexpr(object, depth + 1);
                let scope = self.scope();
                self.facts.effects.push((
                    scope,
                    Effect::AttrStore {
                        object,
                        attr,
                        value,
                    },
                ));
            }
            Kind::Subscript => {
                let Some(container) = g.field(target, g.field_value) else {
                    return;
                };
                let key = g
                    .field(target, g.field_subscript)
                    .and_then(|k| self.literal_key(k));
                let container = self.vexpr(container, depth + 1);
                if key.is_some()
                    && (matches!(container, ValueExpr::Use(_))
                        || super::keyed::key_path(&container).is_some())
                {
                    let block = self.current_block();
                    self.conversion.keyed_stores.push(super::keyed::KeyedStore {
                        effect: u32::try_from(self.facts.effects.len()).unwrap_or(u32::MAX),
                        pos: u32::try_from(pos).unwrap_or(u32::MAX),
                        block,
                    });
                }
                let scope = self.scope();
                self.facts.effects.push((
                    scope,
                    Effect::ElemStore {
                        container,
                        key,
                        value,
                    },
                ));
            }
            Kind::PatternList
            | Kind::TuplePattern
            | Kind::ListPattern
            | Kind::Tuple
            | Kind::List
            | Kind::ExpressionList
            | Kind::ParenthesizedExpression => {
                let mut cursor = target.walk();
                let parts: Vec<Node<'_>> = target
                    .named_children(&mut cursor)
                    .filter(|c| g.kind(*c) != Kind::Comment)
                    .collect();
                // `a, b = f, g` pairs up; anything else gives every name the elements.
                let pairs = match (&value, source) {
                    (ValueExpr::Container(container), Some(source))
                        if matches!(
                            g.kind(source),
                            Kind::Tuple | Kind::List | Kind::ExpressionList
                        ) && container.elements.len() == parts.len()
                            && !parts.iter().any(|p| g.kind(*p) == Kind::ListSplatPattern) =>
                    {
                        let mut cursor = source.walk();
                        let sources: Vec<Node<'_>> = source
                            .named_children(&mut cursor)
                            .filter(|c| g.kind(*c) != Kind::Comment)
                            .collect();
                        (sources.len() == parts.len()).then(|| {
                            let values: Vec<ValueExpr> =
                                container.elements.iter().map(|(_, v)| v.clone()).collect();
                            (values, sources)
                        })
                    }
                    _ => None,
                };
                match pairs {
                    Some((elements, sources)) => {
                        for ((part, element), source) in
                            parts.into_iter().zip(elements).zip(sources)
                        {
                            self.assign_target(part, element, Some(source), pos, depth + 1);
                        }
                    }
                    None => {
                        let shared = self.shared(value, pos);
                        let starred = parts.iter().any(|p| g.kind(*p) == Kind::ListSplatPattern);
                        for (index, part) in parts.into_iter().enumerate() {
                            let element = if g.kind(part) == Kind::ListSplatPattern {
                                shared.clone()
                            } else if starred {
                                ValueExpr::Elem(Box::new(shared.clone()))
                            } else {
                                ValueExpr::ElemAt(
                                    Box::new(shared.clone()),
                                    self.index_key(index as u64),
                                )
                            };
                            let part = if g.kind(part) == Kind::ListSplatPattern {
                                match part.named_child(0) {
                                    Some(inner) => inner,
                                    None => continue,
                                }
                            } else {
                                part
                            };
                            self.assign_target(part, element, None, pos, depth + 1);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A value that several targets receive: kept once behind a hidden
    /// binding unless it is a single name or call.
    fn shared(&mut self, value: ValueExpr, pos: usize) -> ValueExpr {
        match value {
            ValueExpr::Use(_) | ValueExpr::Call(_) | ValueExpr::Ref(_) | ValueExpr::Unknown => {
                value
            }
            other => ValueExpr::Ref(self.bind("", BindValue::Expr(other), pos)),
        }
    }

    /// `self.name = ...` in a method: the class has the attribute.
    fn note_self_attr(&mut self, object: Node<'_>, attr: &str) {
        let Some((self_name, class)) = self.method_self() else {
            return;
        };
        if self.text(object) != self_name {
            return;
        }
        if let Some(class) = self.facts.classes.get_mut(class as usize)
            && !class.self_attrs.iter().any(|a| a == attr)
        {
            class.self_attrs.push(attr.to_string());
        }
    }

    pub(super) fn enter_assignment(&mut self, node: Node<'_>) {
        if !self.conversion.done.insert(node.id()) {
            return;
        }
        let g = self.g;
        // `a = b = value`: follow the chain to the value, then bind every target.
        let mut targets = Vec::new();
        let mut current = node;
        let mut annotation = None;
        loop {
            if let Some(left) = g.field(current, g.field_left) {
                targets.push(left);
            }
            if annotation.is_none() {
                annotation = g.field(current, g.field_type);
            }
            match g.field(current, g.field_right) {
                Some(right) if g.kind(right) == Kind::Assignment && targets.len() < MAX_CHAIN => {
                    self.conversion.done.insert(right.id());
                    current = right;
                }
                right => {
                    let value = right.map(|r| self.vexpr(r, 0));
                    let declared = match annotation {
                        Some(t) => {
                            let text = self.text(t).to_string();
                            self.annotation_value(&text, t.start_byte())
                        }
                        None => None,
                    };
                    let value = match (value, declared) {
                        (Some(v), Some(d)) => ValueExpr::union(vec![v, d]),
                        (Some(v), None) => v,
                        (None, Some(d)) => d,
                        (None, None) => ValueExpr::Unknown,
                    };
                    let pos = node.end_byte();
                    let value = if targets.len() > 1 {
                        self.shared(value, pos)
                    } else {
                        value
                    };
                    for target in targets {
                        self.module_assignment(target, right);
                        self.usage_assignment(target, right);
                        self.assign_target(target, value.clone(), right, pos, 0);
                    }
                    return;
                }
            }
        }
    }

    /// Module-level assignments the route, `__all__` and `setup()` facts read.
    fn module_assignment(&mut self, left: Node<'_>, right: Option<Node<'_>>) {
        let g = self.g;
        if self.scope() != ScopeRef::Module || g.kind(left) != Kind::Identifier {
            return;
        }
        let name = self.text(left);
        match (name, right) {
            ("__all__", _) => self.all_assignment(right),
            ("urlpatterns", Some(r)) => self.url_patterns(r),
            (_, Some(r)) if g.kind(r) == Kind::Call => self.router_assignment(name, r),
            (_, Some(r)) if g.kind(r) == Kind::Dictionary => self.entry_point_dict(name, r),
            _ => {}
        }
    }

    pub(super) fn enter_augmented_assignment(&mut self, node: Node<'_>) {
        let g = self.g;
        let (Some(left), Some(right)) = (g.field(node, g.field_left), g.field(node, g.field_right))
        else {
            return;
        };
        if self.scope() == ScopeRef::Module {
            match self.text(left) {
                "__all__" => self.all_augmented(right),
                "urlpatterns" => self.url_patterns(right),
                _ => {}
            }
        }
        let added = self.vexpr(right, 0);
        match g.kind(left) {
            // `x += y`: the old value, or what was added (`fs += [f]`).
            Kind::Identifier => {
                let old = self.use_name(self.text(left), left.start_byte());
                let name = self.text(left).to_string();
                self.bind(
                    &name,
                    BindValue::Expr(ValueExpr::union(vec![old, added])),
                    node.end_byte(),
                );
            }
            _ => self.assign_target(left, added, None, node.end_byte(), 0),
        }
    }

    pub(super) fn enter_for(&mut self, node: Node<'_>) {
        let g = self.g;
        let body = g.field(node, g.field_body);
        if let Some(body) = body {
            self.loop_body(body.id());
        }
        let (Some(left), Some(right)) = (g.field(node, g.field_left), g.field(node, g.field_right))
        else {
            return;
        };
        let iterable = self.vexpr(right, 0);
        let value = self.iteration(iterable, line_of(node.start_position().row));
        let pos = body.map_or(node.end_byte(), |b| b.start_byte());
        self.assign_target(left, value, None, pos, 0);
    }

    /// What a `for` over `iterable` binds: its elements, and for an object
    /// with the iterator protocol, what `__next__` returns on what
    /// `__iter__` returned. The two protocol calls are sites of their own
    /// ([`CallKind::Implicit`]), so a class's `__iter__`/`__next__` are
    /// called from the loop's function. A display or a literal has no
    /// protocol of the program's, so it gets no sites.
    pub(super) fn iteration(&mut self, iterable: ValueExpr, line: u32) -> ValueExpr {
        if matches!(iterable, ValueExpr::Container(_) | ValueExpr::Unknown) {
            return ValueExpr::Elem(Box::new(iterable));
        }
        let scope = self.scope();
        let iter = self.name_id("__iter__");
        let next = self.name_id("__next__");
        let iterator = self.push_call(CallFacts {
            scope,
            callee: ValueExpr::Attr(Box::new(iterable.clone()), iter),
            args: Box::default(),
            line,
            kind: CallKind::Implicit,
        });
        let item = self.push_call(CallFacts {
            scope,
            callee: ValueExpr::Attr(Box::new(ValueExpr::Call(iterator)), next),
            args: Box::default(),
            line,
            kind: CallKind::Implicit,
        });
        ValueExpr::union(vec![
            ValueExpr::Elem(Box::new(iterable)),
            ValueExpr::Call(item),
        ])
    }

    /// `with value as target`: the context manager's value (its `__enter__`
    /// usually returns itself).
    pub(super) fn enter_with_item(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(value) = g.field(node, g.field_value) else {
            return;
        };
        if g.kind(value) != Kind::AsPattern {
            return;
        }
        let (Some(expr), Some(alias)) = (value.named_child(0), g.field(value, g.field_alias))
        else {
            return;
        };
        let target = if g.kind(alias) == Kind::Identifier {
            alias
        } else {
            match alias.named_child(0) {
                Some(inner) => inner,
                None => return,
            }
        };
        let bound = self.vexpr(expr, 0);
        self.assign_target(target, bound, None, value.end_byte(), 0);
    }

    /// `except C as e`: `e` is an instance of `C` (or of each of a tuple).
    pub(super) fn enter_except(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(value) = g.field(node, g.field_value) else {
            return;
        };
        // Python 3 grammar: `except C as e` is an `as_pattern`; older trees
        // put the name in an `alias` field of the clause.
        let (value, alias) = if g.kind(value) == Kind::AsPattern {
            let alias = g.field(value, g.field_alias).and_then(|a| {
                if g.kind(a) == Kind::Identifier {
                    Some(a)
                } else {
                    a.named_child(0)
                }
            });
            match value.named_child(0) {
                Some(inner) => (inner, alias),
                None => return,
            }
        } else {
            (value, g.field(node, g.field_alias))
        };
        let Some(alias) = alias.filter(|a| g.kind(*a) == Kind::Identifier) else {
            return;
        };
        let classes = match g.kind(value) {
            Kind::Tuple | Kind::ParenthesizedExpression => {
                let mut cursor = value.walk();
                let parts: Vec<Node<'_>> = value.named_children(&mut cursor).collect();
                parts
                    .into_iter()
                    .filter(|p| g.kind(*p) != Kind::Comment)
                    .map(|p| ValueExpr::Caught(Box::new(self.vexpr(p, 0))))
                    .collect()
            }
            _ => vec![ValueExpr::Caught(Box::new(self.vexpr(value, 0)))],
        };
        let name = self.text(alias).to_string();
        self.bind(
            &name,
            BindValue::Expr(ValueExpr::union(classes)),
            alias.end_byte(),
        );
    }

    pub(super) fn enter_return(&mut self, node: Node<'_>) {
        let Some(ScopeRef::Function(function)) = self.innermost_function() else {
            return;
        };
        let Some(child) = node.named_child(0) else {
            return;
        };
        let value = self.vexpr(child, 0);
        if value != ValueExpr::Unknown {
            let scope = self.scope();
            self.facts
                .effects
                .push((scope, Effect::Return { function, value }));
        }
    }

    pub(super) fn enter_yield(&mut self, node: Node<'_>) {
        let Some(ScopeRef::Function(function)) = self.innermost_function() else {
            return;
        };
        if let Some(f) = self.facts.functions.get_mut(function as usize) {
            f.is_generator = true;
        }
        let Some(child) = node.named_child(0) else {
            return;
        };
        let delegated = self
            .text(node)
            .trim_start_matches("yield")
            .trim_start()
            .starts_with("from");
        let value = self.vexpr(child, 0);
        let value = if delegated {
            ValueExpr::Elem(Box::new(value))
        } else {
            value
        };
        let scope = self.scope();
        self.facts
            .effects
            .push((scope, Effect::Yield { function, value }));
    }

    /// `raise C` instantiates `C`; `raise C(...)` is a call the walk records.
    pub(super) fn enter_raise(&mut self, node: Node<'_>) {
        let g = self.g;
        let cause = g.field(node, g.field_cause).map(|c| c.id());
        let Some(raised) = node.named_child(0).filter(|n| Some(n.id()) != cause) else {
            return;
        };
        if g.kind(raised) == Kind::Call {
            if let ValueExpr::Call(index) = self.vexpr(raised, 0)
                && let Some(call) = self.facts.calls.get_mut(index as usize)
            {
                call.kind = CallKind::RaisedCall;
            }
            return;
        }
        if !matches!(g.kind(raised), Kind::Identifier | Kind::Attribute) {
            return;
        }
        let callee = self.vexpr(raised, 0);
        self.push_call(CallFacts {
            scope: self.scope(),
            callee,
            args: Box::default(),
            line: line_of(node.start_position().row),
            kind: CallKind::Raise,
        });
    }
}

/// The dotted name `code` calls when it is exactly such a call, with
/// arguments that hold no call or bracket (`"handler()"`, `"app.run(1)"`).
fn called_name(code: &str) -> Option<&str> {
    let code = code.trim().strip_suffix(')')?;
    let (name, args) = code.split_once('(')?;
    let name = name.trim_end();
    let simple = !args.contains(['(', ')', '[', ']', '{', '}']);
    (simple && Expr::dotted(name).is_some()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::called_name;

    #[test]
    fn only_a_call_of_a_dotted_name_is_read_from_eval() {
        assert_eq!(called_name("handler()"), Some("handler"));
        assert_eq!(called_name(" app.run(1, 'x') "), Some("app.run"));
        for code in [
            "1 + 1", "f()()", "f(g())", "x[0]()", "f", "f(", "2f()", "a..b()", "",
        ] {
            assert_eq!(called_name(code), None, "{code:?}");
        }
    }
}
