//! Writes the hostile repositories of issue 26 (item 4) for measuring
//! with the `measure` example or `repo-agent analyze` under
//! `/usr/bin/time -v` (docs/PERFORMANCE.md, "Adversarial input").
//!
//! Usage: `hostile_fixtures <SHAPE> <DIR> <FILES> <BYTES>`, SHAPE one of
//! `py-brackets`, `py-calls`, `py-blocks`, `java-brackets`, `java-calls`,
//! `java-blocks`. The fixtures are `py-brackets DIR 1 2000000` and
//! `py-calls DIR 50 600000`.

#[path = "support/hostile.rs"]
mod hostile;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [shape, dir, files, bytes] = args.as_slice() else {
        usage()
    };
    let Some(shape) = hostile::Shape::parse(shape) else {
        usage()
    };
    let (Ok(files), Ok(bytes)) = (files.parse(), bytes.parse()) else {
        usage()
    };
    if let Err(error) = hostile::write(dir.as_ref(), shape, files, bytes) {
        eprintln!("error: cannot write {dir}: {error}");
        std::process::exit(1);
    }
}

fn usage() -> ! {
    let shapes: Vec<&str> = hostile::Shape::ALL.iter().map(|s| s.name()).collect();
    eprintln!(
        "usage: hostile_fixtures <SHAPE> <DIR> <FILES> <BYTES>; SHAPE: {}",
        shapes.join(", ")
    );
    std::process::exit(2)
}
