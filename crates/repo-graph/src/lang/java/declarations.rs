//! Declarations in one Java file: types, enum constants, methods and
//! constructors with their modifiers, type and value parameters, fields,
//! locals, catch parameters, patterns and lambdas.

use super::extract::*;
use super::facts::*;

use tree_sitter::Node;

use crate::model::{BaseRelation, Complexity, FunctionKind, JavaTypeKind, Modifier};
use crate::text::truncate;

impl<'s> Extractor<'s> {
    /// Modifiers and annotation texts of a declaration; route annotations
    /// are remembered for `owner`.
    pub(super) fn modifiers(
        &mut self,
        node: Node<'_>,
        owner: Option<Scope>,
    ) -> (Vec<Modifier>, Vec<String>) {
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

    pub(super) fn type_params(&self, list: Option<Node<'_>>) -> Vec<TypeParam> {
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
                out.push(TypeParam {
                    name: name.to_string(),
                    bound,
                    text: squash(self.text(param)),
                });
            }
        }
        out
    }

    pub(super) fn enter_type(&mut self, node: Node<'_>, kind: Kind) {
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
                self.spend(1);
                fields.push(FieldFacts {
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

    pub(super) fn push_super(
        &self,
        supers: &mut Vec<SuperFacts>,
        ty: Node<'_>,
        relation: BaseRelation,
    ) {
        let text = squash(self.text(ty));
        if text.is_empty() {
            return;
        }
        supers.push(SuperFacts {
            name: erase(&text).into_owned(),
            text,
            relation,
        });
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_type(
        &mut self,
        node: Node<'_>,
        name: String,
        kind: JavaTypeKind,
        supers: Vec<SuperFacts>,
        fields: Vec<FieldFacts>,
        anonymous: bool,
        body: Option<Node<'_>>,
    ) {
        if self.frames.len() + self.pending.len() >= MAX_ENTITY_DEPTH {
            return;
        }
        let id = u32::try_from(self.facts.types.len()).unwrap_or(u32::MAX);
        let scope = Scope::Type(id);
        let docstring = if anonymous { None } else { self.javadoc(node) };
        let (modifiers, annotations) = self.modifiers(node, Some(scope));
        let type_params = self.type_params(self.g.field(node, self.g.field_type_parameters));
        let parent = self.scope();
        let depth = self.block_depth;
        self.facts.complexity.max_def_depth = self.facts.complexity.max_def_depth.max(depth);
        self.facts.types.push(TypeFacts {
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

    pub(super) fn enter_enum_constant(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(name_node) = g.field(node, g.field_name) else {
            return;
        };
        let Scope::Type(owner) = self.scope() else {
            return;
        };
        let Some(enum_name) = self.facts.types.get(owner as usize).map(|t| t.name.clone()) else {
            return;
        };
        let name = self.text(name_node).to_string();
        let (modifiers, annotations) = self.modifiers(node, None);
        self.spend(1);
        if let Some(owner) = self.facts.types.get_mut(owner as usize) {
            owner.fields.push(FieldFacts {
                name: name.clone(),
                type_text: enum_name.clone(),
                modifiers,
                annotations,
                line: line_of(node.start_position().row),
            });
        }
        let arguments = g.field(node, g.field_arguments);
        self.push_call(node, Callee::New(enum_name.clone()), arguments);
        if let Some(body) = g.field(node, g.field_body) {
            let supers = vec![SuperFacts {
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
    pub(super) fn children<'t, const F: usize, const K: usize>(
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
    pub(super) fn parameters(&mut self, node: Node<'_>) -> Vec<ParamFacts> {
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
                        out.push(ParamFacts {
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
                        out.push(ParamFacts {
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

    pub(super) fn enter_method(&mut self, node: Node<'_>, kind: Kind) {
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
        let scope = Scope::Method(id);
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
                Scope::Type(t) => self.facts.types.get(t as usize).map_or_else(Vec::new, |t| {
                    t.fields
                        .iter()
                        .map(|f| ParamFacts {
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
        self.facts.methods.push(MethodFacts {
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
    pub(super) fn declarators<'t>(&self, node: Node<'t>) -> (Option<Node<'t>>, Vec<Node<'t>>) {
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

    pub(super) fn enter_field(&mut self, node: Node<'_>) {
        let g = self.g;
        let Scope::Type(owner) = self.scope() else {
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
            self.spend(1);
            fields.push(FieldFacts {
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

    pub(super) fn enter_local(&mut self, node: Node<'_>) {
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
                    Some(value) => LocalType::Inferred(self.expr(value)),
                    None => LocalType::Untyped,
                }
            } else {
                let mut text = erase(type_text).into_owned();
                if let Some(dims) = dims {
                    text.push_str(&compact(self.text(dims)));
                }
                LocalType::Declared(text)
            };
            locals.push(Local {
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
    pub(super) fn declare_typed(&mut self, node: Node<'_>, value_initializes: bool) {
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
            (true, Some(value)) if value_initializes => LocalType::Inferred(self.expr(value)),
            (true, _) => LocalType::Untyped,
            (false, _) => LocalType::Declared(erase(text).into_owned()),
        };
        self.push_local(node, name, ty);
    }

    /// A local named by `name`, declared by `node`, visible from there to
    /// the end of its block.
    fn push_local(&mut self, node: Node<'_>, name: Node<'_>, ty: LocalType) {
        let local = Local {
            scope: self.scope(),
            name: self.text(name).to_string(),
            ty,
            start: byte(node.start_byte()),
            end: self.visible_until(),
        };
        self.facts.locals.push(local);
    }

    pub(super) fn enter_catch_parameter(&mut self, node: Node<'_>) {
        let g = self.g;
        let Some(name) = g.field(node, g.field_name) else {
            return;
        };
        let mut cursor = node.walk();
        // A multi-catch variable has the types' union: only one type is followed.
        let ty = node
            .named_children(&mut cursor)
            .find(|c| c.kind() == "catch_type")
            .and_then(|t| t.named_child(0))
            .map_or(LocalType::Untyped, |t| {
                LocalType::Declared(erase(self.text(t)).into_owned())
            });
        self.push_local(node, name, ty);
    }

    pub(super) fn enter_type_pattern(&mut self, node: Node<'_>) {
        let (Some(ty), Some(name)) = (node.named_child(0), node.named_child(1)) else {
            return;
        };
        let ty = LocalType::Declared(erase(self.text(ty)).into_owned());
        self.push_local(node, name, ty);
    }

    pub(super) fn enter_lambda(&mut self, node: Node<'_>) {
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
            locals.push(Local {
                scope,
                name: name.to_string(),
                ty: LocalType::Untyped,
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
                    locals.push(Local {
                        scope,
                        name: p.name,
                        ty: LocalType::Declared(erase(&p.type_text).into_owned()),
                        start,
                        end,
                    });
                }
            }
            _ => {}
        }
        self.facts.locals.extend(locals);
    }
}
