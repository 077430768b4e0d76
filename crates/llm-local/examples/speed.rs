//! Measures the embedded model: load time, prompt processing and
//! generation speed.
//!
//! ```sh
//! cargo xtask model   # once
//! cargo run --release -p llm-local --example speed -- [MODEL.gguf] [--runs N]
//! ```
//!
//! Prompt speed is the time of a call with a fresh cache and one output
//! token, divided into its prompt tokens. Generation speed is the extra
//! time of a call that writes up to 128 tokens, divided into its extra
//! tokens. The median of the runs is printed.

use std::path::PathBuf;
use std::time::Instant;

use llm::{ChatRequest, Message};
use llm_local::{LocalModel, LocalOptions, configured_model_path};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut path: Option<PathBuf> = None;
    let mut runs = 3usize;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--runs" => runs = iter.next().ok_or("--runs takes a number")?.parse()?,
            other => path = Some(PathBuf::from(other)),
        }
    }
    let path = path
        .or_else(configured_model_path)
        .ok_or("no model: run `cargo xtask model` or pass a GGUF file")?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
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
        let loaded = LocalModel::load(&path, LocalOptions::default())?;
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
