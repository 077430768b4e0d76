//! The run report: summary, per-domain and per-repository breakdowns,
//! failures, and the published rows for reference; as JSON, Markdown and a
//! self-contained HTML page with inline SVG charts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::gittaskbench::domains::Domain;
use crate::gittaskbench::published::{PUBLISHED_SOURCE, PublishedRow, published_gittaskbench};
use crate::gittaskbench::record::{RunStatus, TaskRecord};
use crate::report_format::{
    Bar, ReportFiles, STYLE, Scale, bar_chart, clip, duration, esc, md_cell, pct, thousands, utc,
    write_files,
};
use crate::results::latest_per_task;

/// Counts and rates over a set of task records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Tasks.
    pub tasks: usize,
    /// Tasks whose grader said `Process` true.
    pub process: usize,
    /// Tasks whose grader said `Result` true.
    pub result: usize,
    /// Execution completion rate: `process / tasks`, percent.
    pub ecr: f64,
    /// Task pass rate: `result / tasks`, percent.
    pub tpr: f64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt plus completion tokens.
    pub total_tokens: u64,
    /// Mean total tokens per task.
    pub tokens_per_task: f64,
    /// Estimated cost, dollars.
    pub cost: f64,
    /// Summed wall-clock time of the agents' runs, milliseconds.
    pub wall_ms: u64,
}

impl Metrics {
    /// The metrics of `records` (one per task).
    ///
    /// ```
    /// use bench_harness::{Domain, Metrics, RunStatus, TaskRecord};
    ///
    /// let mut a = TaskRecord::empty("A_01", "A", Domain::Other, RunStatus::Finished);
    /// (a.process, a.result, a.prompt_tokens) = (true, true, 900);
    /// let mut b = TaskRecord::empty("B_01", "B", Domain::Other, RunStatus::Finished);
    /// (b.process, b.completion_tokens) = (true, 100);
    /// let c = TaskRecord::empty("C_01", "C", Domain::Other, RunStatus::Timeout);
    /// let m = Metrics::of(&[a, b, c]);
    /// assert_eq!((m.tasks, m.process, m.result, m.total_tokens), (3, 2, 1, 1000));
    /// assert!((m.ecr - 200.0 / 3.0).abs() < 1e-9);
    /// ```
    pub fn of<'a>(records: impl IntoIterator<Item = &'a TaskRecord>) -> Self {
        let mut m = Metrics {
            tasks: 0,
            process: 0,
            result: 0,
            ecr: 0.0,
            tpr: 0.0,
            prompt_tokens: 0,
            completion_tokens: 0,
            total_tokens: 0,
            tokens_per_task: 0.0,
            cost: 0.0,
            wall_ms: 0,
        };
        for r in records {
            m.tasks += 1;
            m.process += usize::from(r.process);
            m.result += usize::from(r.result);
            m.prompt_tokens = m.prompt_tokens.saturating_add(r.prompt_tokens);
            m.completion_tokens = m.completion_tokens.saturating_add(r.completion_tokens);
            m.cost += r.cost;
            m.wall_ms = m.wall_ms.saturating_add(r.wall_ms);
        }
        m.total_tokens = m.prompt_tokens.saturating_add(m.completion_tokens);
        if m.tasks > 0 {
            let n = m.tasks as f64;
            m.ecr = m.process as f64 * 100.0 / n;
            m.tpr = m.result as f64 * 100.0 / n;
            m.tokens_per_task = m.total_tokens as f64 / n;
        }
        m
    }
}

/// The metrics of one domain or repository.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The domain label or repository name.
    pub name: String,
    /// Its metrics.
    pub metrics: Metrics,
}

/// A task that did not pass, with what the grader said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The task ID.
    pub task: String,
    /// Its repository.
    pub repo: String,
    /// Its domain.
    pub domain: Domain,
    /// How the agent's run ended.
    pub status: RunStatus,
    /// The grader's `Process`.
    pub process: bool,
    /// The grader's comments.
    pub comments: String,
    /// Why it failed, read from its trajectory
    /// ([`crate::gittaskbench::failures::classify`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<crate::gittaskbench::failures::FailureClass>,
    /// Every class its trajectory shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<crate::gittaskbench::failures::FailureClass>,
}

