//! Measures the embedded model: load time, prompt processing and
//! generation speed.
//!
//! ```sh
//! cargo xtask model   # once
//! cargo run --release -p llm-local --example speed -- [MODEL.gguf] [--runs N]
//! cargo run --release -p llm-local --example speed -- [MODEL.gguf] \
//!     --prompt 512,4096 --depth 512,4096 --gen 64 --threads 2 --runs 2 --json
//! ```
//!
//! Without `--prompt`/`--depth`, one chat prompt of about 500 tokens is
//! measured: prompt speed is the time of a call with a fresh cache and one
//! output token, divided into its prompt tokens; generation speed is the
//! extra time of a call that writes up to 128 tokens, divided into its
//! extra tokens. The median of the runs is printed.
//!
//! With `--prompt`/`--depth` (what `cargo xtask bench model` runs, to
//! compare with llama.cpp's `llama-bench -p 512,4096 -n 0` and
//! `-p 0 -n 64 -d 512,4096`): for each size, a chat prompt of exactly that
//! many tokens is processed with a fresh cache and one output token
//! (prompt tok/s); for each depth, the same call is then repeated with
//! `--gen` output tokens, so the cache holds all but the last prompt token
//! and the call is one token of prompt plus the generated tokens, each
//! attending to the whole context (generation tok/s after that context).
//! The prompt asks the model to repeat the text, so greedy decoding rarely
//! stops early; the tokens actually generated are reported. Load time is
//! the median of `--runs` loads (each after the previous model is
//! dropped); memory is the process's peak resident set (`VmHWM`) after
//! loading and at the end. `--json` prints one JSON object on stdout and
//! the human-readable lines on stderr. `--print-model` prints the model
//! file it would load (the installed default without an argument) and
//! exits.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use llm::{ChatRequest, Message};
use llm_local::{LocalModel, LocalOptions, configured_model_path};

type Error = Box<dyn std::error::Error>;

/// The middle value, or the mean of the two middle ones for an even
/// count (the upper one alone favoured our speeds with `--runs 2`).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The process's peak resident set in KiB (`VmHWM`), where /proc has it.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

fn parse_list(value: Option<&String>, flag: &str) -> Result<Vec<usize>, Error> {
    let value = value.ok_or_else(|| format!("{flag} takes a comma-separated list of numbers"))?;
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim()
                .parse::<usize>()
                .map_err(|e| format!("{flag} {s}: {e}").into())
        })
        .collect()
}

struct Args {
    path: Option<PathBuf>,
    runs: usize,
    threads: Option<usize>,
    prompts: Vec<usize>,
    depths: Vec<usize>,
    generate: usize,
    json: bool,
    print_model: bool,
}

fn parse_args() -> Result<Args, Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut parsed = Args {
        path: None,
        runs: 3,
        threads: None,
        prompts: Vec::new(),
        depths: Vec::new(),
        generate: 64,
        json: false,
        print_model: false,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let number = |value: Option<&String>, flag: &str| -> Result<usize, Error> {
            Ok(value
                .ok_or_else(|| format!("{flag} takes a number"))?
                .parse()?)
        };
        match arg.as_str() {
            "--runs" => parsed.runs = number(iter.next(), "--runs")?.max(1),
            "--threads" => parsed.threads = Some(number(iter.next(), "--threads")?.max(1)),
            "--gen" => parsed.generate = number(iter.next(), "--gen")?.max(1),
            "--prompt" => parsed.prompts = parse_list(iter.next(), "--prompt")?,
            "--depth" => parsed.depths = parse_list(iter.next(), "--depth")?,
            "--json" => parsed.json = true,
            "--print-model" => parsed.print_model = true,
            flag if flag.starts_with("--") => {
                return Err(format!(
                    "unknown flag {flag}; usage: speed [MODEL.gguf] [--runs N] [--threads N] \
                     [--prompt N,...] [--depth N,...] [--gen N] [--json] [--print-model]"
                )
                .into());
            }
            other => parsed.path = Some(PathBuf::from(other)),
        }
    }
    Ok(parsed)
}

