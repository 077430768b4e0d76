//! Prints the starting script chosen for a task: which page and section it
//! comes from and the code with the task's paths put in.
//!
//! `cargo run -p context-pack --example starter -- REPO OUTPUT_DIR "TASK TEXT" [INPUT...]`

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [root, output_dir, query, inputs @ ..] = args.as_slice() else {
        eprintln!("usage: starter REPO OUTPUT_DIR \"TASK TEXT\" [INPUT...]");
        std::process::exit(2);
    };
    let inputs: Vec<&Path> = inputs.iter().map(Path::new).collect();
    match context_pack::starter::readme_starter(
        Path::new(root),
        query,
        &inputs,
        Path::new(output_dir),
    ) {
        Some(mut starter) => {
            // As `repo-agent run` does: the task's values, then the round trip.
            starter.put_task_values(&context_pack::task_values::task_values(query));
            starter.keep_reading_half(query, &inputs, Path::new(output_dir));
            println!("{} {:?}", starter.file, starter.section);
            println!("{}", starter.code);
        }
        None => println!("no example fits"),
    }
}
