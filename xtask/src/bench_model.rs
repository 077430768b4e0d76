//! `cargo xtask bench model`: the embedded engine (`llm-local`) against
//! llama.cpp on the same GGUF file and thread count.
//!
//! llama.cpp comes from the source distribution of `llama-cpp-python`
//! (pinned, SHA-256 checked), which vendors it under `vendor/llama.cpp`;
//! it is built once, CPU only, for the native architecture, in Release,
//! into `target/llama.cpp/build/bin` with cmake and ninja from PyPI
//! (`pip install --target target/llama.cpp/tools`), and reused while
//! `llama-bench` is there. Only `llama-bench`, then `llama-simple` (load
//! time and memory) and `llama-completion` (a reference for correctness
//! checks) are built.
//!
//! Both engines measure, in the same run: prompt tok/s at each `--prompt`
//! size (default 512 and 4,096 tokens), generation tok/s of `--gen` tokens
//! (default 64) after each `--depth` tokens of context (default 512 and
//! 4,096), load time and peak resident memory. llama.cpp runs
//! `llama-bench -p 512,4096 -n 0` and `llama-bench -p 0 -n 64 -d 512,4096`
//! (each under `/usr/bin/time -v`), and `llama-simple -n 1` for its load
//! time (model load plus the first, 1-token evaluation: `load time` of its
//! performance report) and its memory after loading. Ours runs the
//! `speed` example of `llm-local` on the same work in the same two
//! processes (`--prompt 512,4096` then `--depth 512,4096 --gen 64`, each
//! with `--json`), so each peak resident set covers the same work; its
//! load time includes a one-token self-check. The CPU and the load average
//! before and after are recorded; the raw results go to
//! `target/bench/model-<UTC timestamp>.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::SystemTime;

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// The `llama-cpp-python` source distribution llama.cpp is built from.
const LLAMA_CPP_PYTHON: &str = "0.3.36";
/// SHA-256 of `llama_cpp_python-0.3.36.tar.gz` as downloaded from PyPI.
const LLAMA_CPP_PYTHON_SHA256: &str =
    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e";
/// The build tools, from PyPI.
const CMAKE: &str = "cmake==4.4.5";
const NINJA: &str = "ninja==1.13.2";

const USAGE: &str = "usage: cargo xtask bench model [--model FILE] [--threads N] [--runs N] \
    [--prompt N,...] [--depth N,...] [--gen N] [--no-ours] [--no-llama] [--no-warmup] [--build-only]\n\n  \
    --model FILE     the GGUF both engines run (default: the installed default model)\n  \
    --threads N      threads of both engines (default 2)\n  \
    --runs N         repetitions of each measure (default 2; the median is reported)\n  \
    --prompt N,...   prompt sizes (default 512,4096)\n  \
    --depth N,...    context before the generated tokens (default 512,4096)\n  \
    --gen N          generated tokens (default 64)\n  \
    --no-ours        llama.cpp only (our engine cannot load every model yet)\n  \
    --no-llama       our engine only\n  \
    --no-warmup      no llama-bench warmup run (halves its time; ours never warms up)\n  \
    --build-only     build llama.cpp and stop";

struct Options {
    model: Option<PathBuf>,
    threads: usize,
    runs: usize,
    prompts: Vec<usize>,
    depths: Vec<usize>,
    generate: usize,
    ours: bool,
    llama: bool,
    build_only: bool,
    warmup: bool,
}

fn parse(rest: &[&str]) -> anyhow::Result<Options> {
    let mut options = Options {
        model: None,
        threads: 2,
        runs: 2,
        prompts: vec![512, 4096],
        depths: vec![512, 4096],
        generate: 64,
        ours: true,
        llama: true,
        build_only: false,
        warmup: true,
    };
    let list = |value: Option<&&str>, flag: &str| -> anyhow::Result<Vec<usize>> {
        let value = value.with_context(|| format!("{flag} takes a list: N,N,...\n{USAGE}"))?;
        value
            .split(',')
            .map(|n| n.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("{flag} {value}: not a list of numbers"))
    };
    let number = |value: Option<&&str>, flag: &str| -> anyhow::Result<usize> {
        let value = value.with_context(|| format!("{flag} takes a number\n{USAGE}"))?;
        value
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .with_context(|| format!("{flag} {value}: not a positive number"))
    };
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--model" => {
                options.model = Some(PathBuf::from(
                    args.next()
                        .with_context(|| format!("--model takes a file\n{USAGE}"))?,
                ))
            }
            "--threads" => options.threads = number(args.next(), "--threads")?,
            "--runs" => options.runs = number(args.next(), "--runs")?,
            "--gen" => options.generate = number(args.next(), "--gen")?,
            "--prompt" => options.prompts = list(args.next(), "--prompt")?,
            "--depth" => options.depths = list(args.next(), "--depth")?,
            "--no-ours" => options.ours = false,
            "--no-llama" => options.llama = false,
            "--build-only" => options.build_only = true,
            "--no-warmup" => options.warmup = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    Ok(options)
}