fn main() -> Result<(), Error> {
    let args = parse_args()?;
    if let Some(threads) = args.threads {
        // The engine splits its work over rayon's global pool.
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()?;
    }
    let path = args
        .path
        .clone()
        .or_else(configured_model_path)
        .ok_or("no model: run `cargo xtask model` or pass a GGUF file")?;
    if args.print_model {
        println!("{}", path.display());
        return Ok(());
    }
    if args.prompts.is_empty() && args.depths.is_empty() {
        return chat_speed(&path, args.runs);
    }
    sizes_speed(&path, &args)
}

/// The original measure: one chat prompt of about 500 tokens.
fn chat_speed(path: &PathBuf, runs: usize) -> Result<(), Error> {
    let threads = rayon::current_num_threads();
    println!("model: {} ({threads} threads)", path.display());

    // About 500 prompt tokens of ordinary prose and code.
    let context = "The repository has a module `pdf.reader` with a class PdfReader that opens \
        a file, parses the cross-reference table and exposes pages; each page has extract_text(). "
        .repeat(12);
    let prompt = ChatRequest::new(vec![
        Message::system("You are a helpful assistant that explains code."),
        Message::user(format!(
            "{context}\nWrite a long, detailed explanation of how to extract the text of a PDF with this library."
        )),
    ]);

    let mut loads = Vec::new();
    let mut model = None;
    for _ in 0..runs {
        let started = Instant::now();
        let loaded = LocalModel::load(path, LocalOptions::default())?;
        loads.push(started.elapsed().as_secs_f64());
        model = Some(loaded);
    }
    let model = model.ok_or("no run")?;
    let prompt_tokens = model.prompt_tokens(&prompt).len();
    let (mut prompt_speeds, mut gen_speeds, mut generated) = (Vec::new(), Vec::new(), 0);
    let mut text = String::new();
    for _ in 0..runs {
        model.reset_cache();
        let started = Instant::now();
        model.complete_blocking(&prompt.clone().with_max_tokens(1))?;
        let prefill = started.elapsed().as_secs_f64();
        prompt_speeds.push(prompt_tokens as f64 / prefill);

        model.reset_cache();
        let started = Instant::now();
        let answer = model.complete_blocking(&prompt.clone().with_max_tokens(129))?;
        let total = started.elapsed().as_secs_f64();
        let extra = answer.usage.completion_tokens.saturating_sub(1);
        generated = answer.usage.completion_tokens;
        text = answer.content.unwrap_or_default();
        if extra > 0 {
            gen_speeds.push(extra as f64 / (total - prefill).max(1e-9));
        }
    }
    println!(
        "load {:.0} ms | prompt {prompt_tokens} tokens at {:.0} tok/s | generation {:.1} tok/s ({generated} tokens)",
        median(loads) * 1000.0,
        median(prompt_speeds),
        median(gen_speeds),
    );
    println!("answer: {}", text.chars().take(300).collect::<String>());
    Ok(())
}

/// The instruction after the filler text: asks for a long answer.
const INSTRUCTION: &str = "\n\nRepeat the code above exactly, line by line, from the start.";

/// Filler of `lines` lines of Python-like code, varied so it tokenizes
/// like real code, plus `pad` extra short words.
fn filler(lines: usize, pad: usize) -> String {
    use std::fmt::Write as _;
    let names = [
        "reader", "pages", "offset", "table", "stream", "buffer", "index", "count",
    ];
    let mut text = String::new();
    for i in 0..lines {
        let name = names[i % names.len()];
        let other = names[(i * 5 + 3) % names.len()];
        let _ = writeln!(
            text,
            "    {name}_{i} = parse({other}, {}) + {}",
            i * 7 % 13,
            i % 10
        );
    }
    for _ in 0..pad {
        text.push_str(" x");
    }
    text
}

fn request(lines: usize, pad: usize) -> ChatRequest {
    ChatRequest::new(vec![Message::user(format!(
        "{}{INSTRUCTION}",
        filler(lines, pad)
    ))])
}

