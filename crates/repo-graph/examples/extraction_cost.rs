//! Splits the per-file cost into tree-sitter parsing and fact extraction, on
//! one thread, over every `.py` and `.java` file under a directory (see
//! docs/PERFORMANCE.md).
use repo_graph::Language;

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let mut files = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p)
            } else if p.extension().is_some_and(|x| x == "py") {
                files.push((p, Language::Python))
            } else if p.extension().is_some_and(|x| x == "java") {
                files.push((p, Language::Java))
            }
        }
    }
    let (mut parse, mut extract) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    for (f, language) in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        if let Some((p, e)) = repo_graph::time_parse_and_extract_in(*language, &text) {
            parse += p;
            extract += e;
        }
    }
    println!(
        "files {} parse {:?} extract {:?} ratio {:.3}",
        files.len(),
        parse,
        extract,
        extract.as_secs_f64() / parse.as_secs_f64()
    );
}