/// Runs the comparison; `rest` are the flags of [`USAGE`].
pub(crate) fn bench(rest: &[&str]) -> anyhow::Result<()> {
    let options = parse(rest)?;
    let bin = if options.llama {
        Some(ensure_llama_cpp()?)
    } else {
        None
    };
    if options.build_only {
        return Ok(());
    }
    // Built before anything is measured, so no build runs meanwhile.
    let speed = if options.ours || options.model.is_none() {
        super::run(super::cargo().args([
            "build",
            "--release",
            "-p",
            "llm-local",
            "--example",
            "speed",
        ]))?;
        Some(super::target_dir().join("release/examples/speed"))
    } else {
        None
    };
    let model = match (&options.model, &speed) {
        (Some(model), _) => model.clone(),
        (None, Some(speed)) => default_model(speed)?,
        (None, None) => bail!("no model: pass --model FILE"),
    };
    if !model.is_file() {
        bail!("{} is not a file", model.display());
    }
    let model = model
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", model.display()))?;

    let cpu = cpu_model();
    let load_before = load_average();
    eprintln!(
        "model {} | {} threads | CPU {cpu} | load average {load_before}",
        model.display(),
        options.threads
    );
    let started = SystemTime::now();
    let llama = match &bin {
        Some(bin) => Some(measure_llama(bin, &model, &options)?),
        None => None,
    };
    let ours = match (&speed, options.ours) {
        (Some(speed), true) => Some(measure_ours(speed, &model, &options)),
        _ => None,
    };
    let load_after = load_average();

    let table = table(&options, llama.as_ref(), ours.as_ref());
    println!(
        "\n{} | {} threads | CPU {cpu}\nload average before {load_before}, after {load_after}\n\n{table}",
        model.display(),
        options.threads
    );
    let out_dir = super::workspace_root().join("target/bench");
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let out = out_dir.join(format!(
        "model-{}.json",
        super::genesis::utc_timestamp(started)
    ));
    let report = json!({
        "model": model.display().to_string(),
        "model_bytes": std::fs::metadata(&model).map(|m| m.len()).ok(),
        "threads": options.threads,
        "runs": options.runs,
        "cpu": cpu,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "llama_cpp": llama,
        "llama_cpp_python_sdist": format!("llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"),
        "llm_local": ours.map(|r| r.unwrap_or_else(|e| json!({ "error": format!("{e:#}") }))),
        "table": table,
    });
    std::fs::write(&out, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("raw results: {}", out.display());
    Ok(())
}

/// `target/llama.cpp/build/bin`, with `llama-bench` built (and
/// `llama-simple`, `llama-completion` when they build).
fn ensure_llama_cpp() -> anyhow::Result<PathBuf> {
    let root = super::target_dir().join("llama.cpp");
    let build = root.join("build");
    let bin = build.join("bin");
    if bin.join("llama-bench").is_file() && bin.join("llama-simple").is_file() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let name = format!("llama_cpp_python-{LLAMA_CPP_PYTHON}");
    let archive = root.join(format!("{name}.tar.gz"));
    if !archive.is_file() {
        eprintln!("downloading llama-cpp-python=={LLAMA_CPP_PYTHON} (source) from PyPI");
        super::run(
            Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", "--no-binary"])
                .arg("llama-cpp-python")
                .args(["-q", "--disable-pip-version-check", "-d"])
                .arg(&root)
                .arg(format!("llama-cpp-python=={LLAMA_CPP_PYTHON}")),
        )
        .context(
            "pip download failed; check that python3 and pip are installed and PyPI is reachable",
        )?;
    }
    let digest = sha256_hex(&archive)?;
    if digest != LLAMA_CPP_PYTHON_SHA256 {
        bail!(
            "{} has SHA-256 {digest}, expected {LLAMA_CPP_PYTHON_SHA256}; delete it and retry",
            archive.display()
        );
    }
    let source = root.join(&name).join("vendor/llama.cpp");
    if !source.join("CMakeLists.txt").is_file() {
        super::run(
            Command::new("tar")
                .arg("xzf")
                .arg(&archive)
                .arg("-C")
                .arg(&root),
        )?;
    }
    let tools = root.join("tools");
    let cmake = tools.join("cmake/data/bin/cmake");
    let ninja = tools.join("bin/ninja");
    if !cmake.is_file() || !ninja.is_file() {
        eprintln!("installing {CMAKE} {NINJA} into {}", tools.display());
        super::run(
            Command::new("python3")
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
                .arg("--target")
                .arg(&tools)
                .args([CMAKE, NINJA]),
        )
        .context("pip install of cmake and ninja failed; is PyPI reachable?")?;
    }
    if !build.join("build.ninja").is_file() {
        super::run(
            Command::new(&cmake)
                .arg("-S")
                .arg(&source)
                .arg("-B")
                .arg(&build)
                .args(["-G", "Ninja"])
                .arg(format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()))
                .args([
                    "-DCMAKE_BUILD_TYPE=Release",
                    "-DGGML_NATIVE=ON",
                    "-DBUILD_SHARED_LIBS=OFF",
                    "-DLLAMA_BUILD_TESTS=OFF",
                    "-DLLAMA_BUILD_SERVER=OFF",
                    "-DLLAMA_BUILD_UI=OFF",
                    "-DLLAMA_OPENSSL=OFF",
                    "-DGGML_CUDA=OFF",
                    "-DGGML_VULKAN=OFF",
                    "-DGGML_METAL=OFF",
                ]),
        )
        .context("configuring llama.cpp failed (needs a C and C++ compiler)")?;
    }
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!("building llama-bench (several minutes; once)");
    super::run(
        Command::new(&ninja)
            .arg("-C")
            .arg(&build)
            .arg(format!("-j{jobs}"))
            .arg("llama-bench"),
    )
    .context("building llama-bench failed")?;
    // Cheap once the libraries are built.
    if let Err(error) = super::run(
        Command::new(&ninja)
            .arg("-C")
            .arg(&build)
            .arg(format!("-j{jobs}"))
            .args(["llama-simple", "llama-completion"]),
    ) {
        eprintln!("warning: llama-simple/llama-completion did not build ({error:#})");
    }
    Ok(bin)
}

