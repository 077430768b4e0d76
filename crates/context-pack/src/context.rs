//! The initial repository context: four blocks within a hard token budget
//! (seed 001, section 3.2.3; appendix D shows an example).
//!
//! Allocation, in order, each block getting a fixed share of the budget plus
//! whatever the blocks before it left unused:
//!
//! | block | share |
//! | --- | --- |
//! | (a) README, its most useful sections first | 20 % |
//! | where to look: the task's best matching functions and classes (with a task or keywords) | 20 % |
//! | how to use it: command-line entry points, the public API, example scripts | 15 % |
//! | (b) summary table of the top modules | 10 % |
//! | (c) source or skeletons of the core classes | 25 % |
//! | files not read: links out of the tree, pipes, files too large (only when there are any) | 3 % |
//! | (d) paths of the other top-ranked modules | the rest (7 % plus leftovers) |
//!
//! Without a task the "where to look" block is empty and its share passes
//! on; so does the "files not read" block's when nothing was refused.
//!
//! A block is filled with whole units (README sections, table rows,
//! classes, directory lines) while they fit; a unit that does not fit is
//! shrunk (a class to its skeleton) or dropped, and a marker says what was
//! left out. The rendered Markdown never exceeds the budget: it is counted
//! whole at the end and the last block is trimmed if joining changed the count.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use importance::Ranking;
use repo_graph::{ClassId, EntityId, ModuleId, RepoGraph};
use serde::{Deserialize, Serialize};

use crate::hits;
use crate::markdown;
use crate::summary::{StaticSummarizer, Summarizer};
use crate::{Encoding, TokenCounter};

/// Which of the four blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// (a) The README.
    Readme,
    /// The functions and classes that best match the task, by declaration.
    TaskHits,
    /// How the repository is used: command-line entry points, the public
    /// API with signatures, example scripts (repo-graph's usage facts).
    Usage,
    /// (b) One-line summaries of the top modules.
    ModuleSummaries,
    /// (c) Source or skeletons of the core classes.
    CoreComponents,
    /// The repository's files that were not read because of what they
    /// are (a symbolic link out of the tree, a pipe, a file too large), and
    /// why.
    Unread,
    /// (d) Paths of the other top-ranked modules, by directory.
    ModulePaths,
}

impl BlockKind {
    fn share_percent(self) -> usize {
        match self {
            BlockKind::Readme => 20,
            BlockKind::Usage => 15,
            BlockKind::TaskHits => 20,
            BlockKind::ModuleSummaries => 10,
            BlockKind::CoreComponents => 25,
            BlockKind::Unread => 3,
            BlockKind::ModulePaths => 10,
        }
    }
}

/// One rendered block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Which block.
    pub kind: BlockKind,
    /// Its size in tokens.
    pub tokens: usize,
    /// Its Markdown.
    pub text: String,
}

/// The initial context: blocks in order, within the budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoContext {
    /// The non-empty blocks, in order.
    pub blocks: Vec<Block>,
    /// Tokens of [`RepoContext::render_markdown`].
    pub total_tokens: usize,
    /// The budget it was built for.
    pub budget: usize,
}

impl RepoContext {
    /// The blocks joined into one Markdown document.
    pub fn render_markdown(&self) -> String {
        join_blocks(&self.blocks)
    }
}

fn join_blocks(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| b.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Builds a [`RepoContext`]. Defaults: 8,000-token budget, o200k_base
/// tokens, 20 summarised modules, 10 core classes, the static summarizer,
/// no task.
pub struct ContextBuilder<'g> {
    graph: &'g RepoGraph,
    ranking: &'g Ranking,
    budget: usize,
    task: Option<String>,
    keywords: Vec<String>,
    top_modules: usize,
    core_classes: usize,
    encoding: Encoding,
    summarizer: &'g dyn Summarizer,
    task_index: Option<&'g crate::TaskIndex>,
}

impl<'g> ContextBuilder<'g> {
    /// A builder over an analysed and ranked repository.
    pub fn new(graph: &'g RepoGraph, ranking: &'g Ranking) -> Self {
        ContextBuilder {
            graph,
            ranking,
            budget: 8_000,
            task: None,
            keywords: Vec::new(),
            top_modules: 20,
            core_classes: 10,
            encoding: Encoding::default(),
            summarizer: &StaticSummarizer,
            task_index: None,
        }
    }

