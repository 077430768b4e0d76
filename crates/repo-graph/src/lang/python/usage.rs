//! Usage facts written in one file: `if __name__ == "__main__":` blocks,
//! command-line interfaces (argparse parsers and their arguments, click
//! commands and options, typer commands and their parameters) and
//! `setup(entry_points=...)`. [`crate::usage`] resolves them across files.
//!
//! argparse objects are followed by the name (or `self.attr`) they are
//! assigned to, or by the call node when used without one
//! (`sub.add_parser("x").add_argument(...)`); a parser passed to another
//! function is not followed. Everything kept is bounded per file.

use rustc_hash::FxHashMap;

use tree_sitter::Node;

use super::extract::{Extractor, Kind};
use super::facts::*;
use super::usage_facts::*;
use crate::model::Span;
use crate::text::truncate;
use crate::usage::{CliFramework, CliOption, EntryPointKind};

/// Commands kept per file.
const MAX_CLIS: usize = 512;
/// Options kept per command.
const MAX_OPTIONS: usize = 128;
/// argparse and click names followed per file.
const MAX_VARS: usize = 256;
/// Module-level dictionaries remembered as candidate `entry_points=` values.
const MAX_ENTRY_POINT_DICTS: usize = 16;
/// Dictionary pairs examined for `console_scripts` keys.
const MAX_PAIRS_SCANNED: usize = 64;
/// Longest flag, name or default kept.
const MAX_NAME: usize = 80;
/// Names and dotted paths in `__all__` kept per file.
const MAX_ALL: usize = 4096;
/// Functions a parser is passed to that are remembered.
const MAX_INCLUDES: usize = 16;

/// What a name or call node holds, for the CLI declarations that follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CliValue {
    /// An argparse parser (index into the file's commands).
    Parser(u32),
    /// `parser.add_subparsers()`.
    Subparsers(u32),
    /// `parser.add_argument_group()` or a mutually exclusive group.
    ArgumentGroup(u32),
    /// A click command or group.
    ClickCommand(u32),
    /// A `typer.Typer()` object.
    TyperApp,
}

/// Extraction state that is not part of the facts.
#[derive(Default)]
pub(super) struct UsageState {
    /// Names (or `self.attr` texts) bound to CLI objects, by scope.
    vars: Vec<(ScopeRef, String, CliValue)>,
    /// CLI objects made by a call, by the call's node id.
    values: FxHashMap<usize, CliValue>,
    /// The main block being walked: the `if` node's id and the block's index.
    main_block: Option<(usize, usize)>,
    /// Module-level dictionaries with `console_scripts` or `gui_scripts` keys.
    entry_point_dicts: Vec<(String, Vec<(EntryPointKind, String)>)>,
    /// Some name holds an argparse parser (calls are then checked for
    /// passing it on).
    has_parsers: bool,
    /// Imports examined so far, and whether they import click or typer.
    imports_seen: usize,
    imports_click: bool,
    imports_typer: bool,
}

/// Packages a bare `command`, `group` or `option` decorator can come from.
const CLICK_MODULES: &[&str] = &["click", "rich_click", "asyncclick", "cloup"];

impl<'s> Extractor<'s> {
    /// An `if` statement at module level: opens a main block when its
    /// condition is `__name__ == "__main__"`.
    pub(super) fn enter_main_block(&mut self, node: Node<'_>) {
        if self.scope() != ScopeRef::Module || self.usage.main_block.is_some() {
            return;
        }
        let Some(condition) = node.child_by_field_name("condition") else {
            return;
        };
        if condition.kind() != "comparison_operator"
            || condition.named_child_count() != 2
            || condition.child_count() != 3
            || condition.child(1).is_none_or(|o| o.kind() != "==")
        {
            return;
        }
        let (Some(a), Some(b)) = (condition.named_child(0), condition.named_child(1)) else {
            return;
        };
        let is_name =
            |n: Node<'_>| self.g.kind(n) == Kind::Identifier && self.text(n) == "__name__";
        let is_main = |n: Node<'_>| self.plain_string(n).is_some_and(|s| s == "__main__");
        if !((is_name(a) && is_main(b)) || (is_main(a) && is_name(b))) {
            return;
        }
        let first_call = u32::try_from(self.facts.calls.len()).unwrap_or(u32::MAX);
        let index = self.facts.usage.main_blocks.len();
        self.facts.usage.main_blocks.push(MainBlockFacts {
            span: self.span(node),
            first_call,
            end_call: first_call,
        });
        self.usage.main_block = Some((node.id(), index));
    }

    pub(super) fn leave_main_block(&mut self, node: Node<'_>) {
        let Some((id, index)) = self.usage.main_block else {
            return;
        };
        if id != node.id() {
            return;
        }
        self.usage.main_block = None;
        let end = u32::try_from(self.facts.calls.len()).unwrap_or(u32::MAX);
        if let Some(block) = self.facts.usage.main_blocks.get_mut(index) {
            block.end_call = end;
        }
    }

