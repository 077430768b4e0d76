//! The system prompt and the task prompt (RepoMaster, seed 001, appendix C).

use std::fmt::Write as _;

use context_pack::starter::{PathRole, Starter};

use crate::run::task::TaskSpec;

/// The step a small model is told to take first, at the end of its task
/// prompt ([`AgentConfig::first_step`](crate::AgentConfig::first_step)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FirstStep {
    /// The README's example closest to the task, with the task's paths put
    /// in ([`context_pack::starter`]): the script to start from.
    pub starter: Option<Starter>,
    /// The values the task's text gives ([`context_pack::task_values`]):
    /// a small model keeps an example's "Hello World" unless it is shown
    /// the task's own.
    pub values: Vec<String>,
    /// The numbers the task's text gives
    /// ([`context_pack::task_values::task_numbers`]).
    pub numbers: Vec<String>,
}

/// The system prompt: who the agent is and the rules it follows.
pub fn system_prompt(exploration_tools: bool) -> String {
    let mut s = String::from(
        "You are repo-agent, an expert programmer who solves tasks by reusing an existing code repository.\n\
         You work step by step with tools: explore the repository to find the code that does the job, \
         write a small script that calls it, run the script, check the result, and call `finish`.\n\n\
         Rules:\n\
         - Reuse the repository's code (import and call it) rather than rewriting its functionality.\n\
         - Use absolute paths for every file you read or write.\n\
         - Check that input files exist and look as expected before using them.\n\
         - If a Python package is missing, install it with `pip install` (through `run_shell`).\n\
         - Save outputs in the output directory with the required names.\n\
         - Write scripts in the working directory (not /tmp: each run may get its own private /tmp).\n\
         - When a run fails, read the traceback, fix the cause, and run again.\n\
         - Call `finish` with a short summary once the outputs are written and checked, \
         alone in its reply: a `finish` sent with other calls, before their results are seen, is refused.\n",
    );
    if exploration_tools {
        s.push_str(
            "\nExplore efficiently: `search_code` to find entities, `view_code` to read a file or entity, \
             `find_callers`/`find_callees` and `module_dependencies`/`dependency_path` to follow the structure.\n",
        );
    }
    s
}

/// The task prompt in the style of the paper's listing 3, followed by the
/// initial repository context (when there is one) and, with `first_step`,
/// the step to take first.
pub fn task_prompt(
    task: &TaskSpec,
    repo_context: Option<&str>,
    first_step: Option<&FirstStep>,
) -> String {
    let mut s = String::new();
    let work_dir = task.effective_work_dir();
    let _ = writeln!(
        s,
        "# Task\nI need you to analyze the following provided code repository and use your powerful programming abilities to complete the user's task:\n**Task Description**\n<task>\nPlease complete the following tasks based on the given repository:\n## Task Description\n{}\n## Available Repository",
        task.description.trim()
    );
    for repo in &task.repositories {
        let _ = writeln!(s, "- **Name**: {}", repo.name);
        let _ = writeln!(s, "- **Path (absolute)**: {}", repo.path.display());
        if let Some(url) = &repo.url {
            let _ = writeln!(s, "- **URL**: {url}");
        }
        if !repo.guidelines.is_empty() {
            let _ = writeln!(s, "- **Understanding Guide**: {:?}", repo.guidelines);
        }
    }
    s.push_str("## File Path\nInput file paths and descriptions:\n");
    let inputs: Vec<serde_json::Value> = task
        .inputs
        .iter()
        .map(
            |i| serde_json::json!({"path": i.path.to_string_lossy(), "description": i.description}),
        )
        .collect();
    let _ = writeln!(
        s,
        "{}",
        serde_json::to_string_pretty(&inputs).unwrap_or_else(|_| "[]".into())
    );
    let _ = writeln!(
        s,
        "## Output\n- **Output directory**: {}\n- If there is only one file, name it `output` (with the right extension, e.g. `output.txt`).\n- If there are multiple files, start naming with `output_01`, `output_02`, etc., format as needed.",
        task.output_dir.display()
    );
    s.push_str(
        "## Additional Notes\n**Core Objective**: Quickly understand and analyze the code repository, generate and execute the necessary code or tool calls to efficiently and accurately complete the user's specified task.\n\
         **Core Components**:\n\
         - Saved output results must be named starting with `output` (e.g., `output.txt`, `output.wav`).\n\
         - If there are multiple files, name them `output_01`, `output_02`, etc.\n\
         - Save them directly in the output directory.\n</task>\n",
    );
    let _ = writeln!(
        s,
        "**Working Directory (where code should be run)**\n<work_dir>\n{}\n</work_dir>",
        work_dir.display()
    );
    if let Some(repo) = task.primary_repo() {
        let _ = writeln!(
            s,
            "**Repository Address**\n<repo>\n{}\n</repo>",
            repo.path.display()
        );
    }
    if let Some(context) = repo_context.filter(|c| !c.trim().is_empty()) {
        let _ = write!(s, "\n# Repository context\n{context}\n");
    }
    if let Some(step) = first_step {
        s.push_str(&first_step_text(task, step));
    }
    s
}

