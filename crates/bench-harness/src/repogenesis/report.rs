//! The RepoGenesis report: each metric in each of the benchmark's
//! definitions, overall and per language, framework and difficulty, every
//! task and fault, and the paper's rows for reference; as JSON, Markdown
//! and one self-contained HTML page (the GitTaskBench report's shapes,
//! helpers and style).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::coverage::round4;
use super::published::{Difficulty, GENESIS_SOURCE, PublishedGenesis, published_genesis};
use super::record::{FaultKind, GenesisRecord, GenesisStatus};
use super::spec::{Language, Timeouts};
use super::testlog::TestCounts;
use crate::Error;
use crate::report_format::{
    Bar, ReportFiles, STYLE, Scale, bar_chart, clip, duration, esc, md_cell, utc,
};
use crate::results::latest_per_task;

/// A count over a count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio {
    /// Numerator.
    pub num: u64,
    /// Denominator.
    pub den: u64,
}

impl Ratio {
    /// `num / den`, 0 when `den` is 0.
    pub fn rate(&self) -> f64 {
        if self.den == 0 {
            0.0
        } else {
            self.num as f64 / self.den as f64
        }
    }

    fn cell(&self) -> String {
        if self.den == 0 {
            "n/a".to_owned()
        } else {
            format!("{:.2} % ({}/{})", self.rate() * 100.0, self.num, self.den)
        }
    }
}

/// A mean of per-repository scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Mean {
    /// The mean (rounded to four places, as the harness rounds it).
    pub mean: f64,
    /// Over how many repositories.
    pub n: usize,
}

impl Mean {
    fn of(scores: &[f64]) -> Self {
        if scores.is_empty() {
            return Mean::default();
        }
        Mean {
            mean: round4(scores.iter().sum::<f64>() / scores.len() as f64),
            n: scores.len(),
        }
    }

    fn cell(&self) -> String {
        if self.n == 0 {
            "n/a".to_owned()
        } else {
            format!("{:.2} % (n={})", self.mean * 100.0, self.n)
        }
    }
}

/// The metrics over a set of tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// Tasks.
    pub tasks: usize,
    /// Tasks whose service and tests ran.
    pub evaluated: usize,
    /// Tasks without a generated repository.
    pub no_repository: usize,
    /// Java tasks whose build cannot be had here.
    pub build_unavailable: usize,
    /// Tasks the harness could not evaluate.
    pub errors: usize,
    /// DSR as the harness's entrypoint decides it, over evaluated tasks.
    pub dsr: Ratio,
    /// DSR as `test_dsr_repos.py` decides it, over evaluated tasks.
    pub dsr_legacy: Ratio,
    /// Services that answered on a health path or their port.
    pub answered: Ratio,
    /// The harness's Pass@1: the mean of per-repository `passed / total`
    /// over repositories whose total is above 0 (`compute_summary`).
    pub pass_at_1: Mean,
    /// The paper's strict Pass@1: repositories passing every golden test,
    /// over evaluated tasks.
    pub pass_strict: Ratio,
    /// Test outcomes summed.
    pub tests: TestCounts,
    /// The harness's AC: the mean of per-repository scores over
    /// repositories whose README declares an endpoint.
    pub ac_harness: Mean,
    /// The paper's AC: implemented over declared endpoints, summed over
    /// repositories (`calculate_api_coverage_agents.py`).
    pub ac_paper: Ratio,
    /// `calculate_api_coverage.py`'s overall AC (also summed).
    pub ac_legacy: Ratio,
    /// Route-level coverage, summed.
    pub routes: Ratio,
}