    /// The decorators of a function: a click or typer command and its options.
    pub(super) fn usage_decorators(
        &mut self,
        decorators: &[Node<'_>],
        definition: Node<'_>,
        outer: Span,
    ) {
        let g = self.g;
        let mut command: Option<(CliFramework, CliFacts)> = None;
        let mut options = Vec::new();
        for decorator in decorators {
            let Some(expr) = decorator.named_child(0) else {
                continue;
            };
            let (callee, args) = match g.kind(expr) {
                Kind::Call => (
                    g.field(expr, g.field_function),
                    g.field(expr, g.field_arguments),
                ),
                Kind::Identifier | Kind::Attribute => (Some(expr), None),
                _ => continue,
            };
            let Some(callee) = callee else { continue };
            let (receiver, verb) = match g.kind(callee) {
                Kind::Identifier => (None, self.text(callee)),
                Kind::Attribute => match g.field(callee, g.field_attribute) {
                    Some(attr) => (g.field(callee, g.field_object), self.text(attr)),
                    None => continue,
                },
                _ => continue,
            };
            match verb {
                "command" | "group" | "callback" if command.is_none() => {
                    let imported = self.imported_frameworks();
                    command = self.decorator_command(receiver, verb, args, imported);
                }
                "option"
                | "argument"
                | "version_option"
                | "help_option"
                | "password_option"
                | "confirmation_option" => {
                    let from_click = receiver.is_none_or(|r| {
                        let text = self.text(r);
                        CLICK_MODULES.contains(&text) || text.ends_with("optgroup")
                    });
                    if from_click && options.len() < MAX_OPTIONS {
                        options.push(self.click_option(verb, args));
                    }
                }
                _ => {}
            }
        }
        let Some((framework, mut facts)) = command else {
            return;
        };
        if self.facts.usage.clis.len() >= MAX_CLIS {
            return;
        }
        let name = g
            .field(definition, g.field_name)
            .map(|n| self.text(n))
            .unwrap_or("");
        if facts.name.is_none() && !name.is_empty() {
            facts.name = Some(command_name(name, framework == CliFramework::Click));
        }
        if facts.help.is_none() {
            facts.help = g
                .field(definition, g.field_body)
                .and_then(|b| self.docstring_of_block(b))
                .map(|d| help_text(&d));
        }
        facts.options = match framework {
            CliFramework::Typer => g
                .field(definition, g.field_parameters)
                .map(|p| self.typer_parameters(p))
                .unwrap_or_default(),
            _ => options,
        };
        facts.function = u32::try_from(self.facts.functions.len()).ok();
        facts.span = outer;
        let index = u32::try_from(self.facts.usage.clis.len()).unwrap_or(u32::MAX);
        if framework == CliFramework::Click && !name.is_empty() {
            self.cli_var(name.to_string(), CliValue::ClickCommand(index));
        }
        self.facts.usage.clis.push(facts);
    }

    /// `@click.command(...)`, `@cli.group(...)`, `@app.command(...)`,
    /// `@app.callback()`: the framework and the command, without options.
    fn decorator_command(
        &self,
        receiver: Option<Node<'_>>,
        verb: &str,
        args: Option<Node<'_>>,
        (click, typer): (bool, bool),
    ) -> Option<(CliFramework, CliFacts)> {
        let value = receiver.and_then(|r| self.cli_value_of(r));
        let receiver_text = receiver.map(|r| self.text(r));
        let (framework, parent, app) = match (value, receiver_text) {
            (Some(CliValue::ClickCommand(k)), _) => {
                (CliFramework::Click, Some(CliParentFacts::Local(k)), None)
            }
            (Some(CliValue::TyperApp), Some(text)) => (CliFramework::Typer, None, Some(text)),
            (Some(_), _) => return None,
            (None, None) => {
                if verb == "callback" || !click {
                    return None;
                }
                (CliFramework::Click, None, None)
            }
            (None, Some(text)) if CLICK_MODULES.contains(&text) => {
                if verb == "callback" {
                    return None;
                }
                (CliFramework::Click, None, None)
            }
            (None, Some(text)) => {
                if verb != "callback" && click {
                    let parent = (text.len() <= MAX_NAME).then(|| text.to_string());
                    (CliFramework::Click, parent.map(CliParentFacts::Named), None)
                } else if typer {
                    (CliFramework::Typer, None, Some(text))
                } else {
                    return None;
                }
            }
        };
        let name = args.and_then(|a| {
            self.positional_arg(a, 0)
                .or_else(|| self.keyword_arg(a, "name"))
                .and_then(|n| self.string_literal(n))
        });
        let help = args.and_then(|a| {
            self.keyword_arg(a, "help")
                .or_else(|| self.keyword_arg(a, "short_help"))
                .and_then(|h| self.string_literal(h))
                .map(|h| help_text(&h))
        });
        Some((
            framework,
            CliFacts {
                framework,
                name: name.map(|n| truncate(&n, MAX_NAME)),
                function: None,
                handler: None,
                app: app.map(|a| truncate(a, MAX_NAME)),
                parent,
                is_group: verb != "command",
                help,
                options: Vec::new(),
                span: Span {
                    start_byte: 0,
                    end_byte: 0,
                    start_line: 0,
                    end_line: 0,
                },
                fragment: false,
                includes: Vec::new(),
            },
        ))
    }

    /// A click `option`, `argument` or one of the ready-made options.
    fn click_option(&self, verb: &str, args: Option<Node<'_>>) -> CliOption {
        let mut flags: Vec<String> = Vec::new();
        if let Some(args) = args {
            let mut cursor = args.walk();
            for arg in args.named_children(&mut cursor) {
                if matches!(self.g.kind(arg), Kind::KeywordArgument | Kind::Comment) {
                    continue;
                }
                if let Some(text) = self.string_literal(arg) {
                    flags.push(truncate(&text, MAX_NAME));
                }
            }
        }
        let positional = verb == "argument";
        if !positional {
            // A name without dashes is the Python parameter, not a flag.
            let dashed = flags.iter().filter(|f| f.starts_with('-')).count();
            if dashed > 0 {
                flags.retain(|f| f.starts_with('-'));
            }
        }
        if flags.is_empty() {
            flags.push(
                match verb {
                    "version_option" => "--version",
                    "help_option" => "--help",
                    "password_option" => "--password",
                    "confirmation_option" => "--yes",
                    _ => "",
                }
                .to_string(),
            );
            flags.retain(|f| !f.is_empty());
        }
        let keyword = |name: &str| args.and_then(|a| self.keyword_arg(a, name));
        let is_flag = keyword("is_flag").is_some_and(|v| self.text(v) == "True")
            || flags.iter().any(|f| f.contains('/'))
            || matches!(
                verb,
                "version_option" | "help_option" | "confirmation_option"
            );
        let default = keyword("default").and_then(|d| self.literal(d));
        let required = match keyword("required") {
            Some(v) => self.text(v) == "True",
            // Click arguments are required unless they have a default or take any number.
            None => {
                positional
                    && default.is_none()
                    && keyword("nargs").is_none_or(|n| self.text(n) != "-1")
            }
        };
        CliOption {
            flags,
            positional,
            takes_value: !is_flag,
            required,
            default,
            help: keyword("help")
                .and_then(|h| self.string_literal(h))
                .map(|h| help_text(&h)),
        }
    }

    /// The parameters of a typer command as its options and arguments.
    fn typer_parameters(&self, parameters: Node<'_>) -> Vec<CliOption> {
        let g = self.g;
        let mut out = Vec::new();
        let mut cursor = parameters.walk();
        for child in parameters.named_children(&mut cursor) {
            if out.len() >= MAX_OPTIONS {
                break;
            }
            let (name, annotation, value) = match g.kind(child) {
                Kind::Identifier => (self.text(child), None, None),
                Kind::TypedParameter => (
                    child.named_child(0).map_or("", |n| self.text(n)),
                    g.field(child, g.field_type),
                    None,
                ),
                Kind::DefaultParameter | Kind::TypedDefaultParameter => (
                    g.field(child, g.field_name).map_or("", |n| self.text(n)),
                    g.field(child, g.field_type),
                    g.field(child, g.field_value),
                ),
                _ => continue,
            };
            if !is_identifier(name) {
                continue;
            }
            let annotation_text = annotation.map_or("", |a| self.text(a));
            if annotation_text.contains("Context") {
                continue;
            }
            // `Annotated[str, typer.Option(...)]` or a `typer.Option(...)` default.
            let in_annotation = annotation.and_then(|a| self.typer_call_in(a));
            let in_default = value.and_then(|v| self.typer_call(v));
            let is_bool = annotation_text == "bool"
                || value.is_some_and(|v| matches!(self.text(v), "True" | "False"));
            let option = match (in_annotation, in_default) {
                (Some(call), _) => self.typer_option(
                    name,
                    call,
                    false,
                    value.and_then(|v| self.literal(v)),
                    is_bool,
                ),
                (None, Some(call)) => self.typer_option(name, call, true, None, is_bool),
                (None, None) => match value {
                    None => CliOption {
                        flags: vec![name.to_string()],
                        positional: true,
                        takes_value: true,
                        required: true,
                        default: None,
                        help: None,
                    },
                    Some(v) => CliOption {
                        flags: vec![option_flag(name, is_bool)],
                        positional: false,
                        takes_value: !is_bool,
                        required: false,
                        default: self.literal(v),
                        help: None,
                    },
                },
            };
            out.push(option);
        }
        out
    }

    /// `typer.Option(...)` or `typer.Argument(...)` (also imported bare):
    /// the call node and whether it is an argument.
    fn typer_call<'t>(&self, node: Node<'t>) -> Option<(Node<'t>, bool)> {
        if self.g.kind(node) != Kind::Call {
            return None;
        }
        let function = self.g.field(node, self.g.field_function)?;
        let text = self.text(function);
        let last = text.rsplit('.').next().unwrap_or(text);
        match last {
            "Option" => Some((node, false)),
            "Argument" => Some((node, true)),
            _ => None,
        }
    }