/// The step a small model is told to take first, last in its prompt
/// (where it reads it best): measured with the embedded 1.5B model on
/// GitTaskBench's tuning half, a model told to explore first spent its
/// ten turns on `search_code` and `find_callers` (Eparse_01) and never
/// wrote a script, though the README's usage was in its context.
///
/// With a starter (the README's example with the task's paths put in),
/// the step is to adapt and run that script: a 1.5B model that has to
/// carry a README's sample path over to the task's input on its own often
/// keeps the sample's, or guesses one.
fn first_step_text(task: &TaskSpec, step: &FirstStep) -> String {
    let inputs: Vec<String> = task
        .inputs
        .iter()
        .map(|i| format!("`{}`", i.path.display()))
        .collect();
    let read = match inputs.as_slice() {
        [] => String::new(),
        [one] => format!(" on the input {one}"),
        many => format!(" on the inputs {}", many.join(", ")),
    };
    let mut s = format!(
        "\n# First step\nWrite one Python script that does the task with the repository's own API, \
         as the usage above shows{read}, and saves the result in `{}` as `output` with the extension the \
         task needs. Run it with `run_python` (the script in `code`). If it fails, read the error, \
         look up what you need in the repository, fix the script and run it again. When the output \
         is written, call `finish`.\n",
        task.output_dir.display()
    );
    if !step.values.is_empty() {
        let _ = writeln!(
            s,
            "The task gives these values; use them exactly as written: {}.",
            quoted_list(&step.values)
        );
    }
    if !step.numbers.is_empty() {
        let _ = writeln!(
            s,
            "The task's numbers: {}. Where the code takes such a value (a rate, a size, a count), \
             use the task's, not an example's.",
            step.numbers.join(", ")
        );
    }
    if let Some(starter) = &step.starter {
        s.push_str(&starter_text(starter));
    }
    s
}

/// `"a"`, `"b"`: values as Python would write them, in backticks.
fn quoted_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("`{v:?}`")).collect();
    quoted.join(", ")
}