impl Failure {
    /// The classes besides the primary one.
    pub fn also(&self) -> Vec<&'static str> {
        self.classes
            .iter()
            .filter(|c| Some(**c) != self.class)
            .map(|c| c.as_str())
            .collect()
    }
}

/// What the report is about.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportMeta {
    /// `agent` (the harness ran the agent) or `grade-only`.
    pub mode: String,
    /// The model, when the agent ran.
    pub model: Option<String>,
    /// Which tasks were selected.
    pub selection: String,
    /// How many tasks the checkout has.
    pub benchmark_tasks: usize,
    /// The checkout.
    pub root: PathBuf,
    /// When the report was made (seconds since the Unix epoch).
    pub generated_unix: u64,
}

/// A run's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// What it is about.
    pub meta: ReportMeta,
    /// Over all tasks.
    pub summary: Metrics,
    /// Per domain, in [`Domain::ALL`] order.
    pub by_domain: Vec<Group>,
    /// Per repository, by name.
    pub by_repo: Vec<Group>,
    /// Tasks per run status.
    pub statuses: BTreeMap<String, usize>,
    /// Tasks that did not pass, by ID.
    pub failures: Vec<Failure>,
    /// Every task's record, by ID.
    pub tasks: Vec<TaskRecord>,
    /// Where the published rows come from.
    pub published_source: String,
    /// The paper's rows, for reference.
    pub published: Vec<PublishedRow>,
}