    /// The `typer.Option(...)` inside `Annotated[...]`, looked for among
    /// the annotation's few top levels (`type`, `generic_type`,
    /// `type_parameter`, `type`, then the call).
    fn typer_call_in<'t>(&self, annotation: Node<'t>) -> Option<(Node<'t>, bool)> {
        let mut level = vec![annotation];
        for _ in 0..6 {
            let mut next = Vec::new();
            for node in level {
                if let Some(found) = self.typer_call(node) {
                    return Some(found);
                }
                let mut cursor = node.walk();
                next.extend(node.named_children(&mut cursor).take(8));
            }
            level = next;
        }
        None
    }

    fn typer_option(
        &self,
        name: &str,
        (call, is_argument): (Node<'_>, bool),
        default_first: bool,
        default_value: Option<String>,
        is_bool: bool,
    ) -> CliOption {
        let g = self.g;
        let args = g.field(call, g.field_arguments);
        let mut flags = Vec::new();
        let mut default = default_value;
        let mut required = false;
        let mut first = true;
        if let Some(args) = args {
            let mut cursor = args.walk();
            for arg in args.named_children(&mut cursor) {
                if matches!(g.kind(arg), Kind::KeywordArgument | Kind::Comment) {
                    continue;
                }
                let is_first = std::mem::replace(&mut first, false);
                if default_first && is_first {
                    if arg.kind() == "ellipsis" {
                        required = true;
                    } else {
                        default = self.literal(arg);
                    }
                    continue;
                }
                if let Some(text) = self.string_literal(arg) {
                    flags.push(truncate(&text, MAX_NAME));
                }
            }
            if let Some(d) = self.keyword_arg(args, "default") {
                if d.kind() == "ellipsis" {
                    required = true;
                } else {
                    default = self.literal(d);
                }
            }
        }
        if is_argument {
            required |= default.is_none();
            flags.retain(|f| !f.starts_with('-'));
            if flags.is_empty() {
                flags.push(name.to_string());
            }
        } else if flags.is_empty() {
            flags.push(option_flag(name, is_bool));
        }
        let keyword = |k: &str| args.and_then(|a| self.keyword_arg(a, k));
        CliOption {
            flags,
            positional: is_argument,
            takes_value: !is_bool,
            required,
            default,
            help: keyword("help")
                .and_then(|h| self.string_literal(h))
                .map(|h| help_text(&h)),
        }
    }

    /// A call that builds or extends a CLI or declares packaging:
    /// argparse's methods, `typer.Typer()`, `typer.run(f)`, click's
    /// `add_command`, `setup(...)`, `__all__.append/extend`.
    pub(super) fn usage_call(
        &mut self,
        node: Node<'_>,
        function: Node<'_>,
        args: Option<Node<'_>>,
    ) {
        let g = self.g;
        let (receiver, verb) = match g.kind(function) {
            Kind::Identifier => (None, self.text(function)),
            Kind::Attribute => match g.field(function, g.field_attribute) {
                Some(attr) => (g.field(function, g.field_object), self.text(attr)),
                None => return,
            },
            _ => return,
        };
        if self.usage.has_parsers
            && let Some(args) = args
        {
            self.parser_passed(function, args);
        }
        match verb {
            _ if verb.ends_with("ArgumentParser") => {
                let help = args.and_then(|a| {
                    self.keyword_arg(a, "description")
                        .and_then(|d| self.string_literal(d))
                        .map(|d| help_text(&d))
                });
                let name = args.and_then(|a| {
                    self.keyword_arg(a, "prog")
                        .and_then(|p| self.string_literal(p))
                });
                self.new_parser(node, name, help, None);
            }
            "add_parser" => {
                let Some(CliValue::Subparsers(parent)) =
                    receiver.and_then(|r| self.cli_value_of(r))
                else {
                    return;
                };
                let name = args.and_then(|a| {
                    self.positional_arg(a, 0)
                        .or_else(|| self.keyword_arg(a, "name"))
                        .and_then(|n| self.string_literal(n))
                });
                let help = args.and_then(|a| {
                    self.keyword_arg(a, "help")
                        .or_else(|| self.keyword_arg(a, "description"))
                        .and_then(|h| self.string_literal(h))
                        .map(|h| help_text(&h))
                });
                self.new_parser(node, name, help, Some(parent));
            }
            "add_subparsers" => {
                if let Some(CliValue::Parser(p)) = self.parser_of(receiver) {
                    if let Some(parser) = self.facts.usage.clis.get_mut(p as usize) {
                        parser.is_group = true;
                    }
                    self.usage.values.insert(node.id(), CliValue::Subparsers(p));
                }
            }
            "add_argument_group" | "add_mutually_exclusive_group" => {
                if let Some(CliValue::Parser(p) | CliValue::ArgumentGroup(p)) =
                    self.parser_of(receiver)
                {
                    self.usage
                        .values
                        .insert(node.id(), CliValue::ArgumentGroup(p));
                }
            }
            "add_argument" => {
                if let Some(CliValue::Parser(p) | CliValue::ArgumentGroup(p)) =
                    self.parser_of(receiver)
                    && let Some(args) = args
                {
                    let option = self.argparse_option(args);
                    if let Some(parser) = self.facts.usage.clis.get_mut(p as usize)
                        && parser.options.len() < MAX_OPTIONS
                    {
                        parser.options.push(option);
                    }
                }
            }
            "set_defaults" => {
                if let Some(CliValue::Parser(p)) = receiver.and_then(|r| self.cli_value_of(r))
                    && let Some(handler) = args
                        .and_then(|a| self.keyword_arg(a, "func"))
                        .filter(|h| matches!(g.kind(*h), Kind::Identifier | Kind::Attribute))
                {
                    let handler = truncate(self.text(handler), MAX_NAME);
                    if let Some(parser) = self.facts.usage.clis.get_mut(p as usize) {
                        parser.handler = Some(handler);
                    }
                }
            }
            "Typer" => {
                self.usage.values.insert(node.id(), CliValue::TyperApp);
            }
            "run" if receiver.is_some_and(|r| self.text(r) == "typer") => {
                let Some(handler) = args
                    .and_then(|a| self.positional_arg(a, 0))
                    .filter(|h| matches!(g.kind(*h), Kind::Identifier | Kind::Attribute))
                else {
                    return;
                };
                if self.facts.usage.clis.len() < MAX_CLIS {
                    let handler = truncate(self.text(handler), MAX_NAME);
                    let span = self.span(node);
                    self.facts.usage.clis.push(CliFacts {
                        framework: CliFramework::Typer,
                        name: None,
                        function: None,
                        handler: Some(handler),
                        app: None,
                        parent: None,
                        is_group: false,
                        help: None,
                        options: Vec::new(),
                        span,
                        fragment: false,
                        includes: Vec::new(),
                    });
                }
            }
            "add_command" => {
                let Some(CliValue::ClickCommand(group)) =
                    receiver.and_then(|r| self.cli_value_of(r))
                else {
                    return;
                };
                let name = args
                    .and_then(|a| self.keyword_arg(a, "name"))
                    .and_then(|n| self.string_literal(n));
                if let Some(CliValue::ClickCommand(child)) = args
                    .and_then(|a| self.positional_arg(a, 0))
                    .and_then(|c| self.cli_value_of(c))
                    && child != group
                    && let Some(command) = self.facts.usage.clis.get_mut(child as usize)
                {
                    command.parent = Some(CliParentFacts::Local(group));
                    if let Some(name) = name {
                        command.name = Some(truncate(&name, MAX_NAME));
                    }
                }
            }
            "setup"
                if self.scope() == ScopeRef::Module
                    && receiver.is_none_or(|r| {
                        matches!(self.text(r), "setuptools" | "distutils.core" | "core")
                    }) =>
            {
                if let Some(args) = args {
                    self.setup_call(args);
                }
            }
            "append" | "extend"
                if self.scope() == ScopeRef::Module
                    && receiver.is_some_and(|r| self.text(r) == "__all__") =>
            {
                let Some(value) = args.and_then(|a| self.positional_arg(a, 0)) else {
                    return;
                };
                let more = if verb == "append" {
                    self.string_literal(value).into_iter().collect()
                } else {
                    self.literal_strings(value)
                };
                self.extend_all(more);
            }
            _ => {}
        }
    }

    fn new_parser(
        &mut self,
        node: Node<'_>,
        name: Option<String>,
        help: Option<String>,
        parent: Option<u32>,
    ) {
        if self.facts.usage.clis.len() >= MAX_CLIS {
            return;
        }
        let index = u32::try_from(self.facts.usage.clis.len()).unwrap_or(u32::MAX);
        let function = match self.innermost_function() {
            Some(ScopeRef::Function(f)) => Some(f),
            _ => None,
        };
        let span = self.span(node);
        self.facts.usage.clis.push(CliFacts {
            framework: CliFramework::Argparse,
            name: name.map(|n| truncate(&n, MAX_NAME)),
            function,
            handler: None,
            app: None,
            parent: parent.map(CliParentFacts::Local),
            is_group: false,
            help,
            options: Vec::new(),
            span,
            fragment: false,
            includes: Vec::new(),
        });
        self.usage.values.insert(node.id(), CliValue::Parser(index));
    }

    /// What an argparse receiver holds; a parser-like parameter of the
    /// function being walked (`parser`, `sub_parser`, annotated
    /// `ArgumentParser`) becomes a fragment the first time it is used.
    fn parser_of(&mut self, receiver: Option<Node<'_>>) -> Option<CliValue> {
        let receiver = receiver?;
        if let Some(value) = self.cli_value_of(receiver) {
            return Some(value);
        }
        if self.g.kind(receiver) != Kind::Identifier || self.facts.usage.clis.len() >= MAX_CLIS {
            return None;
        }
        let Some(ScopeRef::Function(f)) = self.innermost_function() else {
            return None;
        };
        let name = self.text(receiver);
        let function = self.facts.functions.get(f as usize)?;
        let param = function.params.iter().find(|p| p.name == name)?;
        let annotation = param.annotation.as_deref().unwrap_or("");
        if !(name.ends_with("parser")
            || annotation.contains("ArgumentParser")
            || annotation.contains("ArgumentGroup"))
        {
            return None;
        }
        let index = u32::try_from(self.facts.usage.clis.len()).unwrap_or(u32::MAX);
        let span = function.span;
        self.facts.usage.clis.push(CliFacts {
            framework: CliFramework::Argparse,
            name: None,
            function: Some(f),
            handler: None,
            app: None,
            parent: None,
            is_group: false,
            help: None,
            options: Vec::new(),
            span,
            fragment: true,
            includes: Vec::new(),
        });
        let value = CliValue::Parser(index);
        self.usage.has_parsers = true;
        if self.usage.vars.len() < MAX_VARS {
            self.usage
                .vars
                .push((ScopeRef::Function(f), name.to_string(), value));
        }
        Some(value)
    }

    /// `add_args(parser)`: the parser is passed to a function that may add
    /// arguments to it.
    fn parser_passed(&mut self, function: Node<'_>, args: Node<'_>) {
        let mut cursor = args.walk();
        let passed: Vec<u32> = args
            .named_children(&mut cursor)
            .filter(|a| self.g.kind(*a) == Kind::Identifier)
            .take(4)
            .filter_map(|a| match self.cli_value_of(a) {
                Some(CliValue::Parser(p)) => Some(p),
                _ => None,
            })
            .collect();
        if passed.is_empty() {
            return;
        }
        let callee = truncate(self.text(function), MAX_NAME);
        for p in passed {
            if let Some(parser) = self.facts.usage.clis.get_mut(p as usize)
                && parser.includes.len() < MAX_INCLUDES
                && !parser.includes.contains(&callee)
            {
                parser.includes.push(callee.clone());
            }
        }
    }

    /// `parser.add_argument("--x", "-x", help=..., default=..., action=...)`.
    fn argparse_option(&self, args: Node<'_>) -> CliOption {
        let mut flags = Vec::new();
        let mut cursor = args.walk();
        for arg in args.named_children(&mut cursor) {
            if matches!(self.g.kind(arg), Kind::KeywordArgument | Kind::Comment) {
                continue;
            }
            if let Some(text) = self.string_literal(arg) {
                flags.push(truncate(&text, MAX_NAME));
            }
        }
        let positional = flags.first().is_some_and(|f| !f.starts_with('-'));
        let keyword = |name: &str| self.keyword_arg(args, name);
        let action = keyword("action").and_then(|a| self.string_literal(a));
        let takes_value = !matches!(
            action.as_deref(),
            Some(
                "store_true"
                    | "store_false"
                    | "store_const"
                    | "count"
                    | "help"
                    | "version"
                    | "append_const"
            )
        ) && keyword("action")
            .is_none_or(|a| !self.text(a).contains("BooleanOptionalAction"));
        let default = keyword("default").and_then(|d| self.literal(d));
        let required = match keyword("required") {
            Some(v) => self.text(v) == "True",
            None => {
                positional
                    && default.is_none()
                    && keyword("nargs")
                        .and_then(|n| self.string_literal(n))
                        .is_none_or(|n| !matches!(n.as_str(), "?" | "*"))
            }
        };
        CliOption {
            flags,
            positional,
            takes_value,
            required,
            default,
            help: keyword("help")
                .and_then(|h| self.string_literal(h))
                .filter(|h| !h.is_empty())
                .map(|h| help_text(&h)),
        }
    }

    /// `setup(name=..., entry_points={...})`.
    fn setup_call(&mut self, args: Node<'_>) {
        let name = self
            .keyword_arg(args, "name")
            .and_then(|n| self.string_literal(n))
            .map(|n| truncate(&n, MAX_NAME));
        let entry_points = match self.keyword_arg(args, "entry_points") {
            Some(value) if self.g.kind(value) == Kind::Identifier => {
                let wanted = self.text(value);
                self.usage
                    .entry_point_dicts
                    .iter()
                    .rev()
                    .find(|(n, _)| n == wanted)
                    .map(|(_, e)| e.clone())
                    .unwrap_or_default()
            }
            Some(value) => self.entry_point_groups(value).unwrap_or_default(),
            None => Vec::new(),
        };
        if name.is_none() && entry_points.is_empty() {
            return;
        }
        let setup = self
            .facts
            .usage
            .setup
            .get_or_insert_with(SetupFacts::default);
        if setup.name.is_none() {
            setup.name = name;
        }
        let room = MAX_ENTRY_POINTS.saturating_sub(setup.entry_points.len());
        setup
            .entry_points
            .extend(entry_points.into_iter().take(room));
    }

    /// A module-level `name = {...}` that may be passed as `entry_points=`.
    pub(super) fn entry_point_dict(&mut self, name: &str, value: Node<'_>) {
        if self.usage.entry_point_dicts.len() >= MAX_ENTRY_POINT_DICTS {
            return;
        }
        if let Some(entries) = self.entry_point_groups(value) {
            self.usage
                .entry_point_dicts
                .push((name.to_string(), entries));
        }
    }

    /// The `console_scripts` and `gui_scripts` of an `entry_points` value:
    /// a dict of lists of `"name = mod:func"` strings (or of one
    /// ini-style string), or one ini-style string. `None` when it has neither.
    fn entry_point_groups(&self, value: Node<'_>) -> Option<Vec<(EntryPointKind, String)>> {
        let g = self.g;
        if let Some(text) = self.string_literal(value) {
            let entries = ini_entry_points(&text);
            return (!entries.is_empty()).then_some(entries);
        }
        if g.kind(value) != Kind::Dictionary {
            return None;
        }
        let mut out = Vec::new();
        let mut found = false;
        let mut cursor = value.walk();
        for pair in value
            .named_children(&mut cursor)
            .filter(|p| g.kind(*p) == Kind::Pair)
            .take(MAX_PAIRS_SCANNED)
        {
            let (Some(key), Some(entries)) =
                (g.field(pair, g.field_key), g.field(pair, g.field_value))
            else {
                continue;
            };
            // Most dictionaries are not entry points: look before allocating.
            if !self.text(key).contains("_scripts") {
                continue;
            }
            let kind = match self.string_literal(key).as_deref() {
                Some("console_scripts") => EntryPointKind::Console,
                Some("gui_scripts") => EntryPointKind::Gui,
                _ => continue,
            };
            found = true;
            if let Some(text) = self.string_literal(entries) {
                out.extend(
                    text.lines()
                        .map(str::trim)
                        .filter(|l| l.contains('='))
                        .take(MAX_ENTRY_POINTS)
                        .map(|l| (kind, l.to_string())),
                );
                continue;
            }
            if !matches!(g.kind(entries), Kind::List | Kind::Tuple) {
                continue;
            }
            let mut cursor = entries.walk();
            for entry in entries.named_children(&mut cursor) {
                if out.len() >= MAX_ENTRY_POINTS {
                    break;
                }
                if let Some(text) = self.string_literal(entry) {
                    out.push((kind, text));
                }
            }
        }
        found.then_some(out)
    }

    /// `__all__ = [...]`: the literal names, also of `[...] + [...]`;
    /// anything else (a comprehension, a call) leaves `__all__` unknown
    /// rather than empty.
    pub(super) fn all_assignment(&mut self, value: Option<Node<'_>>) {
        let names = value.map(|v| self.literal_strings(v)).unwrap_or_default();
        let is_literal = value.is_some_and(|v| self.has_literal_part(v));
        self.facts.all = if is_literal {
            Some(names.into_iter().take(MAX_ALL).collect())
        } else {
            None
        };
    }

    /// `__all__ += [...]` (or `+= other.__all__`, which adds nothing known).
    pub(super) fn all_augmented(&mut self, value: Node<'_>) {
        let more = self.literal_strings(value);
        self.extend_all(more);
    }

    fn extend_all(&mut self, more: Vec<String>) {
        let all = self.facts.all.get_or_insert_with(Vec::new);
        let room = MAX_ALL.saturating_sub(all.len());
        all.extend(more.into_iter().take(room));
    }

    /// Whether a value is, or adds, a list or tuple display.
    fn has_literal_part(&self, node: Node<'_>) -> bool {
        let mut stack = vec![node];
        let mut seen = 0;
        while let Some(node) = stack.pop() {
            seen += 1;
            if seen > 64 {
                return false;
            }
            match self.g.kind(node) {
                Kind::List | Kind::Tuple => return true,
                Kind::ParenthesizedExpression => stack.extend(node.named_child(0)),
                _ if node.kind() == "binary_operator" => {
                    stack.extend(self.g.field(node, self.g.field_left));
                    stack.extend(self.g.field(node, self.g.field_right));
                }
                _ => {}
            }
        }
        false
    }

    /// The string literals of a list or tuple display, or of several
    /// joined with `+`; nothing for anything else.
    fn literal_strings(&self, node: Node<'_>) -> Vec<String> {
        let g = self.g;
        let mut out = Vec::new();
        // Left operands are pushed last so that they come out first.
        let mut stack = vec![node];
        let mut steps = 0usize;
        while let Some(node) = stack.pop() {
            steps += 1;
            if steps > MAX_ALL {
                break;
            }
            match g.kind(node) {
                Kind::List | Kind::Tuple => out.extend(self.string_list(node)),
                Kind::ParenthesizedExpression => stack.extend(node.named_child(0)),
                _ if node.kind() == "binary_operator" => {
                    stack.extend(g.field(node, g.field_right));
                    stack.extend(g.field(node, g.field_left));
                }
                _ => {}
            }
        }
        out
    }

    /// A string literal's value: one plain string, or several concatenated,
    /// possibly in parentheses; `None` for f-strings and anything else.
    pub(super) fn string_literal(&self, node: Node<'_>) -> Option<String> {
        match self.g.kind(node) {
            Kind::String => self.plain_string(node),
            Kind::ConcatenatedString => {
                let mut cursor = node.walk();
                let mut out = String::new();
                for part in node.named_children(&mut cursor) {
                    out.push_str(&self.plain_string(part)?);
                }
                Some(out)
            }
            Kind::ParenthesizedExpression => self.string_literal(node.named_child(0)?),
            _ => None,
        }
    }

    /// A default as written, when it is a literal (string, number,
    /// `True`/`False`/`None`, a negative number).
    fn literal(&self, node: Node<'_>) -> Option<String> {
        let text = match node.kind() {
            "string" | "concatenated_string" => {
                return self
                    .string_literal(node)
                    .map(|s| format!("{:?}", truncate(&s, MAX_NAME)));
            }
            "integer" | "float" | "true" | "false" | "none" => self.text(node),
            "unary_operator"
                if node
                    .named_child(0)
                    .is_some_and(|n| matches!(n.kind(), "integer" | "float")) =>
            {
                self.text(node)
            }
            _ => return None,
        };
        Some(truncate(text, MAX_NAME))
    }

    /// What a receiver expression holds: a name or `self.attr` bound to a
    /// CLI object, or a call that made one.
    fn cli_value_of(&self, node: Node<'_>) -> Option<CliValue> {
        match self.g.kind(node) {
            Kind::Call => self.usage.values.get(&node.id()).copied(),
            Kind::Identifier | Kind::Attribute => {
                let text = self.text(node);
                let scope = self.scope();
                // `self.parser` is set in one method and used in another.
                let any_scope = self.g.kind(node) == Kind::Attribute;
                self.usage
                    .vars
                    .iter()
                    .rev()
                    .find(|(s, n, _)| {
                        (any_scope || *s == scope || *s == ScopeRef::Module) && n == text
                    })
                    .map(|(_, _, v)| *v)
            }
            _ => None,
        }
    }

    /// `name = <call that made a CLI object>`: follows the object by name.
    pub(super) fn usage_assignment(&mut self, target: Node<'_>, value: Option<Node<'_>>) {
        if self.usage.values.is_empty() {
            return;
        }
        let Some(value) = value else { return };
        let Some(made) = self.usage.values.get(&value.id()).copied() else {
            return;
        };
        if !matches!(self.g.kind(target), Kind::Identifier | Kind::Attribute) {
            return;
        }
        let text = self.text(target);
        if text.len() <= MAX_NAME {
            self.cli_var(text.to_string(), made);
        }
    }

    fn cli_var(&mut self, name: String, value: CliValue) {
        self.usage.has_parsers |= matches!(value, CliValue::Parser(_));
        if self.usage.vars.len() < MAX_VARS {
            let scope = self.scope();
            self.usage.vars.push((scope, name, value));
        }
    }

    /// Whether the file imports click (or a package built on it) and
    /// typer so far; each import is examined once.
    fn imported_frameworks(&mut self) -> (bool, bool) {
        let state = &mut self.usage;
        for import in self.facts.imports.iter().skip(state.imports_seen) {
            let root = import.module.split('.').next().unwrap_or("");
            if import.level == 0 {
                state.imports_click |= CLICK_MODULES.contains(&root);
                state.imports_typer |= root == "typer";
            }
        }
        state.imports_seen = self.facts.imports.len();
        (state.imports_click, state.imports_typer)
    }
}

