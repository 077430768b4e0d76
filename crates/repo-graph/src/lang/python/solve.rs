//! The engine of the points-to analysis: nodes holding small sets of
//! abstract objects, edges that copy (or transform) values from node to
//! node, and a worklist that propagates each new value once.
//!
//! Cost is bounded by construction: a node holds at most [`MAX_VALUES`]
//! objects (past that it is *widened*: it keeps what it has, takes nothing
//! more, and the widening is counted); every value is propagated along each
//! edge and fired into each constraint of its node exactly once, so the
//! total work is at most (edges + constraints) × [`MAX_VALUES`]. Every
//! step adds to a work counter, and a step budget stops the solver as a
//! last guard.

use crate::model::{ClassId, FunctionId, ModuleId};

/// Objects a node can hold before it is widened.
pub(super) const MAX_VALUES: usize = 32;

/// An abstract object: what a Python value can be, as far as the analysis tracks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Obj {
    Module(ModuleId),
    Class(ClassId),
    Instance(ClassId),
    Function(FunctionId),
    /// A method read through an object (a classmethod, through an object or
    /// its class). The receiver is not part of the value, which keeps sets
    /// small: a call passes the values the method was read from.
    Bound(FunctionId),
    /// `super()` in a method of the first class, on an object of the
    /// second: lookups continue after the first in the second's MRO.
    Super(ClassId, ClassId),
    /// Something outside the repository, by interned dotted name.
    External(u32),
    /// A list, tuple, set or dict, by global site id.
    Container(u32),
    /// A method of a container (`append`, `get`, ...), by site and kind.
    ContainerMethod(u32, ContainerOp),
    /// What calling a generator function returns.
    Generator(FunctionId),
    /// A lambda, by global id.
    Lambda(u32),
    /// An iterable whose elements are the values of a node (`enumerate`,
    /// `zip`, `dict.items()`).
    Pairs(u32),
    /// A pair whose first and second elements are the values of two nodes
    /// (an item of `enumerate`, `zip` or `dict.items()`).
    Tuple2(u32, u32),
}

/// The container methods that move values in or out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum ContainerOp {
    /// `append(x)`, `add(x)`, `insert(i, x)`'s last argument, `setdefault(k, x)`.
    Put,
    /// `extend(xs)`, `update(d)`: the argument's elements.
    PutAll,
    /// `get`, `pop`, `__getitem__`: an element.
    Get,
    /// `setdefault(k, x)`: puts `x`, returns an element.
    GetPut,
    /// `values()`, `keys()`, `copy()`: the container itself.
    Same,
    /// `items()`: pairs of the elements.
    Items,
}

impl ContainerOp {
    pub(super) fn from_method(name: &str) -> Option<ContainerOp> {
        Some(match name {
            "append" | "add" | "insert" | "appendleft" => ContainerOp::Put,
            "extend" | "update" | "extendleft" => ContainerOp::PutAll,
            "setdefault" => ContainerOp::GetPut,
            "get" | "pop" | "popleft" | "popitem" | "__getitem__" => ContainerOp::Get,
            "values" | "keys" | "copy" => ContainerOp::Same,
            "items" => ContainerOp::Items,
            _ => return None,
        })
    }
}

/// How values change along an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transform {
    Copy,
    /// Read through an instance: methods become bound, and a property is
    /// called. The class and the load are kept aside (an index into the
    /// caller's table) so that an edge stays at 16 bytes.
    FromInstance(u32),
    /// Read through the class itself: classmethods become bound.
    FromClass(ClassId),
    /// `Class` becomes `Instance` (annotations, `except C as e`).
    Instantiate,
    /// The object a method was read from becomes its first argument: an
    /// instance (or the class, for a classmethod) of a class that inherits
    /// the method from `owner`; `super()` stands for its receiver.
    Receiver {
        class_level: bool,
        owner: ClassId,
    },
}

const _: () = assert!(std::mem::size_of::<Edge>() == 16);

