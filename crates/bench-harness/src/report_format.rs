//! What both benchmarks' reports are made of: the three files a report is
//! written as (`report.json`, `report.md`, a self-contained `report.html`)
//! and the formatting they share (numbers, durations, dates, escaping,
//! inline SVG bar charts).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Error;

/// The files a report was written as ([`crate::Report::write`], and
/// RepoGenesis's report alike).
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
}