/// The name click or typer gives a command defined by function `name`:
/// lowercase with `_` as `-`; click (8.2) also drops a `_command`, `_cmd`,
/// `_group` or `_grp` suffix.
fn command_name(name: &str, click: bool) -> String {
    let mut name = name.to_lowercase();
    if click {
        for suffix in ["_command", "_cmd", "_group", "_grp"] {
            if let Some(stripped) = name.strip_suffix(suffix)
                && !stripped.is_empty()
            {
                name = stripped.to_string();
                break;
            }
        }
    }
    truncate(&name.replace('_', "-"), MAX_NAME)
}

/// The flag typer makes for parameter `name`.
fn option_flag(name: &str, is_bool: bool) -> String {
    let flag = name.to_lowercase().replace('_', "-");
    if is_bool {
        format!("--{flag}/--no-{flag}")
    } else {
        format!("--{flag}")
    }
}

/// The `console_scripts` and `gui_scripts` of an ini-style entry points
/// text (`[console_scripts]\nname = mod:func`).
pub(crate) fn ini_entry_points(text: &str) -> Vec<(EntryPointKind, String)> {
    let mut out = Vec::new();
    let mut kind = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            kind = match section.trim() {
                "console_scripts" => Some(EntryPointKind::Console),
                "gui_scripts" => Some(EntryPointKind::Gui),
                _ => None,
            };
            continue;
        }
        if let Some(kind) = kind
            && line.contains('=')
            && out.len() < MAX_ENTRY_POINTS
        {
            out.push((kind, line.to_string()));
        }
    }
    out
}
