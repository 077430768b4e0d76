//! Search terms for a task whose own words find too little in the
//! repository: GitTaskBench writes its tasks in Chinese, and BM25 over
//! identifiers matches nothing in them. One short model call turns the task
//! into English search terms and likely identifiers; the initial context
//! is then built with them.

use llm::{ChatModel, ChatRequest, Message, UsageMeter};

use crate::trajectory::{SetupEvent, SetupPurpose};

/// Fewer task words than this that name something in the repository, and
/// the model is asked for search terms.
pub(crate) const MIN_TERMS_FOUND: usize = 2;

/// Most terms kept from the model's answer.
const MAX_TERMS: usize = 12;

/// Longest term kept: identifiers, not sentences.
const MAX_TERM_CHARS: usize = 48;

/// Bytes of a reply read for terms: a dozen short terms fit many times
/// over, and a reply of megabytes is not split and scanned whole.
const MAX_REPLY_BYTES: usize = 4 * 1024;

/// The worked example's task (in Chinese, as GitTaskBench writes its
/// tasks) and its answer.
const EXAMPLE_TASK: &str = "把这张照片变成黑白的，保存为新文件";
const EXAMPLE_TERMS: &str = "grayscale, black and white, ImageOps.grayscale, Image.convert, mode L";

/// Asks `model` for search terms for `task` in the repository `repo`. A
/// failed call is no failure of the run: the context is then built from
/// the task alone, and the event says why.
pub async fn search_terms(
    model: &dyn ChatModel,
    task: &str,
    repo: &str,
) -> (Vec<String>, SetupEvent) {
    let meter = UsageMeter::default();
    let ask = |repo: &str, task: &str| {
        format!(
            "Repository: {repo}\nTask: {task}\n\nList 3 to 10 English search terms and the \
             function, class or module names the code that does this task is likely to have."
        )
    };
    // The example is a turn of its own, from a library none of the
    // benchmarks uses: written inline in the question ("for example:
    // extract, html to text, ..."), the embedded 1.5B model copied it into
    // its answers for unrelated tasks (localization bench, 2026-11-27).
    let request = ChatRequest::new(vec![
        Message::system(
            "You turn a task into search terms for finding code in a repository. Answer with \
             one line of comma-separated terms and nothing else.",
        ),
        Message::user(ask("Pillow", EXAMPLE_TASK)),
        Message::assistant(EXAMPLE_TERMS),
        Message::user(ask(repo, task)),
    ])
    .with_temperature(0.0)
    .with_max_tokens(120);
    let (terms, result) = match model.complete(&request).await {
        Ok(response) => {
            meter.record_response(model.model_name(), &response);
            let mut terms = parse_terms(response.content.as_deref().unwrap_or(""));
            // The example's terms, copied into an answer about something
            // else, would rank the repository's image code first.
            let example = parse_terms(EXAMPLE_TERMS);
            terms.retain(|t| {
                !example.iter().any(|e| e.eq_ignore_ascii_case(t))
                    || task.to_lowercase().contains(&t.to_lowercase())
            });
            let result = if terms.is_empty() {
                "the answer held no usable terms".to_owned()
            } else {
                terms.join(", ")
            };
            (terms, result)
        }
        Err(error) => {
            meter.record_error(model.model_name(), &error);
            tracing::warn!(%error, "asking for search terms failed; the context uses the task alone");
            (Vec::new(), format!("failed: {error}"))
        }
    };
    let event = SetupEvent {
        purpose: SetupPurpose::SearchTerms,
        usage: meter.summary(),
        result,
    };
    (terms, event)
}

/// The terms of a reply: split at commas, semicolons and line breaks,
/// stripped of list markers, quotes and backticks; only terms with Latin
/// letters, at most [`MAX_TERM_CHARS`] long, at most [`MAX_TERMS`] of
/// them, duplicates dropped. A model's reply is untrusted text: whatever
/// it holds, this keeps a few short words.
pub(crate) fn parse_terms(reply: &str) -> Vec<String> {
    let reply = &reply[..reply.floor_char_boundary(MAX_REPLY_BYTES)];
    let mut out: Vec<String> = Vec::new();
    for piece in reply.split([',', ';', '\n', '、', '，']) {
        let term = piece
            .trim()
            .trim_start_matches(['-', '*', '•'])
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')')
            .trim()
            .trim_matches(['`', '"', '\'', '“', '”'])
            .trim();
        if term.is_empty()
            || term.chars().count() > MAX_TERM_CHARS
            || !term.chars().any(|c| c.is_ascii_alphabetic())
            || out.iter().any(|t| t.eq_ignore_ascii_case(term))
        {
            continue;
        }
        out.push(term.to_owned());
        if out.len() == MAX_TERMS {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_become_short_terms() {
        assert_eq!(
            parse_terms("extract, html to text, `extract_text`, Extractor"),
            ["extract", "html to text", "extract_text", "Extractor"]
        );
        assert_eq!(
            parse_terms("1. watermark\n2) embed\n- \"decode\"\n提取, 提取"),
            ["watermark", "embed", "decode"]
        );
        assert_eq!(parse_terms("a, A, a"), ["a"]);
        let long = "x".repeat(100);
        assert!(parse_terms(&long).is_empty());
        let many: Vec<String> = (0..50).map(|i| format!("term{i}")).collect();
        assert_eq!(parse_terms(&many.join(",")).len(), MAX_TERMS);
    }

    #[test]
    fn the_example_is_a_turn_of_its_own_and_its_terms_are_not_kept() {
        let model = llm::Scripted::new()
            .then_text("pdfplumber, grayscale, extract_text, Image.convert, Page.extract_text");
        let (terms, event) = block_on(search_terms(
            &model,
            "提取这个 PDF 每一页的文字",
            "pdfplumber",
        ));
        assert_eq!(terms, ["pdfplumber", "extract_text", "Page.extract_text"]);
        assert_eq!(event.result, "pdfplumber, extract_text, Page.extract_text");
        let asked = &model.requests()[0].messages;
        assert_eq!(asked.len(), 4, "system, the example's two turns, the task");
        let last = format!("{:?}", asked[3]);
        assert!(
            last.contains("pdfplumber") && !last.contains("grayscale"),
            "{last}"
        );
        // A task that names an example term keeps it.
        let model = llm::Scripted::new().then_text("grayscale, gray");
        let (terms, _) = block_on(search_terms(&model, "make it grayscale", "p"));
        assert_eq!(terms, ["grayscale", "gray"]);
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(future)
    }

    #[test]
    fn a_huge_or_hostile_reply_gives_a_few_short_terms() {
        // 10 MB of one word: only the head is read, and it is one term.
        let huge = "extract ".repeat(1_300_000);
        assert_eq!(parse_terms(&huge).len(), 0, "one 4 KiB piece is too long");
        // Multibyte text cut at the byte limit does not split a character.
        let chinese = format!("{}, pdf", "提".repeat(2_000));
        assert!(parse_terms(&chinese).is_empty());
        let mixed = format!("pdf, {}", "文".repeat(5_000));
        assert_eq!(parse_terms(&mixed), ["pdf"]);
        // Control characters and Markdown do not survive as terms of their own.
        assert_eq!(parse_terms("```\nfoo\n```"), ["foo"]);
    }
}
