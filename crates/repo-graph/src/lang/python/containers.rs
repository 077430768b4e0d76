//! Containers in the points-to analysis: each list, tuple, set or dict
//! display (and each container the analysis makes up, like `**kwargs`) has
//! a node of all its elements and one per literal key, filled by stores
//! and read by iteration and subscripts.

use rustc_hash::FxHashMap;

use super::facts::ContainerKind;
use super::resolve::{Analysis, Operand};
use super::solve::{Delivery, Obj};

/// The element nodes of every container, by container id. Its fields are
/// private: this file's code is the only code that writes them.
#[derive(Default)]
pub(super) struct ContainerTables {
    /// Per container: the node of all its elements (`u32::MAX` until made).
    elem_node: Vec<u32>,
    /// The built-in type of each container, by container id (`None` for
    /// the ones the analysis makes up, like `**kwargs`).
    kind: Vec<Option<ContainerKind>>,
    /// Per dict: the node of its `(key, value)` pairs (`d.items()`).
    pairs_node: FxHashMap<u32, u32>,
    /// The dict each `dict(...)` call site makes.
    dict_sites: FxHashMap<u32, u32>,
    /// Per (container, key atom or `u32::MAX` for no key): its elements there.
    keyed_nodes: FxHashMap<(u32, u32), u32>,
}

impl ContainerTables {
    /// The next file's displays, numbered after the previous files': their
    /// kinds as written (`kinds` may be shorter than `count`: the rest are
    /// of no built-in type).
    pub(super) fn add_displays(&mut self, kinds: &[ContainerKind], count: u32) {
        let kinds = kinds.iter().map(|k| Some(*k));
        self.kind
            .extend(kinds.chain(std::iter::repeat(None)).take(count as usize));
    }

    /// Once every file's displays are numbered: no element node is made yet.
    pub(super) fn seal_displays(&mut self) {
        self.elem_node = vec![u32::MAX; self.kind.len()];
    }

    /// The built-in type of `container`, if it has one.
    pub(super) fn kind_of(&self, container: u32) -> Option<ContainerKind> {
        self.kind.get(container as usize).copied().flatten()
    }
}

impl Analysis<'_> {
    /// The dict a `dict(...)` call at `site` makes: one per site, made on
    /// its first call.
    pub(super) fn dict_made_at(&mut self, site: u32) -> u32 {
        if let Some(c) = self.containers.dict_sites.get(&site) {
            return *c;
        }
        let c = self.new_container();
        if let Some(kind) = self.containers.kind.get_mut(c as usize) {
            *kind = Some(ContainerKind::Dict);
        }
        self.containers.dict_sites.insert(site, c);
        c
    }

    /// The node of the `(key, value)` pairs of a dict whose values are at
    /// `elem` (`d.items()`): keys are not tracked.
    pub(super) fn pairs_of(&mut self, container: u32, elem: u32) -> u32 {
        if let Some(n) = self.containers.pairs_node.get(&container) {
            return *n;
        }
        let keys = self.engine.node();
        let n = self.engine.node();
        self.engine.add(n, Obj::Tuple2(keys, elem));
        self.containers.pairs_node.insert(container, n);
        n
    }

    /// A value stored in a container: all its elements, and the elements
    /// at that key (or stored without one).
    pub(super) fn store_element(
        &mut self,
        container: u32,
        key: Option<u32>,
        value: Operand,
        out: &mut Vec<Delivery>,
    ) {
        if value == Operand::None {
            return;
        }
        let all = self.elem(container);
        self.flow(value, all, out);
        let keyed = self.keyed(container, key);
        self.flow(value, keyed, out);
    }

    /// The elements of a container stored at `key`, or (for `None`) without
    /// a known key; a read at a literal key sees both.
    pub(super) fn keyed(&mut self, container: u32, key: Option<u32>) -> u32 {
        let slot = key.unwrap_or(u32::MAX);
        if let Some(node) = self.containers.keyed_nodes.get(&(container, slot)) {
            return *node;
        }
        let node = self.engine.node();
        self.containers.keyed_nodes.insert((container, slot), node);
        node
    }

    /// A container the analysis makes up (`**kwargs`, a `dict(...)` call),
    /// numbered after the program's displays.
    pub(super) fn new_container(&mut self) -> u32 {
        let id = u32::try_from(self.containers.elem_node.len()).unwrap_or(u32::MAX);
        self.containers.elem_node.push(u32::MAX);
        self.containers.kind.push(None);
        id
    }

    /// The node of all the elements of `container`, made when first needed.
    pub(super) fn elem(&mut self, container: u32) -> u32 {
        match self.containers.elem_node.get(container as usize) {
            Some(&node) if node != u32::MAX => node,
            Some(_) => {
                let node = self.engine.node();
                self.containers.elem_node[container as usize] = node;
                node
            }
            None => self.engine.node(),
        }
    }
}