    /// The hard limit on the rendered context, in tokens.
    pub fn budget(mut self, tokens: usize) -> Self {
        self.budget = tokens;
        self
    }

    /// Bias the selection toward entities relevant to this task (BM25 over
    /// names, docstrings and identifiers).
    pub fn task(mut self, task: impl Into<String>) -> Self {
        let task = task.into();
        self.task = (!task.trim().is_empty()).then_some(task);
        self
    }

    /// Extra search terms for the task: English words and likely
    /// identifiers, for a task whose own words match nothing (another
    /// language) or too little.
    pub fn keywords<S: Into<String>>(mut self, keywords: impl IntoIterator<Item = S>) -> Self {
        self.keywords = keywords
            .into_iter()
            .map(Into::into)
            .filter(|k: &String| !k.trim().is_empty())
            .collect();
        self
    }

    /// How many modules the summary table lists.
    pub fn top_modules(mut self, n: usize) -> Self {
        self.top_modules = n;
        self
    }

    /// How many core classes are shown.
    pub fn core_classes(mut self, k: usize) -> Self {
        self.core_classes = k;
        self
    }

    /// The tokenizer the budget is counted in.
    pub fn encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// Scores the task against this prebuilt index of the graph's classes
    /// and functions instead of indexing them again (most of a build's
    /// time on a large repository). It must be the index of this graph:
    /// one whose entity count differs is ignored.
    pub fn task_index(mut self, index: &'g crate::TaskIndex) -> Self {
        self.task_index = Some(index);
        self
    }

    /// Who writes the module summaries.
    pub fn summarizer(mut self, summarizer: &'g dyn Summarizer) -> Self {
        self.summarizer = summarizer;
        self
    }

    /// Renders the four blocks within the budget.
    pub fn build(&self) -> Result<RepoContext, crate::Error> {
        let counter =
            TokenCounter::new(self.encoding).map_err(|_| crate::Error::Tokenizer(self.encoding))?;
        let query = hits::query_terms(self.task.as_deref(), &self.keywords);
        let readme = crate::readme::find_readme(self.graph.root());
        let identifiers = self
            .task
            .as_deref()
            .map(hits::task_identifiers)
            .unwrap_or_default();
        let search = hits::search(
            self.graph,
            self.ranking,
            &query,
            &identifiers,
            readme.shown.as_ref().map(|(_, text)| text.as_str()),
            self.task_index,
        );
        let noted: Vec<String> = readme
            .refused
            .iter()
            .map(|(name, _)| name.clone())
            .collect();
        let (modules, classes) = self.order(&search);
        let mut blocks = Vec::new();
        let mut carry = 0usize;
        // Separators between blocks ("\n\n") are paid for up front.
        let kinds = [
            BlockKind::Readme,
            BlockKind::TaskHits,
            BlockKind::Usage,
            BlockKind::ModuleSummaries,
            BlockKind::CoreComponents,
            BlockKind::Unread,
            BlockKind::ModulePaths,
        ];
        let usable = self.budget.saturating_sub((kinds.len() - 1) * 2);
        let mut used_so_far = 0usize;
        for (i, kind) in kinds.into_iter().enumerate() {
            let share = if i == kinds.len() - 1 {
                usable.saturating_sub(used_so_far)
            } else {
                usable * kind.share_percent() / 100 + carry
            };
            let text = match kind {
                BlockKind::Readme => self.readme(&readme, &counter, share),
                BlockKind::Usage => crate::usage::usage_block(
                    self.graph,
                    self.query_text().as_deref(),
                    &counter,
                    share,
                ),
                BlockKind::TaskHits => {
                    hits::hits_block(self.graph, &search.hits, &identifiers, &counter, share)
                }
                BlockKind::ModuleSummaries => self.summaries(&counter, share, &modules)?,
                BlockKind::CoreComponents => self.core(&counter, share, &classes),
                BlockKind::Unread => {
                    crate::unread::unread_block(self.graph, &noted, &counter, share)
                }
                BlockKind::ModulePaths => self.paths(&counter, share, &modules),
            };
            let tokens = if text.is_empty() {
                0
            } else {
                counter.count(&text)
            };
            carry = share.saturating_sub(tokens);
            used_so_far += tokens;
            if !text.is_empty() {
                blocks.push(Block { kind, tokens, text });
            }
        }
        // Joining can merge tokens across block boundaries; trim to be exact.
        let mut total = counter.count(&join_blocks(&blocks));
        while total > self.budget {
            let Some(last) = blocks.last_mut() else { break };
            let over = total - self.budget;
            let keep = last.tokens.saturating_sub(over + 1);
            if keep == 0 {
                blocks.pop();
            } else {
                last.text =
                    markdown::close_fence(counter.truncate(&last.text, keep.saturating_sub(2)))
                        .into_owned();
                last.tokens = counter.count(&last.text);
            }
            total = counter.count(&join_blocks(&blocks));
        }
        Ok(RepoContext {
            blocks,
            total_tokens: total,
            budget: self.budget,
        })
    }