impl Scores {
    /// The metrics of `records` (one per task).
    pub fn of<'a>(records: impl IntoIterator<Item = &'a GenesisRecord>) -> Self {
        let mut s = Scores::default();
        let mut pass = Vec::new();
        let mut ac = Vec::new();
        for r in records {
            s.tasks += 1;
            match r.status {
                GenesisStatus::Evaluated => s.evaluated += 1,
                GenesisStatus::NoRepository => s.no_repository += 1,
                GenesisStatus::BuildUnavailable => s.build_unavailable += 1,
                GenesisStatus::Error => s.errors += 1,
            }
            if let Some(coverage) = &r.ac {
                if coverage.harness.total > 0 {
                    ac.push(coverage.harness.score);
                }
                s.ac_paper.num += coverage.paper.implemented as u64;
                s.ac_paper.den += coverage.paper.total as u64;
                s.ac_legacy.num += coverage.legacy.implemented as u64;
                s.ac_legacy.den += coverage.legacy.total as u64;
            }
            if let Some(routes) = &r.routes {
                s.routes.num += routes.matched as u64;
                s.routes.den += routes.declared as u64;
            }
            if !r.ran() {
                continue;
            }
            let start = r.start.as_ref();
            s.dsr.den += 1;
            s.dsr_legacy.den += 1;
            s.answered.den += 1;
            s.pass_strict.den += 1;
            s.dsr.num += u64::from(start.is_some_and(|st| st.dsr));
            s.dsr_legacy.num += u64::from(start.is_some_and(|st| st.dsr_legacy));
            s.answered.num += u64::from(start.is_some_and(|st| st.answered));
            if let Some(tests) = &r.tests {
                s.pass_strict.num += u64::from(tests.all_passed);
                if tests.counted {
                    pass.push(tests.pass_at_1);
                }
                s.tests.passed += tests.counts.passed;
                s.tests.failed += tests.counts.failed;
                s.tests.errors += tests.counts.errors;
                s.tests.skipped += tests.counts.skipped;
            }
        }
        s.pass_at_1 = Mean::of(&pass);
        s.ac_harness = Mean::of(&ac);
        s
    }
}

/// The metrics of one group (a language, framework or difficulty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupScores {
    /// The group's label.
    pub name: String,
    /// Its metrics.
    pub scores: Scores,
}

/// The metrics overall and by group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenesisSummary {
    /// Every task.
    pub all: Scores,
    /// Per language.
    pub by_language: Vec<GroupScores>,
    /// Per framework hint of `constants.py`.
    pub by_framework: Vec<GroupScores>,
    /// Per difficulty (the paper's Table 11).
    pub by_difficulty: Vec<GroupScores>,
}

/// One fault, for the report's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRow {
    /// The task.
    pub task: String,
    /// The fault.
    pub kind: FaultKind,
    /// Why.
    pub detail: String,
}

/// What the report is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenesisMeta {
    /// The checkout.
    pub root: PathBuf,
    /// The generated repositories.
    pub generated: PathBuf,
    /// Which tasks.
    pub selection: String,
    /// Tasks in the checkout.
    pub benchmark_tasks: usize,
    /// How tasks were isolated.
    pub isolation: String,
    /// Tasks at once.
    pub jobs: usize,
    /// The phase limits.
    pub timeouts: Timeouts,
    /// Wall-clock time of the run that wrote the report, milliseconds.
    pub run_wall_ms: u64,
    /// When (seconds since the Unix epoch).
    pub generated_unix: u64,
}

/// A run's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenesisReport {
    /// What it is about.
    pub meta: GenesisMeta,
    /// The metrics.
    pub summary: GenesisSummary,
    /// Every fault.
    pub faults: Vec<FaultRow>,
    /// Every task's record, by name.
    pub tasks: Vec<GenesisRecord>,
    /// Where the published rows come from.
    pub published_source: String,
    /// The paper's rows.
    pub published: PublishedGenesis,
}

const COLUMNS: [&str; 11] = [
    "Tasks",
    "Evaluated",
    "DSR (harness)",
    "DSR (test_dsr_repos.py)",
    "Answered",
    "Pass@1 (harness mean)",
    "Pass@1 (all tests pass)",
    "AC (harness mean)",
    "AC (paper rule, summed)",
    "AC (calculate_api_coverage.py, summed)",
    "Routes (summed)",
];

fn score_cells(s: &Scores) -> [String; 11] {
    [
        s.tasks.to_string(),
        s.evaluated.to_string(),
        s.dsr.cell(),
        s.dsr_legacy.cell(),
        s.answered.cell(),
        s.pass_at_1.cell(),
        s.pass_strict.cell(),
        s.ac_harness.cell(),
        s.ac_paper.cell(),
        s.ac_legacy.cell(),
        s.routes.cell(),
    ]
}