/// The starter as the prompt shows it: where it comes from, what was put
/// in, and the script.
fn starter_text(starter: &Starter) -> String {
    let mut s = format!("\nStart from the example in {}", starter.file);
    if !starter.section.is_empty() {
        let _ = write!(s, " (section \"{}\")", starter.section.join(" > "));
    }
    let swaps: Vec<String> = starter
        .swaps
        .iter()
        .map(|swap| {
            let what = match swap.role {
                PathRole::Input => "the input",
                PathRole::Output => "the output",
            };
            format!("`{}` is now {what} `{}`", swap.written, swap.now.display())
        })
        .collect();
    if swaps.is_empty() {
        s.push_str(". Change what the task asks differently, then run it:\n");
    } else {
        let _ = writeln!(
            s,
            ", with the task's paths put in ({}). Change what the task asks differently \
             (values, options, the output's format), then run it:",
            swaps.join("; ")
        );
    }
    if let Some(data) = &starter.made_up_data {
        let column = data
            .column
            .as_ref()
            .map(|c| format!(" (its column `{c}`)"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "The example made up its data with `{}`; it now reads the task's input `{}`{column} \
             in its place: check that this is the data the task means.",
            data.written,
            data.input.display()
        );
    }
    for swap in &starter.values_put_in {
        let _ = writeln!(
            s,
            "The README's sample text `{:?}` is now the task's value `{:?}`.",
            swap.written, swap.now
        );
    }
    if let Some(path) = &starter.saved_result {
        let _ = writeln!(
            s,
            "The example only showed its result; its last step now saves it as text in `{}`: \
             make what it writes match what the task asks (its format, its fields).",
            path.display()
        );
    }
    if let Some(reading) = &starter.reading_half {
        let _ = writeln!(
            s,
            "The example wrote a sample text into its file and read it back; the task gives no \
             text to write, so the script keeps only the reading, on the task's input: `{reading}`."
        );
    }
    if let Some(collection) = &starter.looped_over {
        let _ = writeln!(
            s,
            "The example took only the first item of `{collection}`; as the task asks for all of \
             it, the script now loops over `{collection}` and joins the results."
        );
    }
    for items in &starter.first_items {
        let _ = writeln!(
            s,
            "The example takes only the first item of `{items}` (`{items}[0]`): where the task \
             wants all of it (a whole document, every page, row or file), loop over `{items}`."
        );
    }
    if !starter.samples.is_empty() {
        let _ = writeln!(
            s,
            "Its sample values ({}) are the README's: put the task's own values in their place \
             where the task gives them.",
            quoted_list(&starter.samples)
        );
    }
    let _ = writeln!(s, "```python\n{}```", starter.code);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_prompt_has_every_part() {
        let task = TaskSpec::new("Count the words.", "/r/textstats", "/o")
            .with_input("/in/a.txt", "a text");
        let p = task_prompt(&task, Some("## README\nhello"), None);
        for needle in [
            "Count the words.",
            "/r/textstats",
            "/in/a.txt",
            "a text",
            "/o",
            "output_01",
            "<work_dir>\n/r/textstats\n</work_dir>",
            "## README\nhello",
        ] {
            assert!(p.contains(needle), "missing {needle:?} in\n{p}");
        }
        let system = system_prompt(true);
        assert!(system.contains("pip install") && system.contains("absolute paths"));
        assert!(system.contains("alone in its reply"));
        assert!(!p.contains("# First step"));
    }

    #[test]
    fn the_first_step_comes_last_with_the_task_paths() {
        let task = TaskSpec::new("Count the words.", "/r/textstats", "/o")
            .with_input("/in/a.txt", "a text")
            .with_input("/in/b.txt", "another");
        let p = task_prompt(&task, Some("## README\nhello"), Some(&FirstStep::default()));
        let step = p.find("# First step").expect("the step is there");
        assert!(
            step > p.find("## README").unwrap_or(usize::MAX),
            "after the context"
        );
        let tail = &p[step..];
        for needle in ["`/in/a.txt`, `/in/b.txt`", "`/o`", "run_python", "finish"] {
            assert!(tail.contains(needle), "missing {needle:?} in\n{tail}");
        }
        let alone = TaskSpec::new("Make a file.", "/r/x", "/o");
        let p = task_prompt(&alone, None, Some(&FirstStep::default()));
        assert!(p.contains("as the usage above shows, and saves"), "{p}");
    }

    #[test]
    fn a_starter_is_shown_after_the_step_with_what_was_put_in() {
        let task = TaskSpec::new("Hide a message.", "/r/stego", "/o").with_input("/in/a.png", "");
        let starter = Starter {
            file: "README.md".into(),
            section: vec!["Usage".into(), "Library".into()],
            code:
                "from stego import lsb\nlsb.hide(\"/in/a.png\", \"hi\").save(\"/o/output.png\")\n"
                    .into(),
            swaps: vec![
                context_pack::starter::PathSwap {
                    written: "Lenna.png".into(),
                    now: "/in/a.png".into(),
                    role: PathRole::Input,
                },
                context_pack::starter::PathSwap {
                    written: "secret.png".into(),
                    now: "/o/output.png".into(),
                    role: PathRole::Output,
                },
            ],
            samples: vec!["Hello World".into()],
            task_values: Vec::new(),
            values_put_in: Vec::new(),
            first_items: vec!["reader.pages".into()],
            saved_result: Some("/o/output.txt".into()),
            looped_over: None,
            reading_half: None,
            made_up_data: None,
        };
        let step = FirstStep {
            starter: Some(starter),
            values: Vec::new(),
            numbers: Vec::new(),
        };
        let p = task_prompt(&task, Some("## README\nhello"), Some(&step));
        let tail = &p[p.find("# First step").expect("the step")..];
        let example =
            tail.find("Start from the example in README.md (section \"Usage > Library\")");
        assert!(example.is_some(), "{tail}");
        for needle in [
            "`Lenna.png` is now the input `/in/a.png`",
            "`secret.png` is now the output `/o/output.png`",
            "```python\nfrom stego import lsb\nlsb.hide(",
            "Its sample values (`\"Hello World\"`) are the README's",
            "only the first item of `reader.pages` (`reader.pages[0]`)",
            "its last step now saves it as text in `/o/output.txt`",
        ] {
            assert!(tail.contains(needle), "missing {needle:?} in\n{tail}");
        }
        assert!(tail.trim_end().ends_with("```"), "{tail}");
    }

    #[test]
    fn the_task_values_are_stated_and_a_replaced_sample_is_named() {
        let task =
            TaskSpec::new("嵌入水印: stegano ?", "/r/stego", "/o").with_input("/in/a.png", "");
        let mut starter = context_pack::starter::starter_from_readme(
            "README.md",
            "```python\nfrom stego import lsb\nlsb.hide(\"L.png\", \"Hello World\").save(\"s.png\")\n```\n",
            "hide",
            &[std::path::Path::new("/in/a.png")],
            std::path::Path::new("/o"),
        )
        .expect("a starter");
        let values = context_pack::task_values::task_values(&task.description);
        starter.put_task_values(&values);
        let step = FirstStep {
            starter: Some(starter),
            values,
            numbers: vec!["250".into()],
        };
        let p = task_prompt(&task, None, Some(&step));
        let tail = &p[p.find("# First step").expect("the step")..];
        for needle in [
            "use them exactly as written: `\"stegano\"`.",
            "The README's sample text `\"Hello World\"` is now the task's value `\"stegano\"`.",
            "lsb.hide(\"/in/a.png\", \"stegano\")",
            "The task's numbers: 250.",
        ] {
            assert!(tail.contains(needle), "missing {needle:?} in\n{tail}");
        }
        assert!(!tail.contains("Its sample values"), "{tail}");
    }
}
