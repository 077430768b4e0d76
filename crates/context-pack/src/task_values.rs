//! The literal values a task's text gives: what it quotes (`"hidden_text"`,
//! `'SCR_Peaks'`, `“…”`, `「…」`) and the single word after a colon that
//! ends a clause (`…嵌入水印: stegano ?`).
//!
//! A small model starting from a README example keeps the example's values
//! ("Hello World") unless it is shown the task's: GitTaskBench Stegano_01
//! (tuning half) embedded the README's message where the task named
//! `stegano`. The values are listed for the model and, where the example
//! has one sample text and the task gives one value, put in its place
//! ([`Starter::put_task_values`](crate::starter::Starter::put_task_values)).
//!
//! ```
//! use context_pack::task_values::task_values;
//! assert_eq!(task_values("给定的png图像中嵌入水印: stegano ?"), ["stegano"]);
//! assert_eq!(task_values("Hide \"hidden_text\" in the image"), ["hidden_text"]);
//! assert!(task_values("Don't split the PDF's pages").is_empty());
//! ```

/// Values returned at most.
const MAX_VALUES: usize = 8;
/// Characters of one value at most: past that it is prose, not a value.
const MAX_CHARS: usize = 80;

/// Opening and closing quotes, paired.
const QUOTES: &[(char, char)] = &[
    ('"', '"'),
    ('\'', '\''),
    ('`', '`'),
    ('“', '”'),
    ('‘', '’'),
    ('「', '」'),
    ('『', '』'),
    ('«', '»'),
];

/// What ends a clause: the colon's value runs to one of these.
fn ends_clause(c: char) -> bool {
    c.is_whitespace() || ",.;!?，。；！？、)）]".contains(c)
}