fn sha256_hex(path: &Path) -> anyhow::Result<String> {
    use sha2::{Digest, Sha256};
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(buf.get(..n).unwrap_or_default());
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The model the `speed` example loads when given none.
fn default_model(speed: &Path) -> anyhow::Result<PathBuf> {
    let output = Command::new(speed)
        .arg("--print-model")
        .output()
        .with_context(|| format!("cannot run {}", speed.display()))?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if !output.status.success() || path.is_empty() {
        bail!(
            "no default model ({}): run `cargo xtask model` or pass --model FILE",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(PathBuf::from(path))
}

/// `Model name` of lscpu.
fn cpu_model() -> String {
    Command::new("lscpu")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find_map(|l| l.strip_prefix("Model name:"))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The three load averages of /proc/loadavg.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// A command's output, with its peak resident set in KiB when
/// `/usr/bin/time` is there to measure it.
struct Measured {
    output: Output,
    peak_rss_kib: Option<u64>,
}

fn run_measured(command: &mut Command) -> anyhow::Result<Measured> {
    let time = Path::new("/usr/bin/time");
    let report = super::target_dir().join("bench/time.txt");
    if let Some(dir) = report.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let shown = format!("{command:?}");
    let mut wrapped = if time.is_file() {
        let mut wrapped = Command::new(time);
        wrapped
            .arg("-v")
            .arg("-o")
            .arg(&report)
            .arg(command.get_program())
            .args(command.get_args());
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => wrapped.env(key, value),
                None => wrapped.env_remove(key),
            };
        }
        wrapped
    } else {
        eprintln!("note: no /usr/bin/time, peak memory of {shown} not measured");
        std::mem::replace(command, Command::new("true"))
    };
    eprintln!("running {shown}");
    let output = wrapped
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .with_context(|| format!("cannot start {shown}"))?;
    if !output.status.success() {
        bail!(
            "{shown} failed with {}:\n{}",
            output.status,
            tail(&String::from_utf8_lossy(&output.stderr), 20)
        );
    }
    let peak_rss_kib = time
        .is_file()
        .then(|| std::fs::read_to_string(&report).ok())
        .flatten()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
                .and_then(|v| v.trim().parse().ok())
        });
    Ok(Measured {
        output,
        peak_rss_kib,
    })
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn join(values: &[usize]) -> String {
    values
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// llama.cpp's numbers: `llama-bench` for speed, `llama-simple` for the
/// load time and the memory after loading.
fn measure_llama(bin: &Path, model: &Path, options: &Options) -> anyhow::Result<Value> {
    let threads = options.threads.to_string();
    let runs = options.runs.to_string();
    let mut load = None;
    if bin.join("llama-simple").is_file() {
        let simple = run_measured(
            Command::new(bin.join("llama-simple"))
                .arg("-m")
                .arg(model)
                .args(["-n", "1", "Hello"]),
        )?;
        let stderr = String::from_utf8_lossy(&simple.output.stderr);
        let load_ms = stderr.lines().find_map(|l| {
            let (_, rest) = l.split_once("load time =")?;
            rest.trim()
                .trim_end_matches("ms")
                .trim()
                .parse::<f64>()
                .ok()
        });
        load = Some(json!({ "load_ms": load_ms, "peak_rss_kib": simple.peak_rss_kib }));
    }
    let bench = |args: Vec<String>| -> anyhow::Result<(Vec<Value>, Option<u64>)> {
        let measured = run_measured(
            Command::new(bin.join("llama-bench"))
                .arg("-m")
                .arg(model)
                .args(["-t", &threads, "-r", &runs, "-o", "json"])
                // Repacked weights go to the AMX buffer type on CPUs that
                // report AMX; in this machine's VM its prompt kernel
                // crashes (SIGSEGV in ggml_backend_amx_mul_mat).
                .args(["--repack", "0"])
                .args(if options.warmup {
                    &[][..]
                } else {
                    &["--no-warmup"][..]
                })
                .args(args),
        )?;
        let rows: Vec<Value> = serde_json::from_slice(&measured.output.stdout)
            .context("llama-bench did not print a JSON array")?;
        Ok((rows, measured.peak_rss_kib))
    };
    let mut rows = Vec::new();
    let mut peak = None::<u64>;
    if !options.prompts.is_empty() {
        let (found, rss) = bench(vec![
            "-p".into(),
            join(&options.prompts),
            "-n".into(),
            "0".into(),
        ])?;
        rows.extend(found);
        peak = peak.max(rss);
    }
    if !options.depths.is_empty() {
        let (found, rss) = bench(vec![
            "-p".into(),
            "0".into(),
            "-n".into(),
            options.generate.to_string(),
            "-d".into(),
            join(&options.depths),
        ])?;
        rows.extend(found);
        peak = peak.max(rss);
    }
    let field = |row: &Value, name: &str| row.get(name).and_then(Value::as_u64).unwrap_or(0);
    let prompt: Vec<Value> = rows
        .iter()
        .filter(|r| field(r, "n_gen") == 0 && field(r, "n_depth") == 0)
        .map(|r| json!({ "tokens": field(r, "n_prompt"), "tok_s": r.get("avg_ts") }))
        .collect();
    let generation: Vec<Value> = rows
        .iter()
        .filter(|r| field(r, "n_prompt") == 0)
        .map(|r| {
            json!({
                "depth": field(r, "n_depth"),
                "tokens": field(r, "n_gen"),
                "tok_s": r.get("avg_ts"),
            })
        })
        .collect();
    let build = rows.first().map(|r| {
        json!({
            "commit": r.get("build_commit"),
            "number": r.get("build_number"),
            "cpu_info": r.get("cpu_info"),
        })
    });
    Ok(json!({
        "engine": "llama.cpp",
        "build": build,
        "load_ms": load.as_ref().and_then(|l| l.get("load_ms").cloned()),
        "rss_after_load_kib": load.as_ref().and_then(|l| l.get("peak_rss_kib").cloned()),
        "peak_rss_kib": peak,
        "prompt": prompt,
        "generation": generation,
        "llama_bench": rows,
    }))
}

/// Our numbers, from the `speed` example.
/// Our engine on the same work as llama.cpp, in the same two processes:
/// prompts (as `llama-bench -p ... -n 0`), then generation at depths (as
/// `llama-bench -p 0 -n ... -d ...`). Peak memory is the larger of the two
/// processes' peaks, as for llama.cpp; each process's own is kept too.
fn measure_ours(speed: &Path, model: &Path, options: &Options) -> anyhow::Result<Value> {
    let run = |what: &str, list: &[usize]| -> anyhow::Result<Value> {
        let flag = format!("--{what}");
        let measured = run_measured(
            Command::new(speed)
                .arg(model)
                .args(["--threads", &options.threads.to_string()])
                .args(["--runs", &options.runs.to_string()])
                .args([flag.as_str(), &join(list)])
                .args(["--gen", &options.generate.to_string()])
                .arg("--json")
                .env("RAYON_NUM_THREADS", options.threads.to_string()),
        )
        .inspect_err(|error| eprintln!("warning: our engine failed: {error:#}"))?;
        let stdout = String::from_utf8_lossy(&measured.output.stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .context("the speed example printed no JSON")?;
        let mut report: Value = serde_json::from_str(line).context("the speed example's JSON")?;
        report["process_peak_rss_kib"] = json!(measured.peak_rss_kib);
        Ok(report)
    };
    let mut report = run("prompt", &options.prompts)?;
    let depths = run("depth", &options.depths)?;
    report["generation"] = depths["generation"].clone();
    let peak = |r: &Value| r.get("process_peak_rss_kib").and_then(Value::as_u64);
    report["processes"] = json!([
        {"work": "prompts", "peak_rss_kib": peak(&report)},
        {"work": "depths", "peak_rss_kib": peak(&depths)},
    ]);
    report["process_peak_rss_kib"] = json!(peak(&report).max(peak(&depths)));
    Ok(report)
}

/// The comparison as a Markdown table.
fn table(options: &Options, llama: Option<&Value>, ours: Option<&anyhow::Result<Value>>) -> String {
    let ours = ours.and_then(|r| r.as_ref().ok());
    let mut rows: Vec<(String, Option<f64>, Option<f64>)> = Vec::new();
    let find = |report: Option<&Value>, list: &str, key: &str, value: usize| {
        report
            .and_then(|r| r.get(list))
            .and_then(Value::as_array)
            .and_then(|items| {
                items.iter().find(|i| {
                    i.get(key)
                        .and_then(Value::as_u64)
                        .is_some_and(|v| v == value as u64)
                })
            })
            .and_then(|i| i.get("tok_s"))
            .and_then(Value::as_f64)
    };
    for &size in &options.prompts {
        rows.push((
            format!("prompt {size} tokens (tok/s)"),
            find(llama, "prompt", "tokens", size),
            find(ours, "prompt", "requested", size),
        ));
    }
    for &depth in &options.depths {
        rows.push((
            format!("generation {} after {depth} (tok/s)", options.generate),
            find(llama, "generation", "depth", depth),
            find(ours, "generation", "requested_depth", depth),
        ));
    }
    let number =
        |report: Option<&Value>, key: &str| report.and_then(|r| r.get(key)).and_then(Value::as_f64);
    let mib = |kib: Option<f64>| kib.map(|k| k / 1024.0);
    rows.push((
        "load (ms)".into(),
        number(llama, "load_ms"),
        number(ours, "load_ms"),
    ));
    rows.push((
        "RSS after load (MiB)".into(),
        mib(number(llama, "rss_after_load_kib")),
        mib(number(ours, "rss_after_load_kib")),
    ));
    rows.push((
        "peak RSS (MiB)".into(),
        mib(number(llama, "peak_rss_kib")),
        mib(number(ours, "process_peak_rss_kib").or(number(ours, "peak_rss_kib"))),
    ));
    let show = |v: Option<f64>| {
        v.map_or("—".to_string(), |v| {
            if v >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.1}")
            }
        })
    };
    let mut text = String::from(
        "| measure | llama.cpp | ours | ours / llama.cpp |\n| --- | ---: | ---: | ---: |\n",
    );
    for (name, theirs, mine) in rows {
        let ratio = match (theirs, mine) {
            (Some(t), Some(m)) if t > 0.0 => format!("{:.2}", m / t),
            _ => "—".into(),
        };
        text.push_str(&format!(
            "| {name} | {} | {} | {ratio} |\n",
            show(theirs),
            show(mine)
        ));
    }
    text
}