#[derive(Debug, Clone, Copy)]
struct Edge {
    to: u32,
    transform: Transform,
    next: u32,
}

#[derive(Debug, Clone, Copy)]
struct Link {
    constraint: u32,
    next: u32,
}

/// The end of an edge or constraint list.
pub(super) const NO_LINK: u32 = u32::MAX;

/// A node: its interned objects ([`Engine::objs`]), how many of them are
/// propagated, and the heads of its edge and constraint lists. Up to two
/// objects are held inline (most sets are that small); past that `slots`
/// is the start and capacity of a block of [`Engine::spilled`]. Kept at 20 bytes: there is one
/// node per binding, call result, parameter and element (1.2 million on
/// sympy).
#[derive(Debug, Clone, Copy)]
struct Node {
    slots: [u32; 2],
    /// Objects held, at most [`MAX_VALUES`].
    len: u8,
    processed: u8,
    widened: bool,
    queued: bool,
    edges: u32,
    constraints: u32,
}

const _: () = assert!(MAX_VALUES <= u8::MAX as usize);
const _: () = assert!(std::mem::size_of::<Node>() == 20);

impl Node {
    const EMPTY: Node = Node {
        slots: [0; 2],
        len: 0,
        processed: 0,
        widened: false,
        queued: false,
        edges: NO_LINK,
        constraints: NO_LINK,
    };

    /// The node's objects.
    fn ids<'a>(&'a self, spilled: &'a Spilled) -> &'a [u32] {
        if self.len <= 2 {
            &self.slots[..usize::from(self.len)]
        } else {
            let start = self.slots[0] as usize;
            spilled
                .items
                .get(start..start + usize::from(self.len))
                .unwrap_or(&[])
        }
    }

    fn push(&mut self, id: u32, spilled: &mut Spilled) {
        let len = usize::from(self.len);
        if len < 2 {
            self.slots[len] = id;
        } else {
            // Past two, `slots` is the block's start and capacity.
            let (start, capacity) = if len == 2 {
                let start = spilled.take(0);
                spilled.items[start..start + 2].copy_from_slice(&self.slots);
                (start, Spilled::capacity(0))
            } else {
                (self.slots[0] as usize, self.slots[1] as usize)
            };
            let (start, capacity) = if len == capacity {
                let class = Spilled::class_of(capacity) + 1;
                let moved = spilled.take(class);
                spilled.items.copy_within(start..start + len, moved);
                spilled.give(Spilled::class_of(capacity), start);
                (moved, Spilled::capacity(class))
            } else {
                (start, capacity)
            };
            spilled.items[start + len] = id;
            self.slots = [
                u32::try_from(start).unwrap_or(u32::MAX),
                u32::try_from(capacity).unwrap_or(u32::MAX),
            ];
        }
        self.len += 1;
    }
}

/// The objects of nodes that hold more than two, in blocks of 4, 8, 16
/// and 32 ids carved from one vector; a block a node outgrows is reused by
/// the next node that needs one of its size. One allocation per block and a
/// vector header each cost 40 MB more on sympy.
#[derive(Default)]
struct Spilled {
    items: Vec<u32>,
    /// Free blocks' starts, by size class.
    free: [Vec<usize>; 4],
}

const _: () = assert!(MAX_VALUES <= 4 << 3);

impl Spilled {
    fn capacity(class: usize) -> usize {
        4 << class
    }

    fn class_of(capacity: usize) -> usize {
        (capacity / 4).trailing_zeros() as usize
    }

    /// The start of a free block of size class `class`.
    fn take(&mut self, class: usize) -> usize {
        if let Some(start) = self.free.get_mut(class).and_then(Vec::pop) {
            return start;
        }
        let start = self.items.len();
        self.items.resize(start + Spilled::capacity(class), 0);
        start
    }

    fn give(&mut self, class: usize, start: usize) {
        if let Some(free) = self.free.get_mut(class) {
            free.push(start);
        }
    }
}