/// The task's quoted values and single-word colon values, distinct, in
/// order of appearance, without file names and paths (the task's files are
/// given to the model apart). Linear in the text.
pub fn task_values(text: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut values: Vec<String> = Vec::new();
    let mut push = |value: &str| {
        let value = value.trim();
        let pathlike = value.contains(['/', '\\'])
            || value.split_whitespace().any(crate::starter::names_a_file);
        if value.chars().any(char::is_alphanumeric)
            && value.chars().count() <= MAX_CHARS
            && !pathlike
            && !values.iter().any(|v| v == value)
            && values.len() < MAX_VALUES
        {
            values.push(value.to_owned());
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        if let Some(&(_, close)) = QUOTES.iter().find(|(open, _)| *open == c) {
            // An apostrophe inside a word (`don't`, `PDF's`) opens nothing.
            let after_word = i > 0 && chars[i - 1].1.is_ascii_alphanumeric() && c == '\'';
            let end = chars[i + 1..]
                .iter()
                .take(MAX_CHARS + 1)
                .position(|&(_, d)| d == close || d == '\n');
            if let Some(offset) = end.filter(|_| !after_word) {
                let j = i + 1 + offset;
                let closes_word = chars
                    .get(j + 1)
                    .is_none_or(|&(_, d)| !(d.is_ascii_alphanumeric() && c == '\''));
                if chars[j].1 == close && offset > 0 && closes_word {
                    push(&text[chars[i + 1].0..chars[j].0]);
                    i = j + 1;
                    continue;
                }
            }
        }
        if c == ':' || c == '：' {
            let start = chars[i + 1..]
                .iter()
                .position(|&(_, d)| !d.is_whitespace())
                .map(|p| i + 1 + p);
            if let Some(s) = start {
                // Bounded: a value is short, and a run of colons must not
                // make every colon scan to the end.
                let window = &chars[s..chars.len().min(s + MAX_CHARS + 1)];
                let len = window
                    .iter()
                    .position(|&(_, d)| ends_clause(d))
                    .unwrap_or(window.len());
                let e = s + len;
                // The word must end its clause: `水印: stegano ?`, not
                // `Output: a CSV file`.
                let rest = chars[e..].iter().find(|&&(_, d)| !d.is_whitespace());
                let closes = rest.is_none_or(|&(_, d)| ends_clause(d));
                let quoted = QUOTES.iter().any(|(open, _)| *open == chars[s].1);
                if len > 0 && closes && !quoted {
                    let end_byte = chars.get(e).map_or(text.len(), |&(b, _)| b);
                    push(&text[chars[s].0..end_byte]);
                }
                if !quoted {
                    // Any colon up to `e` would end its word at `e` too.
                    i = e.max(i + 1);
                    continue;
                }
            }
        }
        i += 1;
    }
    values
}

/// The numbers a task's text gives (`采样率为250`, `at 150 Hz`, `0.5`):
/// digit runs standing alone, not part of a name (`ECG_R_Peaks`, `A1`,
/// `output_01`) or of a file name; distinct, in order, at most
/// eight. A README example's `sampling_rate=1000` is the example's; the
/// task's rate is one of these (GitTaskBench NeuroKit_01 and _02, tuning
/// half, give theirs in Chinese).
///
/// ```
/// use context_pack::task_values::task_numbers;
/// assert_eq!(task_numbers("对于采样率为150的ECG数据, 0.5秒"), ["150", "0.5"]);
/// assert!(task_numbers("ECG_R_Peaks in output_01.csv at A1").is_empty());
/// ```
pub fn task_numbers(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let joins = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'/';
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || (i > 0 && joins(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
        let alone = bytes.get(i).is_none_or(|&b| {
            !joins(b) || b == b'.' && !bytes.get(i + 1).is_some_and(|c| c.is_ascii_alphanumeric())
        });
        let number = &text[start..i];
        if alone && number.len() <= 12 && !out.iter().any(|n| n == number) && out.len() < MAX_VALUES
        {
            out.push(number.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_in_every_script_are_found() {
        assert_eq!(
            task_values("提取'SCR_Onsets', 'SCR_Peaks', 'SCR_Height'这三个指标"),
            ["SCR_Onsets", "SCR_Peaks", "SCR_Height"]
        );
        assert_eq!(task_values("嵌入隐信息\"hidden_text\"?"), ["hidden_text"]);
        assert_eq!(task_values("write “你好” then 「世界」"), ["你好", "世界"]);
    }

    #[test]
    fn a_word_after_a_colon_counts_only_when_it_ends_the_clause() {
        assert_eq!(task_values("嵌入水印: stegano ?"), ["stegano"]);
        assert_eq!(task_values("watermark：QA2024。"), ["QA2024"]);
        assert!(task_values("Output: a CSV file with the peaks").is_empty());
    }

    #[test]
    fn file_names_paths_and_apostrophes_are_not_values() {
        assert!(task_values("以“文件名: 文件名.xlsx”标识").is_empty());
        assert!(task_values("save to 'out/result.csv' now").is_empty());
        assert!(task_values("It's the PDF's text, don't split").is_empty());
        assert!(task_values("see: /data/in.png").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_text_gives_few_short_values_taken_from_it(
            text in "[\\PC\"'`“”「」:： ,.?/]{0,300}"
        ) {
            let values = task_values(&text);
            proptest::prop_assert!(values.len() <= MAX_VALUES);
            for value in &values {
                proptest::prop_assert!(text.contains(value.as_str()), "{value:?}");
                proptest::prop_assert!(value.chars().count() <= MAX_CHARS);
                proptest::prop_assert!(!value.contains('/'));
            }
        }
    }

    #[test]
    fn numbers_standing_alone_are_the_tasks() {
        assert_eq!(task_numbers("从给定的采样率为250的EDA数据中"), ["250"]);
        assert_eq!(
            task_numbers("rate 150. Then 2 files, v1.2 and 3.5"),
            ["150", "2", "3.5"]
        );
        assert!(task_numbers("ECG_R_Peaks, output_01.csv, A1, x2, /d/9/").is_empty());
        assert_eq!(task_numbers(&"9 ".repeat(100)), ["9"]);
    }

    #[test]
    fn unbalanced_and_hostile_text_ends_quickly() {
        assert!(task_values("\"never closed").is_empty());
        let long = format!("\"{}\"", "x".repeat(10_000));
        assert!(task_values(&long).is_empty());
        let many = "'a' ".repeat(100);
        assert_eq!(task_values(&many), ["a"]);
        assert!(task_values(&":".repeat(10_000)).is_empty());
    }
}