fn task_cells(r: &GenesisRecord, published: &PublishedGenesis) -> [String; 12] {
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let (dsr, legacy, answered) = match (&r.start, r.ran()) {
        (Some(s), true) => (yes_no(s.dsr), yes_no(s.dsr_legacy), yes_no(s.answered)),
        _ => ("–".into(), "–".into(), "–".into()),
    };
    let (pass, strict) = match (&r.tests, r.ran()) {
        (Some(t), true) => (
            format!(
                "{}/{}{}",
                t.counts.passed,
                t.harness_total,
                if t.counted {
                    format!(" ({:.2})", t.pass_at_1)
                } else {
                    " (left out)".to_owned()
                }
            ),
            yes_no(t.all_passed),
        ),
        _ => ("–".into(), "–".into()),
    };
    let ac = |f: &dyn Fn(&super::record::AcResults) -> (usize, usize)| {
        r.ac.as_ref().map_or("–".to_owned(), |a| {
            let (i, t) = f(a);
            format!("{i}/{t}")
        })
    };
    let routes = r.routes.as_ref().map_or("–".to_owned(), |c| {
        format!("{}/{}", c.matched, c.declared)
    });
    let mut kinds: Vec<String> = r
        .faults
        .iter()
        .map(|f| {
            serde_json::to_value(f.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    kinds.dedup();
    let difficulty = published
        .task(&r.task)
        .map_or("–".to_owned(), |t| t.difficulty.label().to_owned());
    [
        r.task.clone(),
        format!(
            "{} · {} · {difficulty}",
            r.language.label(),
            r.framework.as_str()
        ),
        r.status.as_str().to_owned(),
        dsr,
        legacy,
        answered,
        pass,
        strict,
        ac(&|a| (a.harness.implemented, a.harness.total)),
        ac(&|a| (a.paper.implemented, a.paper.total)),
        routes,
        kinds.join(", "),
    ]
}

const TASK_COLUMNS: [&str; 12] = [
    "Task",
    "Language · framework · difficulty",
    "Status",
    "DSR (harness)",
    "DSR (test_dsr_repos.py)",
    "Answered",
    "Pass@1 passed/total",
    "All tests pass",
    "AC harness",
    "AC paper rule",
    "Routes",
    "Faults",
];

impl GenesisReport {
    /// The report of `records` (the last record of a task counts).
    pub fn new(meta: GenesisMeta, records: &[GenesisRecord]) -> Self {
        let mut tasks = latest_per_task(records);
        tasks.sort_by(|a, b| a.task.cmp(&b.task));
        let published = published_genesis();
        let group = |name: String, members: Vec<&GenesisRecord>| GroupScores {
            name,
            scores: Scores::of(members),
        };
        let by_language = [Language::Python, Language::Java]
            .into_iter()
            .filter_map(|l| {
                let members: Vec<&GenesisRecord> =
                    tasks.iter().filter(|r| r.language == l).collect();
                (!members.is_empty()).then(|| group(l.label().to_owned(), members))
            })
            .collect();
        let mut frameworks: BTreeMap<String, Vec<&GenesisRecord>> = BTreeMap::new();
        for r in &tasks {
            frameworks
                .entry(format!(
                    "{} ({})",
                    r.framework.as_str(),
                    r.language.as_str()
                ))
                .or_default()
                .push(r);
        }
        let by_framework = frameworks
            .into_iter()
            .map(|(name, members)| group(name, members))
            .collect();
        let by_difficulty = [Difficulty::Easy, Difficulty::Medium, Difficulty::Hard]
            .into_iter()
            .filter_map(|d| {
                let members: Vec<&GenesisRecord> = tasks
                    .iter()
                    .filter(|r| published.task(&r.task).is_some_and(|t| t.difficulty == d))
                    .collect();
                (!members.is_empty()).then(|| group(d.label().to_owned(), members))
            })
            .collect();
        let faults = tasks
            .iter()
            .flat_map(|r| {
                r.faults.iter().map(|f| FaultRow {
                    task: r.task.clone(),
                    kind: f.kind,
                    detail: f.detail.clone(),
                })
            })
            .collect();
        GenesisReport {
            summary: GenesisSummary {
                all: Scores::of(&tasks),
                by_language,
                by_framework,
                by_difficulty,
            },
            meta,
            faults,
            tasks,
            published_source: GENESIS_SOURCE.to_owned(),
            published,
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Writes `report.json`, `report.md` and `report.html` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<ReportFiles, Error> {
        crate::report_format::write_files(dir, self.to_json(), self.to_markdown(), self.to_html())
    }

    fn heading(&self) -> String {
        let m = &self.meta;
        let t = &m.timeouts;
        format!(
            "{} ({} of {} tasks in the checkout); generated repositories in {}; {}; limits: Python build {} s, start {} s, tests {} s; Java {} s, {} s, {} s; run took {}; generated {}",
            m.selection,
            self.summary.all.tasks,
            m.benchmark_tasks,
            m.generated.display(),
            m.isolation,
            t.python.build.as_secs(),
            t.python.start.as_secs(),
            t.python.tests.as_secs(),
            t.java.build.as_secs(),
            t.java.start.as_secs(),
            t.java.tests.as_secs(),
            duration(m.run_wall_ms),
            utc(m.generated_unix)
        )
    }

    /// Rows of the summary table: everything, then each language.
    fn summary_rows(&self) -> Vec<(String, &Scores)> {
        let mut rows = vec![("All".to_owned(), &self.summary.all)];
        rows.extend(
            self.summary
                .by_language
                .iter()
                .map(|g| (g.name.clone(), &g.scores)),
        );
        rows
    }

    fn ours_by_language(&self, language: Language) -> Option<&Scores> {
        self.summary
            .by_language
            .iter()
            .find(|g| g.name == language.label())
            .map(|g| &g.scores)
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# RepoGenesis report\n\n{}\n", self.heading());
        md.push_str("## Summary (this run)\n\n");
        let mut head = vec!["Scope"];
        head.extend(COLUMNS);
        md_table(
            &mut md,
            &head,
            self.summary_rows()
                .into_iter()
                .map(|(name, s)| std::iter::once(name).chain(score_cells(s)).collect())
                .collect(),
        );
        let s = &self.summary.all;
        let _ = writeln!(
            md,
            "Tests: {} passed, {} failed, {} errors, {} skipped. Not run: {} without a repository, {} with a build unavailable here, {} harness errors.\n",
            s.tests.passed,
            s.tests.failed,
            s.tests.errors,
            s.tests.skipped,
            s.no_repository,
            s.build_unavailable,
            s.errors
        );
        md.push_str(DEFINITIONS);
        md.push_str("\n## Tasks\n\n");
        md_table(
            &mut md,
            &TASK_COLUMNS,
            self.tasks
                .iter()
                .map(|r| task_cells(r, &self.published).to_vec())
                .collect(),
        );
        for (title, groups) in [
            (
                "By framework hint (constants.py)",
                &self.summary.by_framework,
            ),
            (
                "By difficulty (paper, Table 11)",
                &self.summary.by_difficulty,
            ),
        ] {
            let _ = writeln!(md, "## {title}\n");
            let mut head = vec!["Group"];
            head.extend(COLUMNS);
            md_table(
                &mut md,
                &head,
                groups
                    .iter()
                    .map(|g| {
                        std::iter::once(g.name.clone())
                            .chain(score_cells(&g.scores))
                            .collect()
                    })
                    .collect(),
            );
        }
        let _ = writeln!(md, "## Faults ({})\n", self.faults.len());
        if self.faults.is_empty() {
            md.push_str("None.\n\n");
        } else {
            md_table(
                &mut md,
                &["Task", "Fault", "Detail"],
                self.faults
                    .iter()
                    .map(|f| vec![f.task.clone(), kind_name(f.kind), clip(&f.detail, 600)])
                    .collect(),
            );
        }
        let notes: Vec<&GenesisRecord> =
            self.tasks.iter().filter(|r| r.message.is_some()).collect();
        if !notes.is_empty() {
            md.push_str("## Notes\n\n");
            for r in notes {
                let _ = writeln!(
                    md,
                    "- {}: {}",
                    r.task,
                    md_cell(r.message.as_deref().unwrap_or(""))
                );
            }
            md.push('\n');
        }
        self.published_markdown(&mut md);
        md
    }

    fn published_markdown(&self, md: &mut String) {
        let p = &self.published;
        md.push_str("## Published results (reference only)\n\n");
        let _ = writeln!(md, "> {}\n", self.published_source);
        let ours = |l: Language| self.ours_by_language(l);
        let pct = |v: f64| format!("{v:.2} %");
        md.push_str("### Pass@1 (Tables 4 and 18)\n\n");
        let mut rows = vec![vec![
            "This run (harness mean)".to_owned(),
            "–".to_owned(),
            ours(Language::Python).map_or("–".into(), |s| s.pass_at_1.cell()),
            ours(Language::Java).map_or("–".into(), |s| s.pass_at_1.cell()),
            "–".to_owned(),
        ]];
        rows.extend(p.pass.iter().map(|r| {
            vec![
                r.method.clone(),
                r.model.clone(),
                pct(r.python),
                pct(r.java),
                if r.in_table_4 { "yes" } else { "" }.to_owned(),
            ]
        }));
        md_table(
            md,
            &["Method", "Model", "Python", "Java", "In Table 4"],
            rows,
        );
        md.push_str("### DSR and AC (Tables 5, 16 and 17)\n\n");
        let mut rows = Vec::new();
        for l in [Language::Java, Language::Python] {
            if let Some(s) = ours(l) {
                rows.push(vec![
                    "This run".to_owned(),
                    "–".to_owned(),
                    l.label().to_owned(),
                    s.dsr.cell(),
                    s.ac_paper.cell(),
                ]);
            }
        }
        rows.extend(p.dsr_ac.iter().map(|r| {
            vec![
                r.method.clone(),
                r.model.clone(),
                r.language.label().to_owned(),
                pct(r.dsr),
                pct(r.ac),
            ]
        }));
        md_table(md, &["Method", "Model", "Language", "DSR", "AC"], rows);
        md.push_str("### DSR by language (Table 7) and Java DSR by framework (Table 12)\n\n");
        let mut rows: Vec<Vec<String>> = p
            .dsr_by_language
            .iter()
            .chain(&p.dsr_by_framework)
            .map(|c| {
                vec![
                    c.name.clone(),
                    c.success.to_string(),
                    c.total.to_string(),
                    pct(c.dsr),
                ]
            })
            .collect();
        for (name, s) in self.summary_rows() {
            rows.push(vec![
                format!("This run: {name}"),
                s.dsr.num.to_string(),
                s.dsr.den.to_string(),
                s.dsr.cell(),
            ]);
        }
        md_table(
            md,
            &["Language or framework", "Success", "Total", "DSR"],
            rows,
        );
        md.push_str("### GenesisAgent-8B (Table 8)\n\n");
        md_table(
            md,
            &[
                "Model",
                "Java DSR",
                "Java AC",
                "Java Pass@1",
                "Python DSR",
                "Python AC",
                "Python Pass@1",
            ],
            p.fine_tune
                .iter()
                .map(|r| {
                    std::iter::once(r.model.clone())
                        .chain(r.java.iter().chain(&r.python).map(|v| pct(*v)))
                        .collect()
                })
                .collect(),
        );
        md.push_str("### Tasks (Tables 3 and 11) beside this run\n\n");
        md_table(
            md,
            &[
                "Task",
                "Paper name",
                "Framework",
                "Difficulty (score)",
                "APIs (paper)",
                "README endpoints here (harness rule / paper rule / routes reading)",
                "Tests (paper)",
                "Test functions / tests reported here",
            ],
            p.tasks
                .iter()
                .map(|t| {
                    let ours = self.tasks.iter().find(|r| r.task == t.task);
                    let endpoints = ours.map_or("–".to_owned(), |r| {
                        format!(
                            "{} / {} / {}",
                            r.facts.endpoints_harness,
                            r.facts.endpoints_paper,
                            r.facts.endpoints_declared
                        )
                    });
                    let tests = ours.map_or("–".to_owned(), |r| {
                        format!(
                            "{} / {}",
                            r.facts.golden_test_functions,
                            r.tests
                                .as_ref()
                                .filter(|_| r.ran())
                                .map_or("–".to_owned(), |x| x.counts.reported().to_string())
                        )
                    });
                    vec![
                        t.task.clone(),
                        t.paper_name.clone(),
                        t.framework.clone(),
                        format!("{} ({:.2})", t.difficulty.label(), t.score),
                        t.apis.to_string(),
                        endpoints,
                        t.tests.to_string(),
                        tests,
                    ]
                })
                .collect(),
        );
    }

    /// The report as one HTML page: inline CSS and SVG, no network
    /// resources, no scripts.
    pub fn to_html(&self) -> String {
        let mut h = String::new();
        h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>RepoGenesis report</title>\n<style>\n");
        h.push_str(STYLE);
        h.push_str("</style>\n</head>\n<body>\n<h1>RepoGenesis report</h1>\n");
        let _ = writeln!(h, "<p>{}</p>", esc(&self.heading()));
        let table = |h: &mut String, head: &[&str], rows: Vec<(bool, Vec<String>)>| {
            h.push_str("<table><tr>");
            for c in head {
                let _ = write!(h, "<th>{}</th>", esc(c));
            }
            h.push_str("</tr>\n");
            for (published, row) in rows {
                let _ = write!(
                    h,
                    "<tr{}>",
                    if published {
                        " class=\"published\""
                    } else {
                        ""
                    }
                );
                for (i, c) in row.iter().enumerate() {
                    let class = if i == 0 { "" } else { " class=\"n\"" };
                    let _ = write!(h, "<td{class}>{}</td>", esc(c));
                }
                h.push_str("</tr>\n");
            }
            h.push_str("</table>\n");
        };
        h.push_str("<h2>Summary (this run)</h2>\n");
        let mut head = vec!["Scope"];
        head.extend(COLUMNS);
        table(
            &mut h,
            &head,
            self.summary_rows()
                .into_iter()
                .map(|(name, s)| (false, std::iter::once(name).chain(score_cells(s)).collect()))
                .collect(),
        );
        let _ = writeln!(
            h,
            "<div class=\"note\">{}</div>",
            esc(DEFINITIONS).replace("\n\n", "<br><br>")
        );

        h.push_str("<h2>This run next to the published results</h2>\n");
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(&self.published_source));
        let p = &self.published;
        let mean = |l: Language| {
            self.ours_by_language(l)
                .map_or(0.0, |s| s.pass_at_1.mean * 100.0)
        };
        let mut pass_bars = vec![Bar {
            label: "This run (harness mean)".to_owned(),
            values: vec![mean(Language::Python), mean(Language::Java)],
            published: false,
        }];
        pass_bars.extend(p.pass.iter().map(|r| Bar {
            label: format!("Published: {} · {}", r.method, r.model),
            values: vec![r.python, r.java],
            published: true,
        }));
        h.push_str(&bar_chart(
            "Pass@1 (%)",
            &pass_bars,
            &[("Python", "#4e79a7"), ("Java", "#f28e2b")],
            Scale::Percent,
        ));
        for language in [Language::Python, Language::Java] {
            let mut bars = Vec::new();
            if let Some(s) = self.ours_by_language(language) {
                bars.push(Bar {
                    label: "This run".into(),
                    values: vec![s.dsr.rate() * 100.0, s.ac_paper.rate() * 100.0],
                    published: false,
                });
            }
            bars.extend(
                p.dsr_ac
                    .iter()
                    .filter(|r| r.language == language)
                    .map(|r| Bar {
                        label: format!("Published: {} · {}", r.method, r.model),
                        values: vec![r.dsr, r.ac],
                        published: true,
                    }),
            );
            h.push_str(&bar_chart(
                &format!("{}: DSR and AC (paper rule) (%)", language.label()),
                &bars,
                &[("DSR", "#59a14f"), ("AC", "#edc948")],
                Scale::Percent,
            ));
        }

        h.push_str("<h2>Tasks</h2>\n");
        table(
            &mut h,
            &TASK_COLUMNS,
            self.tasks
                .iter()
                .map(|r| (false, task_cells(r, &self.published).to_vec()))
                .collect(),
        );
        for (title, groups) in [
            (
                "By framework hint (constants.py)",
                &self.summary.by_framework,
            ),
            (
                "By difficulty (paper, Table 11)",
                &self.summary.by_difficulty,
            ),
        ] {
            let _ = writeln!(h, "<h2>{}</h2>", esc(title));
            let mut head = vec!["Group"];
            head.extend(COLUMNS);
            table(
                &mut h,
                &head,
                groups
                    .iter()
                    .map(|g| {
                        (
                            false,
                            std::iter::once(g.name.clone())
                                .chain(score_cells(&g.scores))
                                .collect(),
                        )
                    })
                    .collect(),
            );
        }
        let _ = writeln!(h, "<h2>Faults ({})</h2>", self.faults.len());
        if self.faults.is_empty() {
            h.push_str("<p>None.</p>\n");
        } else {
            h.push_str("<table><tr><th>Task</th><th>Fault</th><th>Detail</th></tr>\n");
            for f in &self.faults {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td class=\"comments\">{}</td></tr>",
                    esc(&f.task),
                    esc(&kind_name(f.kind)),
                    esc(&clip(&f.detail, 2000))
                );
            }
            h.push_str("</table>\n");
        }
        h.push_str("<h2>Published rows</h2>\n");
        let pct = |v: f64| format!("{v:.2} %");
        table(
            &mut h,
            &["Method", "Model", "Python Pass@1", "Java Pass@1"],
            p.pass
                .iter()
                .map(|r| {
                    (
                        true,
                        vec![
                            r.method.clone(),
                            r.model.clone(),
                            pct(r.python),
                            pct(r.java),
                        ],
                    )
                })
                .collect(),
        );
        table(
            &mut h,
            &["Method", "Model", "Language", "DSR", "AC"],
            p.dsr_ac
                .iter()
                .map(|r| {
                    (
                        true,
                        vec![
                            r.method.clone(),
                            r.model.clone(),
                            r.language.label().to_owned(),
                            pct(r.dsr),
                            pct(r.ac),
                        ],
                    )
                })
                .collect(),
        );
        table(
            &mut h,
            &["Language or framework", "Success", "Total", "DSR"],
            p.dsr_by_language
                .iter()
                .chain(&p.dsr_by_framework)
                .map(|c| {
                    (
                        true,
                        vec![
                            c.name.clone(),
                            c.success.to_string(),
                            c.total.to_string(),
                            pct(c.dsr),
                        ],
                    )
                })
                .collect(),
        );
        table(
            &mut h,
            &[
                "Task",
                "Paper name",
                "Framework",
                "Difficulty",
                "APIs",
                "Tests",
            ],
            p.tasks
                .iter()
                .map(|t| {
                    (
                        true,
                        vec![
                            t.task.clone(),
                            t.paper_name.clone(),
                            t.framework.clone(),
                            format!("{} ({:.2})", t.difficulty.label(), t.score),
                            t.apis.to_string(),
                            t.tests.to_string(),
                        ],
                    )
                })
                .collect(),
        );
        h.push_str("</body>\n</html>\n");
        h
    }
}

/// A Markdown table.
fn md_table(md: &mut String, head: &[&str], rows: Vec<Vec<String>>) {
    let _ = writeln!(md, "| {} |", head.join(" | "));
    let _ = writeln!(md, "|{}", " --- |".repeat(head.len()));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    md.push('\n');
}

fn kind_name(kind: FaultKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// What each column means, under the tables.
const DEFINITIONS: &str = "DSR (harness): the service answered on a health path (/, /health, /api/health, /api/v1/health, /actuator/health) or its port, or was still running at the end of the startup wait (eval_harness/scripts/entrypoint.sh). \
DSR (test_dsr_repos.py): dependencies installed, a start.sh found, and the process alive at the end of the window or ended with a success message. \
Answered: a health path or the port answered during the wait.\n\n\
Pass@1 (harness mean): per repository passed / (passed + failed + errors), skipped left out (Java: / tests run), averaged over repositories with at least one test (eval_harness/reporting.py). \
Pass@1 (all tests pass): the paper's definition, repositories whose every golden test passed.\n\n\
AC (harness mean): eval_harness/api_coverage.py per repository, averaged over repositories whose README declares an endpoint. \
AC (paper rule, summed): calculate_api_coverage_agents.py, implemented over declared endpoints summed over repositories, as the paper's tables. \
Routes: README endpoints served by a route repo-graph finds in code (method and path), summed.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_reports_render() {
        let meta = GenesisMeta {
            root: PathBuf::from("/x"),
            generated: PathBuf::from("/g"),
            selection: "all tasks".into(),
            benchmark_tasks: 30,
            isolation: "namespaces".into(),
            jobs: 1,
            timeouts: Timeouts::BENCHMARK,
            run_wall_ms: 0,
            generated_unix: 0,
        };
        let report = GenesisReport::new(meta, &[]);
        assert_eq!(report.summary.all.tasks, 0);
        assert!(report.to_markdown().contains("| All | 0 | 0 | n/a |"));
        let html = report.to_html();
        for needle in ["<script", "<link", "@import", "url("] {
            assert!(!html.contains(needle), "{needle}");
        }
    }
}
