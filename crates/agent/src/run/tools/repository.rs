//! The whole-repository views ([`super::ToolGroup::Repository`]): the
//! initial context, the importance ranking, the web routes and the usage
//! facts. The agent has these in its prompt; the MCP server offers them to
//! agents that start from nothing.

use std::fmt::Write as _;

use context_pack::ContextBuilder;

use super::args::{OverviewArgs, RankArgs, RoutesArgs, UsageArgs};
use super::{Fail, ToolResult, Tools};

/// The overview's budget when the call names none, in tokens: what `run`
/// gives the agent's own initial context.
const DEFAULT_OVERVIEW_BUDGET: u64 = 8_000;

/// The usage view's budget when the call names none.
const DEFAULT_USAGE_BUDGET: u64 = 4_000;

/// Most routes listed per repository: a large Django project declares
/// thousands, and the filter narrows them.
const MAX_ROUTES: usize = 400;

impl Tools {
    /// One section per repository when there are several, headed by the
    /// repository's directory, so an answer never mixes them silently.
    fn per_repository(
        &self,
        mut section: impl FnMut(usize, &mut String) -> Result<(), Fail>,
    ) -> ToolResult {
        let mut out = String::new();
        for i in 0..self.graphs.len() {
            if self.graphs.len() > 1 {
                let _ = writeln!(out, "## {}\n", self.graphs[i].root().display());
            }
            section(i, &mut out)?;
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        Ok(out)
    }

    /// Each repository's share of the call's token budget (`default`
    /// when it names none; clamped to the schema's bounds, `min` to
    /// 64,000, as out-of-range values are clamped rather than refused).
    fn budget_share(&self, budget: Option<u64>, default: u64, min: u64) -> usize {
        let budget = budget.unwrap_or(default).clamp(min, 64_000) as usize;
        budget / self.graphs.len().max(1)
    }

    pub(super) fn overview(&self, args: &OverviewArgs) -> ToolResult {
        let share = self.budget_share(args.budget, DEFAULT_OVERVIEW_BUDGET, 500);
        self.per_repository(|i, out| {
            let (Some(graph), Some(ranking), Some(index)) = (
                self.graphs.get(i),
                self.ranking(i),
                self.task_indexes.get(i),
            ) else {
                return Ok(());
            };
            let index = index.get_or_init(|| context_pack::TaskIndex::new(graph));
            let mut builder = ContextBuilder::new(graph, ranking)
                .task_index(index)
                .budget(share)
                .encoding(self.counter.encoding());
            if let Some(task) = args.task.as_deref().filter(|t| !t.trim().is_empty()) {
                builder = builder.task(task);
            }
            if let Some(keywords) = &args.keywords {
                builder = builder.keywords(keywords.iter().map(|k| k.trim().to_owned()));
            }
            out.push_str(&builder.build()?.render_markdown());
            Ok(())
        })
    }

    pub(super) fn rank(&self, args: &RankArgs) -> ToolResult {
        let top = args.top.unwrap_or(20).clamp(1, 200) as usize;
        let classes = args.classes.unwrap_or(10).min(200) as usize;
        self.per_repository(|i, out| {
            if let Some(ranking) = self.ranking(i) {
                out.push_str(&ranking.table(top, classes));
            }
            Ok(())
        })
    }

    pub(super) fn routes(&self, args: &RoutesArgs) -> ToolResult {
        let filter = args
            .filter
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_lowercase);
        let mut found = 0usize;
        let text = self.per_repository(|i, out| {
            let graph = &self.graphs[i];
            let matching = graph.routes().iter().filter(|route| {
                filter.as_deref().is_none_or(|f| {
                    route.method.as_str().to_lowercase().contains(f)
                        || route.path.to_lowercase().contains(f)
                        || route.handler.to_lowercase().contains(f)
                })
            });
            let mut listed = 0usize;
            let mut unlisted = 0usize;
            for route in matching {
                if listed == MAX_ROUTES {
                    unlisted += 1;
                    continue;
                }
                listed += 1;
                let _ = writeln!(
                    out,
                    "{:<7} {}  ->  {}  ({}:{}, {:?})",
                    route.method.as_str(),
                    context_pack::markdown::one_line(&route.path),
                    context_pack::markdown::one_line(&route.handler),
                    route.file,
                    route.line,
                    route.framework
                );
            }
            if unlisted > 0 {
                let _ = writeln!(out, "... and {unlisted} more: narrow them with `filter`");
            }
            found += listed + unlisted;
            Ok(())
        })?;
        if found == 0 {
            return Ok(match filter {
                Some(f) => format!("No route matches `{f}`."),
                None => "No web routes found (Flask, FastAPI and Django declarations are read)."
                    .to_owned(),
            });
        }
        Ok(text)
    }

    pub(super) fn usage(&self, args: &UsageArgs) -> ToolResult {
        let share = self.budget_share(args.budget, DEFAULT_USAGE_BUDGET, 200);
        let text = self.per_repository(|i, out| {
            let view = context_pack::usage_view(
                &self.graphs[i],
                args.task.as_deref(),
                &self.counter,
                share,
            );
            out.push_str(&view);
            Ok(())
        })?;
        if text.trim().is_empty() {
            return Ok(
                "No usage facts found: no console scripts, command-line parsers, public API \
                 or example scripts. Try `overview` or `search_code`."
                    .to_owned(),
            );
        }
        Ok(text)
    }
}