/// Nodes, edges, constraints' attachment to nodes, and the worklist.
pub(super) struct Engine {
    nodes: Vec<Node>,
    /// The objects of nodes that hold more than two.
    spilled: Spilled,
    /// Every object some node holds, once, by id.
    objs: Vec<Obj>,
    obj_ids: rustc_hash::FxHashMap<Obj, u32>,
    edges: Vec<Edge>,
    links: Vec<Link>,
    worklist: Vec<u32>,
    /// Work units spent so far.
    pub work: u64,
    /// Nodes that hit [`MAX_VALUES`].
    pub widened: u64,
    /// Work allowed before the solver stops.
    pub budget: u64,
}

/// One value moved along one edge: what the caller applies transforms to.
pub(super) struct Delivery {
    pub to: u32,
    pub transform: Transform,
    /// The interned object ([`Engine::obj`]): a plain copy moves the id
    /// without looking the object up.
    pub value: u32,
}

impl Engine {
    pub(super) fn new() -> Self {
        Engine {
            nodes: Vec::new(),
            spilled: Spilled::default(),
            objs: Vec::new(),
            obj_ids: rustc_hash::FxHashMap::default(),
            edges: Vec::new(),
            links: Vec::new(),
            worklist: Vec::new(),
            work: 0,
            widened: 0,
            budget: u64::MAX,
        }
    }

    pub(super) fn node(&mut self) -> u32 {
        let id = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.nodes.push(Node::EMPTY);
        id
    }

