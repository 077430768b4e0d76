//! An example that takes the first item of a collection (`page =
//! reader.pages[0]`) for a task that asks for all of it ("提取整个PDF的文本",
//! "every page"): the lines that work on that item become a loop over the
//! collection, and their result is joined as text.
//!
//! Measured (GitTaskBench PyPDF2_01, runs 11 and 12's probe, tuning half):
//! told in words that the example reads page one only and to loop over
//! `reader.pages`, the 1.5B model still saved page one's text (75.69 % of
//! the expected text; the grader wants the whole document). Only applied
//! where the starter already saves its result as text
//! ([`super::save`]): joining the items' text is then what the saved
//! value would be.

/// Words of a task asking for all of a collection, matched whole (or, in
/// Chinese, anywhere).
use super::code::{plain_assignment, uses_name};

const ALL_WORDS: &[&str] = &["all", "every", "each", "whole", "entire"];
const ALL_CHINESE: &[&str] = &["整个", "全部", "所有", "每"];

/// Whether the task's text asks for all of something.
pub(super) fn asks_for_all(query: &str) -> bool {
    ALL_CHINESE.iter().any(|w| query.contains(w))
        || query
            .split(|c: char| !c.is_ascii_alphabetic())
            .any(|w| ALL_WORDS.iter().any(|a| a.eq_ignore_ascii_case(w)))
}

/// `code` with its first `name = collection[0]` line and the top-level
/// assignments that follow from `name` turned into a loop over
/// `collection`, the last of them joined over the items as text; with the
/// collection. `None` when no line takes a first item or nothing follows
/// from it.
pub(super) fn loop_over_all(code: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = code.lines().collect();
    let (start, item, collection) = lines.iter().enumerate().find_map(|(i, line)| {
        let (item, collection) = first_item_assignment(line)?;
        Some((i, item, collection))
    })?;
    let mut chain: Vec<&str> = vec![item];
    let mut end = start + 1;
    let mut last = None;
    while let Some(line) = lines.get(end) {
        let Some((name, expr)) = plain_assignment(line) else {
            break;
        };
        if !chain.iter().any(|n| uses_name(expr, n)) {
            break;
        }
        chain.push(name);
        last = Some(name);
        end += 1;
    }
    let last = last?;
    let mut out = String::with_capacity(code.len() + 128);
    for line in &lines[..start] {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("{last}_all = []\nfor {item} in {collection}:\n"));
    for line in &lines[start + 1..end] {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!(
        "    {last}_all.append({last})\n{last} = \"\\n\".join(str(x) for x in {last}_all)\n"
    ));
    for line in &lines[end..] {
        out.push_str(line);
        out.push('\n');
    }
    Some((out, collection.to_string()))
}

/// `name = collection[0]` on a top-level line: the name and the collection.
fn first_item_assignment(line: &str) -> Option<(&str, &str)> {
    let (name, expr) = plain_assignment(line)?;
    let collection = expr.strip_suffix("[0]")?;
    let dotted = !collection.is_empty()
        && collection
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && !collection.starts_with('.')
        && !collection.ends_with('.');
    dotted.then_some((name, collection))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_page_becomes_a_loop_over_every_page() {
        let code = "reader = PdfReader(\"/in/a.pdf\")\nn = len(reader.pages)\npage = reader.pages[0]\n\
                    text = page.extract_text()\nresult = text\nprint(result)\n";
        let (looped, collection) = loop_over_all(code).unwrap();
        assert_eq!(collection, "reader.pages");
        assert_eq!(
            looped,
            "reader = PdfReader(\"/in/a.pdf\")\nn = len(reader.pages)\nresult_all = []\n\
             for page in reader.pages:\n    text = page.extract_text()\n    result = text\n    \
             result_all.append(result)\nresult = \"\\n\".join(str(x) for x in result_all)\nprint(result)\n"
        );
    }

    #[test]
    fn nothing_loops_without_a_first_item_or_what_follows_from_it() {
        assert!(loop_over_all("page = reader.pages[1]\ntext = page.text()\n").is_none());
        assert!(loop_over_all("page = reader.pages[0]\nprint(page)\n").is_none());
        assert!(loop_over_all("page = pages()[0]\ntext = page.text()\n").is_none());
    }

    #[test]
    fn asking_for_all_is_read_in_english_and_chinese() {
        assert!(asks_for_all("怎么提取整个PDF的文本"));
        assert!(asks_for_all("extract the text of every page"));
        assert!(!asks_for_all("extract the metadata (author, title)"));
        assert!(!asks_for_all("install the package"));
    }
}
