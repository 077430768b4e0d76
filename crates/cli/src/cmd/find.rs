//! `repo-agent find`: the repository for a task (`repo-find`).

use std::path::PathBuf;

use anyhow::Context as _;

/// `repo-agent find`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// The task, in plain words.
    task: String,
    /// How many candidates to print.
    #[arg(long, default_value_t = 5, value_parser = at_least_one)]
    top: usize,
    /// Only repositories in this language (GitHub's name: python, java...).
    #[arg(long)]
    language: Option<String>,
    /// Print JSON (RepoMaster's github_repo_search shape, with the score's parts).
    #[arg(long)]
    json: bool,
    /// Clone the best candidate (or --pick N) into the home's cache and analyse it.
    #[arg(long)]
    clone: bool,
    /// With --clone: the candidate to clone, 1 = the best.
    #[arg(long, default_value_t = 1, requires = "clone", value_parser = at_least_one)]
    pick: usize,
    /// With --clone: stop a clone past this many MiB.
    #[arg(long, default_value_t = DEFAULT_CLONE_MB)]
    max_clone_mb: u64,
    /// With --clone: refuse to check out more than this many MiB of files
    /// (counted before anything is written).
    #[arg(long, default_value_t = DEFAULT_CHECKOUT_MB)]
    max_checkout_mb: u64,
    /// The GitHub API's base URL.
    #[arg(
        long,
        env = "REPO_AGENT_GITHUB_API",
        default_value = "https://api.github.com"
    )]
    api_base: String,
    /// Ask the model (the model flags) to judge each README against the task.
    #[arg(long)]
    judge: bool,
    #[command(flatten)]
    model: crate::cmd::ModelArgs,
}

/// `--top` and `--pick` count from 1: 0 is refused, not read as 1.
fn at_least_one(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(0) => Err("counts from 1 (1 = the best candidate)".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut builder = repo_find::Finder::builder()
        .api_base(&args.api_base)
        // GITHUB_TOKEN is read here and handed over; it is never printed.
        .token(std::env::var("GITHUB_TOKEN").ok())
        .candidates((args.top * 2).max(10));
    if args.judge {
        let loaded = args
            .model
            .spec()
            .load(&mut |message| eprintln!("{message}"))?;
        builder = builder.judge(loaded.chat);
    }
    let finder = builder.build()?;
    let ranked = runtime.block_on(finder.find(&args.task, args.language.as_deref()))?;
    if ranked.is_empty() {
        anyhow::bail!("GitHub found no repository for these words; try fewer or other words");
    }
    let shown = &ranked[..ranked.len().min(args.top)];
    if args.json {
        let value: Vec<serde_json::Value> = shown.iter().map(candidate_json).collect();
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", table(shown));
    }
    if args.clone {
        let chosen = ranked
            .get(args.pick - 1)
            .with_context(|| format!("--pick {}: only {} candidates", args.pick, ranked.len()))?;
        let cloned = clone_candidate(chosen, args.max_clone_mb, args.max_checkout_mb)?;
        let graph = repo_graph::Analyzer::new(&cloned.path).analyze()?;
        let stats = graph.stats();
        eprintln!(
            "{} {} ({} KiB received): {} modules, {} classes, {} functions{}",
            if cloned.fresh {
                "cloned into"
            } else {
                "reusing"
            },
            cloned.path.display(),
            cloned.received / 1024,
            stats.modules,
            stats.classes,
            stats.functions,
            if cloned.has_submodules {
                "; it declares submodules, which were not fetched"
            } else {
                ""
            }
        );
        eprintln!(
            "next: repo-agent run --repo {} --task \"{}\" --output-dir out",
            cloned.path.display(),
            args.task.replace('"', "\\\"")
        );
    }
    Ok(())
}

/// Clones `chosen` into the home's cache (`<home>/repos/OWNER/NAME`).
fn clone_candidate(
    chosen: &repo_find::Ranked,
    max_mb: u64,
    max_checkout_mb: u64,
) -> anyhow::Result<repo_find::Cloned> {
    let home = agent::repo_agent_home().context("no home directory for the clone")?;
    let dest: PathBuf = home.join("repos").join(&chosen.repo.full_name);
    Ok(repo_find::clone(
        &chosen.repo.clone_url,
        &dest,
        repo_find::CloneOptions {
            max_bytes: max_mb.saturating_mul(1 << 20),
            max_checkout_bytes: max_checkout_mb.saturating_mul(1 << 20),
            ..repo_find::CloneOptions::default()
        },
    )?)
}

/// `run`'s step when no `--repo` is given: the best candidate for `task`
/// on GitHub (`REPO_AGENT_GITHUB_API`, `GITHUB_TOKEN`), cloned into the
/// home's cache; its path.
pub fn find_repository(task: &str) -> anyhow::Result<PathBuf> {
    let api =
        std::env::var("REPO_AGENT_GITHUB_API").unwrap_or_else(|_| repo_find::GITHUB_API.to_owned());
    let finder = repo_find::Finder::builder()
        .api_base(api)
        .token(std::env::var("GITHUB_TOKEN").ok())
        .build()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let ranked = runtime.block_on(finder.find(task, None))?;
    let best = ranked
        .first()
        .context("no --repo given, and GitHub found no repository for the task")?;
    let cloned = clone_candidate(best, DEFAULT_CLONE_MB, DEFAULT_CHECKOUT_MB)?;
    eprintln!(
        "no --repo: using {} (score {:.2}), {} {}",
        best.repo.full_name,
        best.score.total,
        if cloned.fresh {
            "cloned into"
        } else {
            "already in"
        },
        cloned.path.display()
    );
    Ok(cloned.path)
}

/// `--max-clone-mb`'s default.
const DEFAULT_CLONE_MB: u64 = 200;

/// `--max-checkout-mb`'s default.
const DEFAULT_CHECKOUT_MB: u64 = 1024;

fn candidate_json(ranked: &repo_find::Ranked) -> serde_json::Value {
    let repo = &ranked.repo;
    let excerpt = &repo.readme[..repo.readme.floor_char_boundary(500)];
    serde_json::json!({
        "repo_name": repo.full_name,
        "repo_url": repo.html_url,
        "clone_url": repo.clone_url,
        "repo_description": repo.description,
        "repo_stars": repo.stars,
        "language": repo.language,
        "license": repo.license,
        "updated": repo.pushed_at,
        "readme_excerpt": excerpt,
        "score": ranked.score,
    })
}

fn table(shown: &[repo_find::Ranked]) -> String {
    use std::fmt::Write as _;
    let width = shown
        .iter()
        .map(|r| r.repo.full_name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:>2}  {:<width$}  {:>5}  {:>4} {:>4} {:>4} {:>4} {:>4}  {:>7}  {}\n",
        "#", "repo", "score", "rel", "star", "new", "lang", "lic", "stars", "description"
    );
    for (i, r) in shown.iter().enumerate() {
        let s = &r.score;
        let description = r.repo.description.as_deref().unwrap_or("");
        let description =
            context_pack::markdown::one_line(&description[..description.floor_char_boundary(70)]);
        let _ = writeln!(
            out,
            "{:>2}  {:<width$}  {:>5.2}  {:>4.2} {:>4.2} {:>4.2} {:>4.1} {:>4.1}  {:>7}  {}",
            i + 1,
            r.repo.full_name,
            s.total,
            s.relevance,
            s.stars,
            s.recency,
            s.language,
            s.licence,
            r.repo.stars,
            description
        );
    }
    out
}