    pub(super) fn nodes(&mut self, count: usize) -> u32 {
        let first = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.nodes.resize(self.nodes.len() + count, Node::EMPTY);
        first
    }

    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The objects `node` holds.
    pub(super) fn values(&self, node: u32) -> impl Iterator<Item = Obj> + '_ {
        self.nodes
            .get(node as usize)
            .map_or(&[][..], |n| n.ids(&self.spilled))
            .iter()
            .filter_map(|id| self.objs.get(*id as usize).copied())
    }

    /// The id of `value`, interned on first sight.
    pub(super) fn intern(&mut self, value: Obj) -> u32 {
        if let Some(id) = self.obj_ids.get(&value) {
            return *id;
        }
        let id = u32::try_from(self.objs.len()).unwrap_or(u32::MAX);
        self.objs.push(value);
        self.obj_ids.insert(value, id);
        id
    }

    /// Adds `value` to `node`; queues the node if it is new there.
    pub(super) fn add(&mut self, node: u32, value: Obj) {
        let id = self.intern(value);
        self.add_id(node, id);
    }

    /// The object an id stands for.
    pub(super) fn obj(&self, id: u32) -> Option<Obj> {
        self.objs.get(id as usize).copied()
    }

    /// Adds the interned object `id` to `node`.
    pub(super) fn add_id(&mut self, node: u32, id: u32) {
        self.work += 1;
        let Some(n) = self.nodes.get_mut(node as usize) else {
            return;
        };
        if n.widened || n.ids(&self.spilled).contains(&id) {
            return;
        }
        if usize::from(n.len) >= MAX_VALUES {
            n.widened = true;
            self.widened += 1;
            return;
        }
        n.push(id, &mut self.spilled);
        if !n.queued {
            n.queued = true;
            self.worklist.push(node);
        }
    }

    /// Adds an edge; values `from` already propagated are delivered now, so
    /// an edge added late misses nothing.
    pub(super) fn edge(
        &mut self,
        from: u32,
        to: u32,
        transform: Transform,
        out: &mut Vec<Delivery>,
    ) {
        self.work += 1;
        if from == to && transform == Transform::Copy {
            return;
        }
        let Some(n) = self.nodes.get_mut(from as usize) else {
            return;
        };
        let id = u32::try_from(self.edges.len()).unwrap_or(u32::MAX);
        self.edges.push(Edge {
            to,
            transform,
            next: n.edges,
        });
        n.edges = id;
        let done = n.processed as usize;
        for id in n.ids(&self.spilled).iter().take(done) {
            out.push(Delivery {
                to,
                transform,
                value: *id,
            });
        }
    }

    /// Attaches a constraint to a node; returns the values already
    /// propagated, which the caller fires now.
    pub(super) fn attach(&mut self, node: u32, constraint: u32) -> Vec<Obj> {
        self.work += 1;
        let Some(n) = self.nodes.get_mut(node as usize) else {
            return Vec::new();
        };
        let id = u32::try_from(self.links.len()).unwrap_or(u32::MAX);
        self.links.push(Link {
            constraint,
            next: n.constraints,
        });
        n.constraints = id;
        let ids = n.ids(&self.spilled);
        ids[..usize::from(n.processed).min(ids.len())]
            .iter()
            .filter_map(|id| self.objs.get(*id as usize).copied())
            .collect()
    }

    /// Takes the next node with unpropagated values: the node and the
    /// range of its new values, now counted as propagated. `None` when the
    /// worklist is empty or the budget is spent.
    pub(super) fn pop(&mut self) -> Option<(u32, usize, usize)> {
        if self.work > self.budget {
            return None;
        }
        let node = self.worklist.pop()?;
        let n = self.nodes.get_mut(node as usize)?;
        n.queued = false;
        let start = usize::from(n.processed);
        let end = usize::from(n.len);
        n.processed = n.len;
        self.work += (end - start) as u64;
        Some((node, start, end))
    }

    /// The id of the `index`th object of `node`.
    pub(super) fn id_at(&self, node: u32, index: usize) -> Option<u32> {
        self.nodes
            .get(node as usize)?
            .ids(&self.spilled)
            .get(index)
            .copied()
    }

    /// The first edge out of `node` (edges are a linked list; [`NO_LINK`] ends it).
    pub(super) fn first_edge(&self, node: u32) -> u32 {
        self.nodes.get(node as usize).map_or(NO_LINK, |n| n.edges)
    }

    pub(super) fn edge_at(&self, edge: u32) -> Option<(u32, Transform, u32)> {
        self.edges
            .get(edge as usize)
            .map(|e| (e.to, e.transform, e.next))
    }

    pub(super) fn first_link(&self, node: u32) -> u32 {
        self.nodes
            .get(node as usize)
            .map_or(NO_LINK, |n| n.constraints)
    }

    pub(super) fn link_at(&self, link: u32) -> Option<(u32, u32)> {
        self.links
            .get(link as usize)
            .map(|l| (l.constraint, l.next))
    }

    pub(super) fn over_budget(&self) -> bool {
        self.work > self.budget
    }

    pub(super) fn has_pending(&self) -> bool {
        !self.worklist.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes that outgrow their inline slots and their blocks, interleaved
    /// so that blocks are freed and reused, keep every object in order.
    #[test]
    fn spilled_values_survive_growth_and_block_reuse() {
        let mut engine = Engine::new();
        let first = engine.nodes(3);
        for round in 0..MAX_VALUES as u32 + 4 {
            for node in first..first + 3 {
                engine.add_id(node, node * 1000 + round);
            }
        }
        for node in first..first + 3 {
            let n = engine.nodes[node as usize];
            let expected: Vec<u32> = (0..MAX_VALUES as u32).map(|r| node * 1000 + r).collect();
            assert_eq!(n.ids(&engine.spilled), expected.as_slice());
            assert!(n.widened);
        }
        assert_eq!(engine.widened, 3);
        // Outgrown blocks were reused: 3 nodes need at most 3 blocks of 32
        // plus the ones freed on the way (4 + 8 + 16 each), never more.
        assert!(engine.spilled.items.len() <= 3 * (4 + 8 + 16 + 32));
        let reused = engine.nodes(1);
        for v in 0..5 {
            engine.add_id(reused, v);
        }
        assert_eq!(
            engine.nodes[reused as usize].ids(&engine.spilled),
            &[0, 1, 2, 3, 4]
        );
        assert!(engine.spilled.items.len() <= 3 * (4 + 8 + 16 + 32));
    }
}