    /// Modules and classes in the order the context presents them: by
    /// importance, boosted by task relevance when a task is given
    /// (`score + 5 × relevance`, relevance normalised to [0, 1]).
    fn order(&self, search: &hits::Search) -> (Vec<ModuleId>, Vec<ClassId>) {
        let graph = self.graph;
        let mut modules: Vec<(ModuleId, f64)> = self
            .ranking
            .modules
            .iter()
            .map(|m| (m.id, m.score))
            .collect();
        let mut classes: Vec<(ClassId, f64)> = self
            .ranking
            .classes
            .iter()
            .map(|c| (c.id, c.score))
            .collect();
        if let Some(task) = self.query_text()
            && !search.classes.is_empty()
        {
            // A module matches by its own name, path and docstring, or by
            // its best matching class or function (from the one index the
            // search built).
            let module_docs: Vec<String> = graph
                .modules()
                .iter()
                .map(|m| {
                    format!(
                        "{} {} {}",
                        m.name,
                        m.path,
                        m.docstring.as_deref().unwrap_or("")
                    )
                })
                .collect();
            let mut module_relevance = normalised(hits::stemmed_scores(&module_docs, &task));
            let mut raise = |module: ModuleId, relevance: f64| {
                if let Some(slot) = module_relevance.get_mut(module.index()) {
                    *slot = slot.max(relevance);
                }
            };
            for (class, relevance) in graph.classes().iter().zip(&search.classes) {
                raise(class.module, *relevance);
            }
            for (function, relevance) in graph.functions().iter().zip(&search.functions) {
                raise(function.module, *relevance);
            }
            for (id, score) in &mut modules {
                *score += 5.0 * module_relevance.get(id.index()).copied().unwrap_or(0.0);
            }
            for (id, score) in &mut classes {
                *score += 5.0 * search.classes.get(id.index()).copied().unwrap_or(0.0);
            }
        }
        let name_of_module = |id: ModuleId| graph.module(id).map_or("", |m| m.name.as_str());
        let name_of_class = |id: ClassId| graph.class(id).map_or("", |c| c.qualname.as_str());
        modules.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| name_of_module(a.0).cmp(name_of_module(b.0)))
        });
        classes.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| name_of_class(a.0).cmp(name_of_class(b.0)))
        });
        (
            modules.into_iter().map(|(id, _)| id).collect(),
            classes.into_iter().map(|(id, _)| id).collect(),
        )
    }

    /// The task and the keywords, as one text to search with.
    fn query_text(&self) -> Option<String> {
        let mut parts: Vec<&str> = self.task.iter().map(String::as_str).collect();
        parts.extend(self.keywords.iter().map(String::as_str));
        (!parts.is_empty()).then(|| parts.join(" "))
    }

    /// (a) The README, cleaned of badges, image tags and link farms; whole
    /// when it fits, else its most useful sections (`readme/`).
    fn readme(
        &self,
        readme: &crate::readme::Readme,
        counter: &TokenCounter,
        share: usize,
    ) -> String {
        crate::readme::readme_block(readme, self.task.as_deref(), counter, share)
    }

    /// (b) The summary table of the top modules.
    fn summaries(
        &self,
        counter: &TokenCounter,
        share: usize,
        modules: &[ModuleId],
    ) -> Result<String, crate::Error> {
        let mut text = String::from(
            "## Top modules\n\n| module | path | importance | summary |\n| --- | --- | --- | --- |\n",
        );
        if counter.count(&text) > share {
            return Ok(String::new());
        }
        let mut rows = 0;
        for &id in modules.iter().take(self.top_modules) {
            let (Some(m), Some(score)) = (self.graph.module(id), self.ranking.module(id)) else {
                continue;
            };
            let summary = self.summarizer.summarize(self.graph, id)?;
            let row = format!(
                "| {} | {} | {:.2} | {} |\n",
                markdown::cell_code(&m.name),
                markdown::cell_code(&m.path),
                score.score,
                escape_cell(&summary)
            );
            let candidate = format!("{text}{row}");
            if counter.count(&candidate) > share {
                break;
            }
            text = candidate;
            rows += 1;
        }
        Ok(if rows == 0 {
            String::new()
        } else {
            text.trim_end().to_string()
        })
    }

    /// (c) Core classes: full source when it fits, else a skeleton.
    fn core(&self, counter: &TokenCounter, share: usize, classes: &[ClassId]) -> String {
        let graph = self.graph;
        let mut text = String::from("## Core components\n");
        let mut shown = 0;
        for &id in classes.iter().take(self.core_classes) {
            let Some(class) = graph.class(id) else {
                continue;
            };
            let path = graph.module(class.module).map_or("", |m| m.path.as_str());
            let header = format!(
                "\n### {} ({}, lines {}-{})\n\n",
                markdown::code_span(&class.qualname),
                markdown::one_line(path),
                class.span.start_line,
                class.span.end_line
            );
            let full = graph.source(EntityId::Class(id)).unwrap_or("");
            let remaining = share.saturating_sub(counter.count(&text));
            let fence = graph.language_of(EntityId::Class(id)).fence();
            let fenced_full = format!("{header}```{fence}\n{full}\n```\n");
            if counter.count(&fenced_full) <= remaining {
                text.push_str(&fenced_full);
                shown += 1;
                continue;
            }
            let skeleton = format!("{header}```{fence}\n{}\n```\n", graph.class_skeleton(id));
            if counter.count(&skeleton) <= remaining {
                text.push_str(&skeleton);
                shown += 1;
            }
        }
        if shown == 0 {
            String::new()
        } else {
            text.trim_end().to_string()
        }
    }

    /// (d) The other top-ranked modules' paths, grouped by directory.
    fn paths(&self, counter: &TokenCounter, share: usize, modules: &[ModuleId]) -> String {
        let graph = self.graph;
        let listed: Vec<ModuleId> = modules.iter().skip(self.top_modules).copied().collect();
        if listed.is_empty() {
            return String::new();
        }
        let mut text = String::from("## Other important modules\n\n");
        let mut by_dir: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut included = 0;
        // Add modules in rank order while the grouped rendering still fits.
        for id in listed {
            let Some(m) = graph.module(id) else { continue };
            let (dir, file) = m.path.rsplit_once('/').unwrap_or(("", m.path.as_str()));
            by_dir.entry(dir).or_default().push(file);
            let rendered = render_dirs(&by_dir);
            if counter.count(&format!("{text}{rendered}")) + 24 > share {
                if let Some(files) = by_dir.get_mut(dir) {
                    files.pop();
                    if files.is_empty() {
                        by_dir.remove(dir);
                    }
                }
                break;
            }
            included += 1;
        }
        if included == 0 {
            return String::new();
        }
        text.push_str(&render_dirs(&by_dir));
        let rest = modules.len().saturating_sub(self.top_modules + included);
        if rest > 0 {
            let _ = write!(
                text,
                "\n[{rest} more modules not listed; use the exploration tools to find them]"
            );
        }
        text.trim_end().to_string()
    }
}

fn render_dirs(by_dir: &BTreeMap<&str, Vec<&str>>) -> String {
    let mut out = String::new();
    for (dir, files) in by_dir {
        let dir = if dir.is_empty() { "." } else { dir };
        let files: Vec<String> = files.iter().map(|f| markdown::one_line(f)).collect();
        let _ = writeln!(
            out,
            "- {}: {}",
            markdown::code_span(&format!("{dir}/")),
            files.join(", ")
        );
    }
    out
}

fn normalised(scores: Vec<f64>) -> Vec<f64> {
    let max = scores.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return vec![0.0; scores.len()];
    }
    scores.into_iter().map(|s| s / max).collect()
}

fn escape_cell(text: &str) -> String {
    markdown::cell_text(&text.replace('\n', " "))
}
