//! Containers in the points-to analysis: each list, tuple, set or dict
//! display (and each container the analysis makes up, like `**kwargs`) has
//! a node of all its elements and one per literal key, filled by stores
//! and read by iteration and subscripts.

use rustc_hash::FxHashMap;

use super::facts::ContainerKind;
use super::resolve::{Analysis, Operand};
use super::solve::Delivery;

/// The element nodes of every container, by container id.
#[derive(Default)]
pub(super) struct ContainerTables {
    /// Per container: the node of all its elements (`u32::MAX` until made).
    pub(super) elem_node: Vec<u32>,
    /// The built-in type of each container, by container id (`None` for
    /// the ones the analysis makes up, like `**kwargs`).
    pub(super) kind: Vec<Option<ContainerKind>>,
    /// Per dict: the node of its `(key, value)` pairs (`d.items()`).
    pub(super) pairs_node: FxHashMap<u32, u32>,
    /// The dict each `dict(...)` call site makes.
    pub(super) dict_sites: FxHashMap<u32, u32>,
    /// Per (container, key atom or `u32::MAX` for no key): its elements there.
    pub(super) keyed_nodes: FxHashMap<(u32, u32), u32>,
}

impl Analysis<'_> {
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
