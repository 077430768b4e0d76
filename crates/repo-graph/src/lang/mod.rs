//! The languages the analysis understands, each with its own facts,
//! per-file extraction and cross-file resolution, and how each is
//! presented to readers (`present`).

pub(crate) mod java;
pub(crate) mod present;
pub(crate) mod python;
pub(crate) mod resolver;

use tree_sitter::{Node, Tree};

/// What a per-file extractor does at each node of [`walk`].
pub(crate) trait Visitor {
    /// Called before a node's children; returns whether to walk into them.
    fn enter(&mut self, node: Node<'_>) -> bool;
    /// Called after a node's children (or at once when they are skipped).
    fn leave(&mut self, node: Node<'_>);
    /// The walk goes down into `node`'s children.
    fn down(&mut self, _node: Node<'_>) {}
    /// The walk comes back up from a node's children.
    fn up(&mut self) {}
}

/// Walks `tree` in pre-order with one cursor and no recursion, so that no
/// nesting depth in a file can overflow the stack; both languages'
/// extraction is this one walk.
pub(crate) fn walk(tree: &Tree, visitor: &mut impl Visitor) {
    let mut cursor = tree.root_node().walk();
    'walk: loop {
        let node = cursor.node();
        let descend = visitor.enter(node);
        // Most nodes are leaves; asking the cursor for their first child
        // costs more than asking the node.
        if descend && node.child_count() > 0 && cursor.goto_first_child() {
            visitor.down(node);
            continue;
        }
        visitor.leave(node);
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
            visitor.up();
            let parent = cursor.node();
            visitor.leave(parent);
        }
    }
}

/// A tree-sitter parser set to one language; one per worker thread.
pub(crate) struct SyntaxParser {
    parser: tree_sitter::Parser,
}

impl SyntaxParser {
    /// A parser for `grammar`, the grammar of `language`.
    pub(crate) fn new(
        grammar: &tree_sitter::Language,
        language: crate::Language,
    ) -> Result<Self, crate::Error> {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(grammar)
            .map_err(|e| crate::Error::Grammar {
                language,
                detail: e.to_string(),
            })?;
        Ok(Self { parser })
    }

    /// The syntax tree of `text`; `None` only if tree-sitter gives up
    /// entirely (it does not, for well-formed or malformed text alike, but
    /// the API allows it).
    pub(crate) fn parse(&mut self, text: &str) -> Option<Tree> {
        self.parser.parse(text, None)
    }
}

/// The kind of `node` in a table indexed by kind id (`other` past its end).
pub(crate) fn kind_in<K: Copy>(kinds: &[K], node: Node<'_>, other: K) -> K {
    kinds
        .get(usize::from(node.kind_id()))
        .copied()
        .unwrap_or(other)
}
