//! Personalized PageRank of every module at once (seed 001, appendix F,
//! algorithm 1).
//!
//! Algorithm 1 runs one PageRank per target module `t` with personalization
//! 1.0 everywhere and 2.0 at `t`, and keeps `PR_t(t) * 10`. Done naively that
//! is one power iteration per module: quadratic. With networkx's convention
//! (dangling nodes send their mass along the personalization vector), the
//! fixed point is `x = c · p · M` with `M = (I - αP)⁻¹` and a scalar `c` that
//! makes `x` sum to one. With `p ∝ 1 + e_t` that gives
//!
//! ```text
//! x_t = (g_t + M_tt) / (Σ g + s_t),   g = 1ᵀM,  s = M·1
//! ```
//!
//! `g` and `s` are two global linear solves; `M_tt` is 1 for a module on no
//! import cycle (no walk returns to it), and for the others is computed
//! inside their strongly connected component, since a walk that leaves a
//! component never comes back. The whole repository costs two power
//! iterations plus one small dense inverse per import cycle.

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use petgraph::visit::EdgeRef;

/// Damping factor of algorithm 1.
pub const DAMPING: f64 = 0.85;

/// Convergence threshold of the iterative solves (sum of absolute changes).
const TOLERANCE: f64 = 1e-13;
const MAX_ITERATIONS: usize = 10_000;
/// Components up to this size are inverted densely; larger ones are solved
/// per node by iteration inside the component.
const DENSE_LIMIT: usize = 1_500;

/// Row-stochastic transition structure: for each node, its distinct
/// successors (self-loops dropped), each with probability 1/out-degree.
struct Transitions {
    successors: Vec<Vec<usize>>,
}

impl Transitions {
    fn new<N, E>(graph: &DiGraph<N, E>) -> Self {
        let successors = graph
            .node_indices()
            .map(|n| {
                let mut out: Vec<usize> = graph
                    .edges(n)
                    .map(|e| e.target().index())
                    .filter(|t| *t != n.index())
                    .collect();
                out.sort_unstable();
                out.dedup();
                out
            })
            .collect();
        Transitions { successors }
    }

    fn len(&self) -> usize {
        self.successors.len()
    }
}

/// `PR_t(t) * 10` for every node `t`, as algorithm 1 defines it.
pub fn dependency_scores<N, E>(graph: &DiGraph<N, E>) -> Vec<f64> {
    let t = Transitions::new(graph);
    let n = t.len();
    if n == 0 {
        return Vec::new();
    }
    // g = 1ᵀ M: solve g = 1 + α gP (row vector).
    let g = iterate(n, |x, next| {
        next.iter_mut().for_each(|v| *v = 1.0);
        for (i, succ) in t.successors.iter().enumerate() {
            if succ.is_empty() {
                continue;
            }
            let share = DAMPING * x[i] / succ.len() as f64;
            for &j in succ {
                next[j] += share;
            }
        }
    });
    // s = M 1: solve s = 1 + α P s (column vector).
    let s = iterate(n, |x, next| {
        for (i, succ) in t.successors.iter().enumerate() {
            let mean = if succ.is_empty() {
                0.0
            } else {
                succ.iter().map(|&j| x[j]).sum::<f64>() / succ.len() as f64
            };
            next[i] = 1.0 + DAMPING * mean;
        }
    });
    let diagonal = self_returns(&t, graph);
    let total_g: f64 = g.iter().sum();
    (0..n)
        .map(|i| 10.0 * (g[i] + diagonal[i]) / (total_g + s[i]))
        .collect()
}

/// Runs `step` (next = f(x)) from x = 1 until it converges.
fn iterate(n: usize, step: impl Fn(&[f64], &mut [f64])) -> Vec<f64> {
    let mut x = vec![1.0; n];
    let mut next = vec![0.0; n];
    for _ in 0..MAX_ITERATIONS {
        step(&x, &mut next);
        let change: f64 = x.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
        std::mem::swap(&mut x, &mut next);
        if change < TOLERANCE * n as f64 {
            break;
        }
    }
    x
}

/// `M_tt` for every node: 1 off cycles, else from the node's component.
fn self_returns<N, E>(t: &Transitions, graph: &DiGraph<N, E>) -> Vec<f64> {
    let mut diagonal = vec![1.0; t.len()];
    for component in tarjan_scc(graph) {
        if component.len() < 2 {
            continue;
        }
        let members: Vec<usize> = component.iter().map(|n| n.index()).collect();
        let values = if members.len() <= DENSE_LIMIT {
            dense_diagonal(t, &members)
        } else {
            iterative_diagonal(t, &members)
        };
        for (member, value) in members.iter().zip(values) {
            diagonal[*member] = value;
        }
    }
    diagonal
}

/// Local index of each member, for restricting P to a component.
fn local_index(t: &Transitions, members: &[usize]) -> Vec<Option<usize>> {
    let mut local = vec![None; t.len()];
    for (k, &m) in members.iter().enumerate() {
        local[m] = Some(k);
    }
    local
}

