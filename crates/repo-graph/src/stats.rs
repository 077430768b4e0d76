//! The summary counts of an analysis ([`Stats`]) and what cross-file
//! resolution cost ([`ResolutionStats`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::graph::RepoGraph;
use crate::model::{Budget, SkipReason};

/// Counts that summarise an analysis (`repo-agent analyze --format stats`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stats {
    /// Regular files met by the walk, analysed or not.
    pub files_seen: u64,
    /// Source files read and analysed (parsed now or taken from the cache).
    pub files_parsed: u64,
    /// Modules in the graph (equal to `files_parsed`).
    pub modules: u64,
    /// Classes defined.
    pub classes: u64,
    /// Functions and methods defined.
    pub functions: u64,
    /// Distinct caller → callee edges of the FCG.
    pub call_edges: u64,
    /// Call sites that do not resolve to an internal definition.
    pub unresolved_calls: u64,
    /// Edges of the MDG (module pairs with imports or calls between them).
    pub import_edges: u64,
    /// Files in which the parser found syntax errors.
    pub parse_errors: u64,
    /// Files that were not valid UTF-8 and were decoded lossily.
    pub invalid_utf8: u64,
    /// Files and pruned directories passed over, by reason.
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Web routes found ([`RepoGraph::routes`]).
    #[serde(default)]
    pub routes: u64,
    /// Wall time of the analysis in milliseconds.
    pub elapsed_ms: u64,
    /// Work units spent resolving names, calls and types across files
    /// (Python and Java together): a machine-independent cost that grows
    /// linearly with the program's size.
    #[serde(default)]
    pub resolve_work: u64,
    /// Values that grew past the per-node cap and were widened to "unknown".
    #[serde(default)]
    pub widened: u64,
    /// Python call sites left unresolved because the per-run step budget
    /// ([`Analyzer::step_budget`](crate::Analyzer::step_budget)) ran out.
    #[serde(default)]
    pub budget_exhausted: u64,
    /// Files analysed in part, by the budget they went over
    /// ([`RepoGraph::partial`]).
    #[serde(default)]
    pub partial: BTreeMap<Budget, u64>,
    /// Fact units the analysed files hold (name reads, bindings, call
    /// sites, value expression nodes, definitions...): a
    /// machine-independent measure of the per-file phase's output, capped
    /// per file at [`MAX_FILE_FACTS`](crate::MAX_FILE_FACTS).
    #[serde(default)]
    pub fact_units: u64,
    /// What the per-file phase was estimated to hold, in bytes (see
    /// [`Analyzer::memory_ceiling`](crate::Analyzer::memory_ceiling)).
    #[serde(default)]
    pub memory_estimate_bytes: u64,
    /// The memory ceiling the analysis ran under, in bytes.
    #[serde(default)]
    pub memory_ceiling_bytes: u64,
    /// Where the wall time went, step by step.
    #[serde(default)]
    pub phases: Phases,
}

/// Where an analysis's wall time went, in milliseconds ([`Stats::phases`]):
/// the steps a speed change is measured by. Their sum is a little under
/// [`Stats::elapsed_ms`] (the cache bookkeeping between them is left out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Phases {
    /// Walking the tree, with the on-disk cache loading beside it.
    pub walk_ms: u64,
    /// Reading, parsing and extracting every file (or finding its facts in
    /// the cache), in parallel.
    pub files_ms: u64,
    /// Assigning ids and every language's cross-file resolution.
    pub resolve_ms: u64,
    /// Entities, call and dependency graphs, routes and usage facts.
    pub assemble_ms: u64,
}

/// The cost of cross-file resolution, kept on the graph for [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResolutionStats {
    /// Work units (see [`Stats::resolve_work`]).
    pub work: u64,
    /// See [`Stats::widened`].
    pub widened: u64,
    /// See [`Stats::budget_exhausted`].
    pub budget_exhausted: u64,
}

impl RepoGraph {
    /// Summary counts of the analysis.
    pub fn stats(&self) -> Stats {
        let mut skipped = BTreeMap::new();
        for s in &self.skipped {
            *skipped.entry(s.reason).or_insert(0) += 1;
        }
        let mut partial = BTreeMap::new();
        for p in &self.partial {
            *partial.entry(p.budget).or_insert(0) += 1;
        }
        let count = |n: usize| n as u64;
        Stats {
            files_seen: self.files_seen,
            files_parsed: count(self.modules.len()),
            modules: count(self.modules.len()),
            classes: count(self.classes.len()),
            functions: count(self.functions.len()),
            call_edges: count(self.fcg.edge_count()),
            unresolved_calls: count(self.unresolved.len()),
            import_edges: count(self.mdg.edge_count()),
            parse_errors: count(self.modules.iter().filter(|m| m.has_syntax_errors).count()),
            invalid_utf8: count(self.modules.iter().filter(|m| m.lossy_utf8).count()),
            skipped,
            routes: count(self.routes.len()),
            elapsed_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            resolve_work: self.resolution.work,
            widened: self.resolution.widened,
            budget_exhausted: self.resolution.budget_exhausted,
            partial,
            fact_units: self.memory.fact_units,
            memory_estimate_bytes: self.memory.estimate,
            memory_ceiling_bytes: self.memory.ceiling,
            phases: self.phases,
        }
    }
}
