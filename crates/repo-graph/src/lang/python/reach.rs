//! Which bindings of its own scope each read of a name can see.
//!
//! Flow sensitivity where it is cheap: within one scope, a read sees the
//! last binding before it that certainly ran (one in a block enclosing the
//! read), plus the bindings between them that may have run (in branches),
//! plus, inside a loop, the bindings later in the same loop (the loop's back
//! edge). So `s = s.replace(...)` reads the previous `s`, and `x = a; if c:
//! x = b; x()` reads both. The scan from each read is capped at
//! [`MAX_SCAN`] bindings; past that the read sees every binding of the name
//! in its scope ([`Reach::AllLocal`]), which the points-to analysis handles
//! in constant extra work. The pass is linear in the number of reads times
//! the cap, plus a sort of each name's bindings.

use rustc_hash::FxHashMap;

use super::extract::Block;
use super::facts::{PythonFacts, Reach, ScopeRef};

/// Bindings examined for one read before falling back to all of them.
pub(super) const MAX_SCAN: usize = 32;

/// Fills [`super::facts::Use::reach`] for every use of `facts`. `use_at` and
/// `binding_at` give the byte position and block of each use and binding.
pub(super) fn compute(
    facts: &mut PythonFacts,
    use_at: &[(u32, u32)],
    binding_at: &[(u32, u32)],
    blocks: &[Block],
) {
    let mut by_name: FxHashMap<(ScopeRef, u32), Vec<u32>> = FxHashMap::default();
    for (index, binding) in facts.bindings.iter().enumerate() {
        if facts.name(binding.name).is_empty() {
            continue;
        }
        by_name
            .entry((binding.scope, binding.name))
            .or_default()
            .push(u32::try_from(index).unwrap_or(u32::MAX));
    }
    let at = |b: u32| binding_at.get(b as usize).copied().unwrap_or((0, 0));
    for list in by_name.values_mut() {
        // Stable: equal positions keep source order.
        list.sort_by_key(|b| at(*b).0);
    }
    let mut reaches: Vec<Reach> = Vec::with_capacity(facts.uses.len());
    for (index, read) in facts.uses.iter().enumerate() {
        let Some(list) = by_name.get(&(read.scope, read.name)) else {
            reaches.push(Reach::Enclosing);
            continue;
        };
        let (pos, block) = use_at.get(index).copied().unwrap_or((0, 0));
        reaches.push(match reaching(list, at, pos, block, blocks) {
            None => Reach::AllLocal,
            Some(mut seen) => match seen.as_slice() {
                [] => Reach::AllLocal,
                [one] => Reach::One(*one),
                _ => {
                    seen.sort_unstable();
                    Reach::Local(seen)
                }
            },
        });
    }
    for (read, reach) in facts.uses.iter_mut().zip(reaches) {
        read.reach = reach;
    }
}

/// The definitions of `list` (sorted by position; `at` gives each one's
/// byte position and block) that can reach a read at `pos` in `block`: the
/// last one before it in a block enclosing the read, the ones between that
/// may have run, and inside a loop the later ones in the same loop. `None`
/// when more than [`MAX_SCAN`] would have to be examined.
pub(super) fn reaching(
    list: &[u32],
    at: impl Fn(u32) -> (u32, u32),
    pos: u32,
    block: u32,
    blocks: &[Block],
) -> Option<Vec<u32>> {
    let encloses = |outer: u32, inner: u32| {
        outer <= inner && blocks.get(outer as usize).is_some_and(|b| inner < b.end)
    };
    // Definitions strictly before the read, in source order.
    let before = list.partition_point(|d| at(*d).0 < pos);
    let mut seen = Vec::new();
    for &d in list[..before].iter().rev() {
        if seen.len() >= MAX_SCAN {
            return None;
        }
        seen.push(d);
        if encloses(at(d).1, block) {
            break;
        }
    }
    // The loop's back edge: later definitions inside the outermost loop
    // around the read.
    if let Some(outer) = blocks.get(block as usize).and_then(|b| b.outer_loop) {
        for &d in &list[before..] {
            if !encloses(outer, at(d).1) {
                break;
            }
            if seen.len() >= MAX_SCAN {
                return None;
            }
            seen.push(d);
        }
    }
    Some(seen)
}