/// Diagonal of `(I - αP_S)⁻¹` by Gauss-Jordan elimination. The matrix is
/// strictly diagonally dominant by rows (α < 1 and each row of `P_S` sums to
/// at most 1), so elimination without pivoting is stable.
fn dense_diagonal(t: &Transitions, members: &[usize]) -> Vec<f64> {
    let s = members.len();
    let local = local_index(t, members);
    let mut a = vec![0.0; s * s];
    let mut inv = vec![0.0; s * s];
    for (row, &m) in members.iter().enumerate() {
        a[row * s + row] = 1.0;
        inv[row * s + row] = 1.0;
        let succ = &t.successors[m];
        for &j in succ {
            if let Some(col) = local[j] {
                a[row * s + col] -= DAMPING / succ.len() as f64;
            }
        }
    }
    for pivot in 0..s {
        let p = a[pivot * s + pivot];
        for col in 0..s {
            a[pivot * s + col] /= p;
            inv[pivot * s + col] /= p;
        }
        for row in 0..s {
            if row == pivot {
                continue;
            }
            let factor = a[row * s + pivot];
            if factor == 0.0 {
                continue;
            }
            for col in 0..s {
                a[row * s + col] -= factor * a[pivot * s + col];
                inv[row * s + col] -= factor * inv[pivot * s + col];
            }
        }
    }
    (0..s).map(|k| inv[k * s + k]).collect()
}

/// Diagonal for very large components: per member, iterate y = e_t + α yP_S.
/// The members' solves are independent, so they run on rayon's pool (the
/// result is the same on any number of threads): this is the one step of
/// ranking that grows faster than the graph (members × iterations × edges;
/// java.base's import cycle made it 3x its whole analysis).
fn iterative_diagonal(t: &Transitions, members: &[usize]) -> Vec<f64> {
    use rayon::prelude::*;
    let local = local_index(t, members);
    let s = members.len();
    (0..s)
        .into_par_iter()
        .map(|target| {
            let y = iterate(s, |x, next| {
                next.iter_mut().for_each(|v| *v = 0.0);
                next[target] = 1.0;
                for (k, &m) in members.iter().enumerate() {
                    let succ = &t.successors[m];
                    if succ.is_empty() || x[k] == 0.0 {
                        continue;
                    }
                    let share = DAMPING * x[k] / succ.len() as f64;
                    for &j in succ {
                        if let Some(col) = local[j] {
                            next[col] += share;
                        }
                    }
                }
            });
            y[target]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use petgraph::graph::NodeIndex;
    use proptest::prelude::*;

    /// Algorithm 1 as written: one full personalized PageRank per module
    /// (networkx semantics: dangling mass follows the personalization).
    fn naive(graph: &DiGraph<(), ()>) -> Vec<f64> {
        let t = Transitions::new(graph);
        let n = t.len();
        (0..n)
            .map(|target| {
                let mut p = vec![1.0; n];
                p[target] = 2.0;
                let total: f64 = p.iter().sum();
                p.iter_mut().for_each(|v| *v /= total);
                let mut x = vec![1.0 / n as f64; n];
                for _ in 0..100_000 {
                    let dangling: f64 = (0..n)
                        .filter(|&i| t.successors[i].is_empty())
                        .map(|i| x[i])
                        .sum();
                    let mut next: Vec<f64> = p
                        .iter()
                        .map(|pi| (1.0 - DAMPING) * pi + DAMPING * dangling * pi)
                        .collect();
                    for (i, succ) in t.successors.iter().enumerate() {
                        for &j in succ {
                            next[j] += DAMPING * x[i] / succ.len() as f64;
                        }
                    }
                    let change: f64 = x.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
                    x = next;
                    if change < 1e-15 {
                        break;
                    }
                }
                x[target] * 10.0
            })
            .collect()
    }

    fn graph(n: usize, edges: &[(usize, usize)]) -> DiGraph<(), ()> {
        let mut g = DiGraph::new();
        let nodes: Vec<NodeIndex> = (0..n).map(|_| g.add_node(())).collect();
        for &(a, b) in edges {
            g.add_edge(nodes[a], nodes[b], ());
        }
        g
    }

    fn assert_close(fast: &[f64], slow: &[f64]) {
        for (i, (a, b)) in fast.iter().zip(slow).enumerate() {
            assert!((a - b).abs() < 1e-6, "node {i}: fast {a} naive {b}");
        }
    }

    #[test]
    fn hand_made_graphs() {
        assert_close(&dependency_scores(&graph(1, &[])), &naive(&graph(1, &[])));
        let cases: Vec<(usize, Vec<(usize, usize)>)> = vec![
            (3, vec![(0, 1), (1, 2)]),
            (3, vec![(0, 1), (1, 2), (2, 0)]),
            (4, vec![(0, 1), (1, 0), (2, 1), (3, 1), (1, 1)]),
            (5, vec![(0, 4), (1, 4), (2, 4), (3, 4)]),
        ];
        for (n, edges) in cases {
            let g = graph(n, &edges);
            assert_close(&dependency_scores(&g), &naive(&g));
        }
    }

    #[test]
    fn iterative_and_dense_diagonals_agree() {
        let g = graph(4, &[(0, 1), (1, 2), (2, 0), (2, 3), (3, 1)]);
        let t = Transitions::new(&g);
        let members = [0, 1, 2, 3];
        let dense = dense_diagonal(&t, &members);
        let iterative = iterative_diagonal(&t, &members);
        assert_close(&dense, &iterative);
        assert!(dense.iter().all(|d| *d > 1.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn matches_naive_per_module_pagerank(
            n in 1usize..14,
            raw in proptest::collection::vec((0usize..14, 0usize..14), 0..40),
        ) {
            let edges: Vec<(usize, usize)> = raw.into_iter().map(|(a, b)| (a % n, b % n)).collect();
            let g = graph(n, &edges);
            let fast = dependency_scores(&g);
            let slow = naive(&g);
            for (a, b) in fast.iter().zip(&slow) {
                prop_assert!((a - b).abs() < 1e-6, "fast {} naive {} edges {:?}", a, b, edges);
            }
        }
    }
}
