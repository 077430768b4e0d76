//! The run report: summary, per-domain and per-repository breakdowns,
//! failures, and the published rows for reference; as JSON, Markdown and a
//! self-contained HTML page with inline SVG charts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::domains::Domain;
use crate::published::{PUBLISHED_SOURCE, PublishedRow, published_gittaskbench};
use crate::record::{RunStatus, TaskRecord, latest_per_task};

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
    /// ([`crate::failures::classify`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<crate::failures::FailureClass>,
    /// Every class its trajectory shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<crate::failures::FailureClass>,
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

/// The files [`Report::write`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// `report.json`.
    pub json: PathBuf,
    /// `report.md`.
    pub markdown: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
}

impl ReportFiles {
    /// The lines a command prints to say where the results file and the
    /// report are.
    ///
    /// ```
    /// let files = bench_harness::ReportFiles {
    ///     json: "out/report.json".into(),
    ///     markdown: "out/report.md".into(),
    ///     html: "out/report.html".into(),
    /// };
    /// let text = files.locations(std::path::Path::new("out/results.jsonl"));
    /// assert!(text.starts_with("results: out/results.jsonl\nreport:  out/report.md"));
    /// ```
    pub fn locations(&self, results: &Path) -> String {
        format!(
            "results: {}\nreport:  {}\n         {}\n         {}",
            results.display(),
            self.markdown.display(),
            self.html.display(),
            self.json.display()
        )
    }
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
                let (class, classes, _) = crate::failures::classify(r);
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
        let _ = writeln!(
            md,
            "| {} | {} ({}/{}) | {} ({}/{}) | {} | {} | {:.4} | {} |\n",
            s.tasks,
            pct(s.ecr),
            s.process,
            s.tasks,
            pct(s.tpr),
            s.result,
            s.tasks,
            thousands(s.total_tokens),
            thousands(s.tokens_per_task.round() as u64),
            s.cost,
            duration(s.wall_ms)
        );
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
            for class in crate::failures::FailureClass::ALL {
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
        let _ = writeln!(
            h,
            "<tr><td class=\"n big\">{}</td><td class=\"n big\">{} <small>({}/{})</small></td><td class=\"n big\">{} <small>({}/{})</small></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.4}</td><td class=\"n\">{}</td></tr></table>",
            s.tasks,
            pct(s.ecr),
            s.process,
            s.tasks,
            pct(s.tpr),
            s.result,
            s.tasks,
            thousands(s.total_tokens),
            thousands(s.tokens_per_task.round() as u64),
            s.cost,
            duration(s.wall_ms)
        );

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

/// The stylesheet of the HTML reports (inline: the pages load nothing).
pub(crate) const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\n\
     table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top}\n\
     th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}\n\
     .published{background:#fbf7ea}.note{color:#6b5b00;font-style:italic}\n\
     .comments{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:0.85em;max-width:600px}\n\
     .big{font-size:1.6em;font-weight:600}svg{display:block;margin:0.5em 0 1.5em}\n";

/// One row of a bar chart: a label and one value per series.
pub(crate) struct Bar {
    pub(crate) label: String,
    pub(crate) values: Vec<f64>,
    pub(crate) published: bool,
}

#[derive(Clone, Copy)]
pub(crate) enum Scale {
    /// 0 to 100.
    Percent,
    /// log10, from 1 to the largest value.
    Log,
}

/// A horizontal grouped bar chart as inline SVG.
pub(crate) fn bar_chart(
    title: &str,
    bars: &[Bar],
    series: &[(&str, &str)],
    scale: Scale,
) -> String {
    const LABEL_W: f64 = 300.0;
    const PLOT_W: f64 = 460.0;
    const BAR_H: f64 = 13.0;
    const GAP: f64 = 9.0;
    const TOP: f64 = 44.0;
    let group_h = BAR_H * series.len() as f64 + GAP;
    let height = TOP + group_h * bars.len() as f64 + 10.0;
    let width = LABEL_W + PLOT_W + 90.0;
    let max = bars
        .iter()
        .flat_map(|b| b.values.iter().copied())
        .fold(1.0_f64, f64::max);
    let fraction = |v: f64| -> f64 {
        let f = match scale {
            Scale::Percent => v / 100.0,
            Scale::Log => {
                if v <= 1.0 {
                    0.0
                } else {
                    v.log10() / max.log10().max(1.0)
                }
            }
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{}\" font-family=\"system-ui,sans-serif\" font-size=\"12\">",
        esc(title)
    );
    let _ = writeln!(
        svg,
        "<text x=\"0\" y=\"16\" font-size=\"14\" font-weight=\"600\">{}</text>",
        esc(title)
    );
    let mut x = LABEL_W;
    for (name, color) in series {
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.0}\" y=\"26\" width=\"12\" height=\"10\" fill=\"{color}\"/><text x=\"{:.0}\" y=\"35\">{}</text>",
            x + 16.0,
            esc(name)
        );
        x += 30.0 + 7.0 * name.len() as f64;
    }
    let _ = writeln!(
        svg,
        "<line x1=\"{LABEL_W}\" y1=\"{TOP}\" x2=\"{LABEL_W}\" y2=\"{:.0}\" stroke=\"#999\"/>",
        height - 10.0
    );
    for (i, bar) in bars.iter().enumerate() {
        let y0 = TOP + group_h * i as f64;
        if bar.published {
            let _ = writeln!(
                svg,
                "<rect x=\"0\" y=\"{:.1}\" width=\"{width:.0}\" height=\"{:.1}\" fill=\"#fbf7ea\"/>",
                y0 + 2.0,
                group_h - 4.0
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\"{}>{}</text>",
            LABEL_W - 6.0,
            y0 + group_h / 2.0 + 2.0,
            if bar.published {
                " fill=\"#6b5b00\" font-style=\"italic\""
            } else {
                " font-weight=\"600\""
            },
            esc(&bar.label)
        );
        for (j, (value, (_, color))) in bar.values.iter().zip(series).enumerate() {
            let y = y0 + 4.0 + BAR_H * j as f64;
            let w = (PLOT_W * fraction(*value)).max(0.5);
            let shown = match scale {
                Scale::Percent => format!("{value:.2} %"),
                Scale::Log => thousands(value.round().max(0.0) as u64),
            };
            let _ = writeln!(
                svg,
                "<rect x=\"{LABEL_W}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{color}\"{}/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{shown}</text>",
                BAR_H - 2.0,
                if bar.published {
                    " fill-opacity=\"0.55\""
                } else {
                    ""
                },
                LABEL_W + w + 4.0,
                y + BAR_H - 3.0
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
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

pub(crate) fn pct(value: f64) -> String {
    format!("{value:.2} %")
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn duration(ms: u64) -> String {
    let secs = ms as f64 / 1000.0;
    if secs < 120.0 {
        format!("{secs:.1} s")
    } else if secs < 7200.0 {
        format!("{:.1} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

pub(crate) fn md_cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace("\r\n", "<br>")
        .replace('\n', "<br>")
}

pub(crate) fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max_chars).collect();
    format!("{kept} …")
}

/// `YYYY-MM-DD HH:MM UTC` from Unix seconds.
pub(crate) fn utc(secs: u64) -> String {
    // Past jiff's range (year 9999) only by a corrupt record: shown as is.
    i64::try_from(secs)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(
            || format!("{secs} s after 1970"),
            |t| t.strftime("%Y-%m-%d %H:%M UTC").to_string(),
        )
}

/// Writes a report's three forms as `report.json`, `report.md` and
/// `report.html` into `dir` (both benchmarks' reports).
pub(crate) fn write_files(
    dir: &Path,
    json: String,
    markdown: String,
    html: String,
) -> Result<ReportFiles, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        what: "creating the report directory",
        path: dir.to_path_buf(),
        source,
    })?;
    let files = ReportFiles {
        json: dir.join("report.json"),
        markdown: dir.join("report.md"),
        html: dir.join("report.html"),
    };
    for (path, text) in [
        (&files.json, json),
        (&files.markdown, markdown),
        (&files.html, html),
    ] {
        std::fs::write(path, text).map_err(|source| Error::Io {
            what: "writing the report",
            path: path.clone(),
            source,
        })?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_helpers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(u64::MAX), "18446744073709551615 s after 1970");
        assert_eq!(esc("<a & 'b'>"), "&lt;a &amp; &#39;b&#39;&gt;");
        assert_eq!(md_cell("a|b\nc"), "a\\|b<br>c");
        assert_eq!(duration(1500), "1.5 s");
    }

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