impl Report {
    /// The report of `records` (when a task has several, the last counts).
    ///
    /// ```
    /// use bench_harness::{Domain, Report, ReportMeta, RunStatus, TaskRecord};
    ///
    /// let mut pass = TaskRecord::empty("A_01", "A", Domain::WebScraping, RunStatus::Finished);
    /// (pass.process, pass.result) = (true, true);
    /// let mut fail = TaskRecord::empty("B_01", "B", Domain::WebScraping, RunStatus::MaxTurns);
    /// fail.comments = "no output".into();
    /// let report = Report::new(ReportMeta::default(), &[pass, fail]);
    /// assert_eq!((report.summary.tasks, report.summary.result), (2, 1));
    /// assert_eq!(report.failures.len(), 1);
    /// assert!(report.to_markdown().contains("| B_01 | B | max_turns |"));
    /// assert!(report.to_html().contains("<svg"));
    /// ```
    pub fn new(meta: ReportMeta, records: &[TaskRecord]) -> Self {
        let mut tasks = latest_per_task(records);
        tasks.sort_by(|a, b| a.task.cmp(&b.task));
        let summary = Metrics::of(&tasks);
        let by_domain = Domain::ALL
            .iter()
            .filter_map(|d| {
                let members: Vec<&TaskRecord> = tasks.iter().filter(|r| r.domain == *d).collect();
                (!members.is_empty()).then(|| Group {
                    name: d.label().to_owned(),
                    metrics: Metrics::of(members),
                })
            })
            .collect();
        let mut repos: BTreeMap<&str, Vec<&TaskRecord>> = BTreeMap::new();
        for r in &tasks {
            repos.entry(&r.repo).or_default().push(r);
        }
        let by_repo = repos
            .into_iter()
            .map(|(name, members)| Group {
                name: name.to_owned(),
                metrics: Metrics::of(members),
            })
            .collect();
        let mut statuses = BTreeMap::new();
        for r in &tasks {
            *statuses.entry(r.status.as_str().to_owned()).or_insert(0) += 1;
        }
        let failures = tasks
            .iter()
            .filter(|r| !r.result)
            .map(|r| {
                let (class, classes, _) = crate::gittaskbench::failures::classify(r);
                Failure {
                    task: r.task.clone(),
                    repo: r.repo.clone(),
                    domain: r.domain,
                    status: r.status,
                    process: r.process,
                    comments: r.comments.clone(),
                    class,
                    classes,
                }
            })
            .collect();
        Report {
            meta,
            summary,
            by_domain,
            by_repo,
            statuses,
            failures,
            tasks,
            published_source: PUBLISHED_SOURCE.to_owned(),
            published: published_gittaskbench(),
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Writes `report.json`, `report.md` and `report.html` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<ReportFiles, Error> {
        write_files(dir, self.to_json(), self.to_markdown(), self.to_html())
    }

    fn heading(&self) -> String {
        let mode = if self.meta.mode == "grade-only" {
            "grade-only (outputs produced elsewhere)".to_owned()
        } else {
            format!(
                "agent run, model {}",
                self.meta.model.as_deref().unwrap_or("unknown")
            )
        };
        format!(
            "{mode}; {} ({} of {} tasks in the checkout); generated {}",
            self.meta.selection,
            self.summary.tasks,
            self.meta.benchmark_tasks,
            utc(self.meta.generated_unix)
        )
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let s = &self.summary;
        let mut md = String::new();
        let _ = writeln!(md, "# GitTaskBench report\n\n{}\n", self.heading());
        md.push_str("## Summary (this run)\n\n");
        md.push_str("| Tasks | Execution completion rate | Task pass rate | Total tokens | Tokens per task | Cost (USD) | Agent wall time |\n");
        md.push_str("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        let _ = writeln!(md, "| {} |\n", summary_cells(s).join(" | "));
        let _ = writeln!(
            md,
            "Prompt tokens {}, completion tokens {}.\n",
            thousands(s.prompt_tokens),
            thousands(s.completion_tokens)
        );
        md.push_str("## Published results (reference only)\n\n");
        let _ = writeln!(md, "> {}\n", self.published_source);
        md.push_str(
            "| Framework | LLM | Execution completion rate | Task pass rate | Tokens per task |\n",
        );
        md.push_str("| --- | --- | ---: | ---: | ---: |\n");
        for p in &self.published {
            let _ = writeln!(
                md,
                "| {} | {} | {:.2} % | {:.2} % | {} |",
                p.framework,
                p.llm,
                p.ecr,
                p.tpr,
                thousands(p.tokens_per_task)
            );
        }
        md.push('\n');
        for (title, groups) in [
            ("By domain", &self.by_domain),
            ("By repository", &self.by_repo),
        ] {
            let _ = writeln!(md, "## {title}\n");
            md.push_str("| Name | Tasks | Execution completion rate | Task pass rate | Tokens per task | Cost (USD) |\n");
            md.push_str("| --- | ---: | ---: | ---: | ---: | ---: |\n");
            for g in groups {
                let _ = writeln!(
                    md,
                    "| {} | {} |",
                    md_cell(&g.name),
                    group_cells(&g.metrics).join(" | ")
                );
            }
            md.push('\n');
        }
        md.push_str("## Run status\n\n| Status | Tasks |\n| --- | ---: |\n");
        for (status, count) in &self.statuses {
            let _ = writeln!(md, "| {status} | {count} |");
        }
        md.push('\n');
        let _ = writeln!(md, "## Failures ({})\n", self.failures.len());
        if self.failures.is_empty() {
            md.push_str("None.\n");
        } else {
            md.push_str(
                "| Task | Repository | Status | Process | Class | Also | Grader's comments |\n",
            );
            md.push_str("| --- | --- | --- | --- | --- | --- | --- |\n");
            for f in &self.failures {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    md_cell(&f.task),
                    md_cell(&f.repo),
                    f.status,
                    f.process,
                    f.class.map_or("", |c| c.as_str()),
                    f.also().join(", "),
                    md_cell(&clip(&f.comments, 600))
                );
            }
            md.push_str("\n| Failure class | Primary | Present |\n| --- | ---: | ---: |\n");
            for class in crate::gittaskbench::failures::FailureClass::ALL {
                let primary = self
                    .failures
                    .iter()
                    .filter(|f| f.class == Some(class))
                    .count();
                let present = self
                    .failures
                    .iter()
                    .filter(|f| f.classes.contains(&class))
                    .count();
                let _ = writeln!(md, "| {} | {primary} | {present} |", class.as_str());
            }
        }
        md
    }

    /// The report as one HTML page: inline CSS and SVG, no network
    /// resources, no scripts.
    pub fn to_html(&self) -> String {
        let s = &self.summary;
        let mut h = String::new();
        h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>GitTaskBench report</title>\n<style>\n");
        h.push_str(STYLE);
        h.push_str("</style>\n</head>\n<body>\n<h1>GitTaskBench report</h1>\n");
        let _ = writeln!(h, "<p>{}</p>", esc(&self.heading()));

        h.push_str("<h2>Summary (this run)</h2>\n<table><tr><th>Tasks</th><th>Execution completion rate</th><th>Task pass rate</th><th>Total tokens</th><th>Tokens per task</th><th>Cost (USD)</th><th>Agent wall time</th></tr>\n");
        h.push_str("<tr>");
        for (i, cell) in summary_cells(s).iter().enumerate() {
            // The task count and the two rates are the headline figures;
            // a rate's counts are small beside it.
            let class = if i < 3 { "n big" } else { "n" };
            let cell = match cell.split_once(" (") {
                Some((rate, counts)) if i > 0 && i < 3 => {
                    format!("{rate} <small>({counts}</small>")
                }
                _ => cell.clone(),
            };
            let _ = write!(h, "<td class=\"{class}\">{cell}</td>");
        }
        h.push_str("</tr></table>\n");

        let this_run = format!(
            "This run ({})",
            self.meta.model.as_deref().unwrap_or(&self.meta.mode)
        );
        let mut rate_rows = vec![Bar {
            label: this_run.clone(),
            values: vec![s.ecr, s.tpr],
            published: false,
        }];
        let mut token_rows = vec![Bar {
            label: this_run,
            values: vec![s.tokens_per_task],
            published: false,
        }];
        for p in &self.published {
            let label = format!("Published: {} · {}", p.framework, p.llm);
            rate_rows.push(Bar {
                label: label.clone(),
                values: vec![p.ecr, p.tpr],
                published: true,
            });
            token_rows.push(Bar {
                label,
                values: vec![p.tokens_per_task as f64],
                published: true,
            });
        }
        let rates = [
            ("Execution completion rate", "#4e79a7"),
            ("Task pass rate", "#59a14f"),
        ];
        h.push_str("<h2>This run next to the published results</h2>\n");
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(&self.published_source));
        h.push_str(&bar_chart(
            "Execution completion and task pass rates (%)",
            &rate_rows,
            &rates,
            Scale::Percent,
        ));
        h.push_str(&bar_chart(
            "Tokens per task (log scale)",
            &token_rows,
            &[("Tokens per task", "#f28e2b")],
            Scale::Log,
        ));
        h.push_str("<table><tr><th>Framework</th><th>LLM</th><th>Execution completion rate</th><th>Task pass rate</th><th>Tokens per task</th></tr>\n");
        for p in &self.published {
            let _ = writeln!(
                h,
                "<tr class=\"published\"><td>{} <small>(published)</small></td><td>{}</td><td class=\"n\">{:.2} %</td><td class=\"n\">{:.2} %</td><td class=\"n\">{}</td></tr>",
                esc(&p.framework),
                esc(&p.llm),
                p.ecr,
                p.tpr,
                thousands(p.tokens_per_task)
            );
        }
        h.push_str("</table>\n");

        for (title, groups) in [
            ("By domain", &self.by_domain),
            ("By repository", &self.by_repo),
        ] {
            let _ = writeln!(h, "<h2>{title}</h2>");
            let bars: Vec<Bar> = groups
                .iter()
                .map(|g| Bar {
                    label: format!("{} ({})", g.name, g.metrics.tasks),
                    values: vec![g.metrics.ecr, g.metrics.tpr],
                    published: false,
                })
                .collect();
            h.push_str(&bar_chart(
                &format!("{title}: rates (%)"),
                &bars,
                &rates,
                Scale::Percent,
            ));
            h.push_str("<table><tr><th>Name</th><th>Tasks</th><th>Execution completion rate</th><th>Task pass rate</th><th>Tokens per task</th><th>Cost (USD)</th></tr>\n");
            for g in groups {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td class=\"n\">{}</td></tr>",
                    esc(&g.name),
                    group_cells(&g.metrics).join("</td><td class=\"n\">")
                );
            }
            h.push_str("</table>\n");
        }

        h.push_str("<h2>Run status</h2>\n<table><tr><th>Status</th><th>Tasks</th></tr>\n");
        for (status, count) in &self.statuses {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"n\">{count}</td></tr>",
                esc(status)
            );
        }
        h.push_str("</table>\n");
        let _ = writeln!(h, "<h2>Failures ({})</h2>", self.failures.len());
        if self.failures.is_empty() {
            h.push_str("<p>None.</p>\n");
        } else {
            h.push_str("<table><tr><th>Task</th><th>Repository</th><th>Status</th><th>Process</th><th>Class</th><th>Grader's comments</th></tr>\n");
            for f in &self.failures {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"comments\">{}</td></tr>",
                    esc(&f.task),
                    esc(&f.repo),
                    f.status,
                    f.process,
                    f.class.map_or("", |c| c.as_str()),
                    esc(&clip(&f.comments, 2000))
                );
            }
            h.push_str("</table>\n");
        }
        h.push_str("<h2>All tasks</h2>\n<table><tr><th>Task</th><th>Repository</th><th>Domain</th><th>Status</th><th>Process</th><th>Result</th><th>Turns</th><th>Tokens</th><th>Cost (USD)</th><th>Wall time</th></tr>\n");
        for r in &self.tasks {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.4}</td><td class=\"n\">{}</td></tr>",
                esc(&r.task),
                esc(&r.repo),
                esc(r.domain.label()),
                r.status,
                r.process,
                r.result,
                r.turns,
                thousands(r.total_tokens()),
                r.cost,
                duration(r.wall_ms)
            );
        }
        h.push_str("</table>\n</body>\n</html>\n");
        h
    }
}

