//! BM25 ranking over code identifiers and prose.

use rustc_hash::FxHashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "with", "use", "using", "self",
];

/// Splits text into lowercase terms: words and identifiers, with
/// `snake_case` and `camelCase` identifiers also split into their parts, so
/// "extract text" matches `extract_text` and `ExtractText`.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
        if word.is_empty() {
            continue;
        }
        let lower = word.to_lowercase();
        let mut parts: Vec<String> = Vec::new();
        for piece in word.split('_').filter(|p| !p.is_empty()) {
            let mut current = String::new();
            let mut previous_lower = false;
            for c in piece.chars() {
                if c.is_uppercase() && previous_lower && !current.is_empty() {
                    parts.push(std::mem::take(&mut current).to_lowercase());
                }
                previous_lower = c.is_lowercase() || c.is_ascii_digit();
                current.push(c);
            }
            if !current.is_empty() {
                parts.push(current.to_lowercase());
            }
        }
        if parts.len() > 1 || parts.first().is_some_and(|p| *p != lower) {
            out.push(lower.clone());
        }
        out.extend(parts);
    }
    out.retain(|t| t.len() > 1 && !STOPWORDS.contains(&t.as_str()));
    out
}

/// A BM25 index over a fixed list of documents.
///
/// ```
/// use context_pack::bm25::Bm25;
/// let index = Bm25::new(["read a pdf file", "write an image", "extract_text from PDF pages"]);
/// let scores = index.scores("extract text from a pdf");
/// assert!(scores[2] > scores[0] && scores[0] > scores[1]);
/// ```
pub struct Bm25 {
    docs: Vec<FxHashMap<String, u32>>,
    lengths: Vec<f64>,
    average_length: f64,
    document_frequency: FxHashMap<String, u32>,
}

impl Bm25 {
    /// Indexes the documents, in order.
    pub fn new<'a>(documents: impl IntoIterator<Item = &'a str>) -> Self {
        Self::from_terms(documents.into_iter().map(terms))
    }

    /// Indexes documents already split into terms (by [`terms`], perhaps
    /// [`stem`]med), in order.
    pub fn from_terms(documents: impl IntoIterator<Item = Vec<String>>) -> Self {
        let mut docs = Vec::new();
        let mut lengths = Vec::new();
        let mut document_frequency: FxHashMap<String, u32> = FxHashMap::default();
        for terms in documents {
            let mut counts: FxHashMap<String, u32> = FxHashMap::default();
            lengths.push(terms.len() as f64);
            for term in terms {
                *counts.entry(term).or_default() += 1;
            }
            for term in counts.keys() {
                *document_frequency.entry(term.clone()).or_default() += 1;
            }
            docs.push(counts);
        }
        let average_length = if lengths.is_empty() {
            0.0
        } else {
            lengths.iter().sum::<f64>() / lengths.len() as f64
        };
        Bm25 {
            docs,
            lengths,
            average_length,
            document_frequency,
        }
    }

    /// The inverse document frequency of `term`, as the scores use it: high
    /// for a rare term, near 0 for one in every document.
    pub fn idf(&self, term: &str) -> f64 {
        let n = self.docs.len() as f64;
        let df = f64::from(self.document_frequency.get(term).copied().unwrap_or(0));
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// One score per document for `query` (0 for documents sharing no term).
    pub fn scores(&self, query: &str) -> Vec<f64> {
        self.scores_for_terms(terms(query))
    }

    /// [`Bm25::scores`] for a query already split into terms.
    pub fn scores_for_terms(&self, mut query_terms: Vec<String>) -> Vec<f64> {
        query_terms.sort();
        query_terms.dedup();
        // Once per query term, not once per (document, term).
        let idf: Vec<f64> = query_terms.iter().map(|t| self.idf(t)).collect();
        let average_length = self.average_length.max(1.0);
        self.docs
            .iter()
            .zip(&self.lengths)
            .map(|(counts, length)| {
                let norm = 1.0 - B + B * length / average_length;
                query_terms
                    .iter()
                    .zip(&idf)
                    .filter_map(|(term, idf)| {
                        let tf = f64::from(*counts.get(term)?);
                        Some(idf * tf * (K1 + 1.0) / (tf + K1 * norm))
                    })
                    .sum()
            })
            .collect()
    }
}

/// A light suffix-stripping stemmer for English terms, so that "extraction",
/// "extracts" and "extracting" meet `extract`. Deliberately conservative: a
/// stem keeps at least four characters, and identifiers' parts are stemmed
/// the same way as prose, so both sides of a match agree.
///
/// ```
/// use context_pack::bm25::stem;
/// assert_eq!(stem("extraction"), "extract");
/// assert_eq!(stem("extracting"), "extract");
/// assert_eq!(stem("images"), stem("image"));
/// assert_eq!(stem("parser"), stem("parse"));
/// assert_eq!(stem("class"), "class");
/// ```
pub fn stem(term: &str) -> String {
    const SUFFIXES: [&str; 14] = [
        "ations", "ation", "ions", "ion", "ings", "ing", "ers", "er", "ors", "or", "ies", "es",
        "ed", "s",
    ];
    if !term.is_ascii() || term.len() < 5 {
        return term.to_owned();
    }
    let mut base = term;
    for suffix in SUFFIXES {
        let Some(stripped) = term.strip_suffix(suffix) else {
            continue;
        };
        if stripped.len() < 4 {
            continue;
        }
        match suffix {
            "ies" => return format!("{stripped}y"),
            // "boxes", "matches": the plural adds "es"; "images" only "s".
            "es" if !["s", "x", "z", "ch", "sh"]
                .iter()
                .any(|e| stripped.ends_with(e)) =>
            {
                continue;
            }
            // "class", "status", "analysis" are words, not plurals.
            "s" if stripped.ends_with(['s', 'u', 'i']) => return term.to_owned(),
            _ => {}
        }
        base = stripped;
        break;
    }
    // A final silent "e" goes too, so "parse" meets "parser" and "parsing".
    match base.strip_suffix('e') {
        Some(shorter) if shorter.len() >= 4 => shorter.to_owned(),
        _ => base.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_meet_across_forms() {
        for (word, expected) in [
            ("extracts", "extract"),
            ("extracted", "extract"),
            ("extractor", "extract"),
            ("watermarks", "watermark"),
            ("addresses", "address"),
            ("images", "imag"),
            ("image", "imag"),
            ("pages", "page"),
            ("libraries", "library"),
            ("status", "status"),
            ("process", "process"),
            ("text", "text"),
            ("данные", "данные"),
        ] {
            assert_eq!(stem(word), expected, "{word}");
        }
    }

    #[test]
    fn identifier_splitting() {
        assert_eq!(terms("extract_text"), ["extract_text", "extract", "text"]);
        assert_eq!(
            terms("PdfReader.getPage"),
            ["pdfreader", "pdf", "reader", "getpage", "get", "page"]
        );
        assert_eq!(terms("the a of"), Vec::<String>::new());
    }
}