/// A chat request whose prompt is `tokens` tokens long (as close as the
/// tokenizer allows, never longer unless the template alone is), and its
/// actual length.
fn request_of(model: &LocalModel, tokens: usize) -> (ChatRequest, usize) {
    let count = |lines, pad| model.prompt_tokens(&request(lines, pad)).len();
    // The most lines that stay within `tokens` (token counts grow with lines).
    let (mut low, mut high) = (0usize, tokens.max(1));
    while low < high {
        let mid = (low + high).div_ceil(2);
        if count(mid, 0) <= tokens {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    let lines = low;
    let mut pad = 0;
    while count(lines, pad + 1) <= tokens && pad < 64 {
        pad += 1;
    }
    (request(lines, pad), count(lines, pad))
}

fn sizes_speed(path: &PathBuf, args: &Args) -> Result<(), Error> {
    let threads = rayon::current_num_threads();
    let say = |line: String| {
        if args.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    say(format!("model: {} ({threads} threads)", path.display()));

    let mut loads = Vec::new();
    let mut model: Option<LocalModel> = None;
    for _ in 0..args.runs {
        // Dropped first, so the peak is one model's.
        drop(model.take());
        let started = Instant::now();
        let loaded = LocalModel::load(path, LocalOptions::default())?;
        loads.push(started.elapsed().as_secs_f64());
        model = Some(loaded);
    }
    let model = model.ok_or("no run")?;
    let rss_after_load = peak_rss_kib();
    let load_ms = median(loads.clone()) * 1000.0;
    say(format!(
        "load {load_ms:.0} ms (runs: {}), peak RSS after load {} KiB",
        loads
            .iter()
            .map(|s| format!("{:.0}", s * 1000.0))
            .collect::<Vec<_>>()
            .join(", "),
        rss_after_load.map_or("?".into(), |k| k.to_string())
    ));

    let prompts: BTreeSet<usize> = args.prompts.iter().copied().collect();
    let depths: BTreeSet<usize> = args.depths.iter().copied().collect();
    let mut prompt_results = Vec::new();
    let mut generation_results = Vec::new();
    for &size in prompts.union(&depths) {
        let (request, actual) = request_of(&model, size);
        if actual + args.generate > model.context_length() {
            return Err(format!(
                "a prompt of {actual} tokens and {} generated do not fit the context window of {}",
                args.generate,
                model.context_length()
            )
            .into());
        }
        let (mut prompt_speeds, mut gen_speeds, mut generated) = (Vec::new(), Vec::new(), 0);
        for _ in 0..args.runs {
            model.reset_cache();
            let started = Instant::now();
            model.complete_blocking(&request.clone().with_max_tokens(1))?;
            let prefill = started.elapsed().as_secs_f64();
            prompt_speeds.push(actual as f64 / prefill);
            if depths.contains(&size) {
                // The cache holds the prompt but its last token.
                let started = Instant::now();
                let answer = model
                    .complete_blocking(&request.clone().with_max_tokens(args.generate as u32))?;
                let total = started.elapsed().as_secs_f64();
                generated = answer.usage.completion_tokens;
                gen_speeds.push(generated as f64 / total.max(1e-9));
            }
        }
        if prompts.contains(&size) {
            let tok_s = median(prompt_speeds.clone());
            say(format!(
                "prompt {actual} tokens: {tok_s:.1} tok/s (runs: {})",
                list(&prompt_speeds)
            ));
            prompt_results.push(serde_json::json!({
                "requested": size,
                "tokens": actual,
                "tok_s": tok_s,
                "runs_tok_s": prompt_speeds,
            }));
        }
        if depths.contains(&size) {
            let tok_s = median(gen_speeds.clone());
            say(format!(
                "generation of {generated} tokens after {actual}: {tok_s:.2} tok/s (runs: {})",
                list(&gen_speeds)
            ));
            generation_results.push(serde_json::json!({
                "requested_depth": size,
                "depth": actual,
                "tokens": generated,
                "tok_s": tok_s,
                "runs_tok_s": gen_speeds,
            }));
        }
    }
    let peak = peak_rss_kib();
    say(format!(
        "peak RSS {} KiB",
        peak.map_or("?".into(), |k| k.to_string())
    ));
    if args.json {
        let report = serde_json::json!({
            "engine": "llm-local",
            "model": path.display().to_string(),
            "threads": threads,
            "runs": args.runs,
            "load_ms": load_ms,
            "runs_load_ms": loads.iter().map(|s| s * 1000.0).collect::<Vec<_>>(),
            "rss_after_load_kib": rss_after_load,
            "peak_rss_kib": peak,
            "context_length": model.context_length(),
            "prompt": prompt_results,
            "generation": generation_results,
        });
        println!("{report}");
    }
    Ok(())
}

fn list(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.1}"))
        .collect::<Vec<_>>()
        .join(", ")
}