/// The cells of the summary row, the same in Markdown and HTML: tasks,
/// ECR and TPR with their counts, total tokens, tokens per task, cost,
/// agent wall time.
fn summary_cells(s: &Metrics) -> [String; 7] {
    [
        s.tasks.to_string(),
        format!("{} ({}/{})", pct(s.ecr), s.process, s.tasks),
        format!("{} ({}/{})", pct(s.tpr), s.result, s.tasks),
        thousands(s.total_tokens),
        thousands(s.tokens_per_task.round() as u64),
        format!("{:.4}", s.cost),
        duration(s.wall_ms),
    ]
}

/// The numeric cells of a breakdown row, the same in every format: tasks,
/// ECR and TPR with their counts, tokens per task, cost.
fn group_cells(m: &Metrics) -> [String; 5] {
    [
        m.tasks.to_string(),
        format!("{} ({}/{})", pct(m.ecr), m.process, m.tasks),
        format!("{} ({}/{})", pct(m.tpr), m.result, m.tasks),
        thousands(m.tokens_per_task.round() as u64),
        format!("{:.4}", m.cost),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_self_contained() {
        let report = Report::new(ReportMeta::default(), &[]);
        let html = report.to_html();
        assert!(html.contains("<svg"));
        for needle in ["<script", "http://", "https://", "<link", "@import", "url("] {
            let allowed = needle == "http://"
                && html.matches(needle).count()
                    == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
            assert!(allowed || !html.contains(needle), "{needle}");
        }
        assert_eq!(report.summary.tasks, 0);
        assert_eq!(report.published.len(), 9);
    }
}
