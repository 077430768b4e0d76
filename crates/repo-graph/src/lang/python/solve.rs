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
    /// Read through an instance of the class: methods become bound, and a
    /// property is called by the load with this id.
    FromInstance(ClassId, u32),
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
const NONE: u32 = NO_LINK;

/// A node's interned objects ([`Engine::objs`]): up to two inline (most
/// sets are that small), more on the heap.
#[derive(Debug, Clone)]
enum Values {
    Inline(u8, [u32; 2]),
    Heap(Vec<u32>),
}

impl Default for Values {
    fn default() -> Self {
        Values::Inline(0, [0; 2])
    }
}

impl Values {
    fn as_slice(&self) -> &[u32] {
        match self {
            Values::Inline(len, items) => &items[..usize::from(*len).min(2)],
            Values::Heap(items) => items,
        }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn push(&mut self, id: u32) {
        match self {
            Values::Inline(len, items) if usize::from(*len) < 2 => {
                items[usize::from(*len)] = id;
                *len += 1;
            }
            Values::Inline(_, items) => {
                let mut heap = Vec::with_capacity(4);
                heap.extend_from_slice(items);
                heap.push(id);
                *self = Values::Heap(heap);
            }
            Values::Heap(items) => items.push(id),
        }
    }
}

#[derive(Debug, Default, Clone)]
struct Node {
    values: Values,
    processed: u32,
    widened: bool,
    queued: bool,
    edges: u32,
    constraints: u32,
}

/// Nodes, edges, constraints' attachment to nodes, and the worklist.
pub(super) struct Engine {
    nodes: Vec<Node>,
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
        self.nodes.push(Node {
            edges: NONE,
            constraints: NONE,
            ..Node::default()
        });
        id
    }

    pub(super) fn nodes(&mut self, count: usize) -> u32 {
        let first = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.nodes.resize(
            self.nodes.len() + count,
            Node {
                edges: NONE,
                constraints: NONE,
                ..Node::default()
            },
        );
        first
    }

    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The objects `node` holds.
    pub(super) fn values(&self, node: u32) -> Vec<Obj> {
        self.nodes.get(node as usize).map_or(Vec::new(), |n| {
            n.values
                .as_slice()
                .iter()
                .filter_map(|id| self.objs.get(*id as usize).copied())
                .collect()
        })
    }

    fn intern(&mut self, value: Obj) -> u32 {
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
        if n.widened || n.values.as_slice().contains(&id) {
            return;
        }
        if n.values.len() >= MAX_VALUES {
            n.widened = true;
            self.widened += 1;
            return;
        }
        n.values.push(id);
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
        for id in n.values.as_slice().iter().take(done) {
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
        n.values.as_slice()[..(n.processed as usize).min(n.values.len())]
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
        let start = n.processed as usize;
        let end = n.values.len();
        n.processed = u32::try_from(end).unwrap_or(u32::MAX);
        self.work += (end - start) as u64;
        Some((node, start, end))
    }

    /// The id of the `index`th object of `node`.
    pub(super) fn id_at(&self, node: u32, index: usize) -> Option<u32> {
        self.nodes
            .get(node as usize)?
            .values
            .as_slice()
            .get(index)
            .copied()
    }

    /// The first edge out of `node` (edges are a linked list; [`NO_LINK`] ends it).
    pub(super) fn first_edge(&self, node: u32) -> u32 {
        self.nodes.get(node as usize).map_or(NONE, |n| n.edges)
    }

    pub(super) fn edge_at(&self, edge: u32) -> Option<(u32, Transform, u32)> {
        self.edges
            .get(edge as usize)
            .map(|e| (e.to, e.transform, e.next))
    }

    pub(super) fn first_link(&self, node: u32) -> u32 {
        self.nodes
            .get(node as usize)
            .map_or(NONE, |n| n.constraints)
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
