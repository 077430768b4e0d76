//! Entity search: the one ranker behind the agent's `search_code` tool and
//! `view_code`'s "similar names", the same BM25 ([`crate::bm25`]) the
//! initial context ranks text with.
//!
//! Each module, class and function is a document made of its name (three
//! times: a match there matters most), its qualified name and the first
//! part of its docstring, split into [`terms`] and [`stem`]med, so that
//! "extract text from pdf pages" meets `extract_text` in `pdf/page.py`.
//! A query that is an entity's name or the tail of its qualified name, as
//! written (`PdfReader`, `reader.PdfReader.pages`), ranks that entity
//! first: a model that names a symbol wants that symbol.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(
//!     dir.path().join("pdf.py"),
//!     "class PdfReader:\n    def extract_text(self):\n        \"\"\"The text of every page.\"\"\"\n\ndef write_image(): pass\n",
//! )?;
//! let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
//! let search = context_pack::search::EntitySearch::new(&graph);
//!
//! let hits = search.search("extract the text of the pages", 3);
//! assert_eq!(hits[0].qualname, "pdf.PdfReader.extract_text");
//! assert_eq!(search.search("PdfReader", 1)[0].qualname, "pdf.PdfReader");
//! # Ok(())
//! # }
//! ```

use repo_graph::{EntityId, RepoGraph};

use crate::bm25::{Bm25, stem, terms};

/// How much of a docstring is indexed: its summary and first paragraphs,
/// not the parameter lists of a long reference page.
const DOC_CHARS: usize = 600;

/// How many times a name's terms count in its document.
const NAME_WEIGHT: usize = 3;

/// One entity found by [`EntitySearch::search`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EntityHit {
    /// The entity.
    pub entity: EntityId,
    /// Its qualified name.
    pub qualname: String,
    /// Higher is better; comparable within one search only.
    pub score: f64,
}

/// A search index over one repository's entities, built once and queried
/// as often as needed.
pub struct EntitySearch {
    entities: Vec<EntityId>,
    qualnames: Vec<String>,
    /// Each entity's name and qualified name, lowercased once here for the
    /// exact-name rule (not once per entity per query).
    names: Vec<String>,
    lower_qualnames: Vec<String>,
    index: Bm25,
}

impl EntitySearch {
    /// Indexes every module, class and function of `graph`.
    pub fn new(graph: &RepoGraph) -> Self {
        let mut entities = Vec::new();
        let mut qualnames = Vec::new();
        let mut names = Vec::new();
        let mut lower_qualnames = Vec::new();
        let mut documents = Vec::new();
        let mut add = |entity: EntityId, name: &str, qualname: &str, doc: Option<&str>| {
            let mut words: Vec<String> = Vec::new();
            let name_terms = terms(name);
            for _ in 0..NAME_WEIGHT {
                words.extend(name_terms.iter().cloned());
            }
            words.extend(terms(qualname));
            if let Some(doc) = doc {
                let end = doc.floor_char_boundary(DOC_CHARS);
                words.extend(terms(&doc[..end]));
            }
            documents.push(words.iter().map(|t| stem(t)).collect());
            entities.push(entity);
            qualnames.push(qualname.to_owned());
            lower_qualnames.push(qualname.to_lowercase());
            names.push(name.to_lowercase());
        };
        for (id, module) in graph.module_ids().zip(graph.modules()) {
            let short = module.name.rsplit('.').next().unwrap_or(&module.name);
            add(
                EntityId::Module(id),
                short,
                &module.name,
                module.docstring.as_deref(),
            );
        }
        for (id, class) in graph.class_ids().zip(graph.classes()) {
            add(
                EntityId::Class(id),
                &class.name,
                &class.qualname,
                class.docstring.as_deref(),
            );
        }
        for (id, function) in graph.function_ids().zip(graph.functions()) {
            add(
                EntityId::Function(id),
                &function.name,
                &function.qualname,
                function.docstring.as_deref(),
            );
        }
        EntitySearch {
            entities,
            qualnames,
            names,
            lower_qualnames,
            index: Bm25::from_terms(documents),
        }
    }

    /// The entities that match `query` best, at most `limit`, best first
    /// (ties by qualified name). Nothing for a query without a term.
    pub fn search(&self, query: &str, limit: usize) -> Vec<EntityHit> {
        let query_terms: Vec<String> = terms(query).iter().map(|t| stem(t)).collect();
        let written = query.trim().to_lowercase();
        if query_terms.is_empty() && written.is_empty() {
            return Vec::new();
        }
        let mut scores = self.index.scores_for_terms(query_terms);
        // A written name ranks its entity above every text match.
        let top = scores.iter().copied().fold(0.0, f64::max) + 1.0;
        if !written.is_empty() && !written.contains(char::is_whitespace) {
            let tail = format!(".{written}");
            for (i, score) in scores.iter_mut().enumerate() {
                let qualname = &self.lower_qualnames[i];
                if self.names[i] == written || *qualname == written || qualname.ends_with(&tail) {
                    *score += top;
                }
            }
        }
        let mut ranked: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
        ranked.sort_by(|&a, &b| {
            scores[b]
                .total_cmp(&scores[a])
                .then_with(|| self.qualnames[a].cmp(&self.qualnames[b]))
        });
        ranked.truncate(limit);
        ranked
            .into_iter()
            .map(|i| EntityHit {
                entity: self.entities[i],
                qualname: self.qualnames[i].clone(),
                score: scores[i],
            })
            .collect()
    }

    /// How many entities the index holds.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether the index holds no entity.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> (tempfile::TempDir, RepoGraph) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let graph = repo_graph::Analyzer::new(dir.path()).analyze().unwrap();
        (dir, graph)
    }

    #[test]
    fn words_of_a_request_meet_the_parts_of_identifiers() {
        let (_dir, graph) = graph(&[
            (
                "conv/images.py",
                "def convert_image_format(path, fmt):\n    \"\"\"Saves the image in another format.\"\"\"\n",
            ),
            ("conv/text.py", "def read_text(path): pass\n"),
        ]);
        let search = EntitySearch::new(&graph);
        let hits = search.search("convert images to another format", 5);
        assert_eq!(hits[0].qualname, "conv.images.convert_image_format");
        assert!(hits.iter().all(|h| h.qualname != "conv.text.read_text"));
    }

    #[test]
    fn a_written_name_ranks_its_entity_first() {
        // `parse` is in many docstrings; the function named parse wins.
        let (_dir, graph) = graph(&[
            ("a.py", "def parse(text): pass\n"),
            (
                "b.py",
                "def load(text):\n    \"\"\"parse parse parse the text and parse it again\"\"\"\n",
            ),
        ]);
        let search = EntitySearch::new(&graph);
        assert_eq!(search.search("parse", 2)[0].qualname, "a.parse");
        assert_eq!(search.search("a.parse", 1)[0].qualname, "a.parse");
        assert!(search.search("   ", 5).is_empty());
        assert!(search.search("zzz_not_there", 5).is_empty());
    }

    /// A repository's docstrings are hostile: a huge one with a character
    /// across the indexed prefix's end neither panics nor is indexed whole.
    #[test]
    fn huge_and_multibyte_docstrings_are_cut_on_a_character() {
        let doc = format!("x{} needle_at_the_end", "é".repeat(200_000));
        let source = format!("def f():\n    \"\"\"{doc}\"\"\"\n");
        let (_dir, graph) = graph(&[("m.py", &source)]);
        let search = EntitySearch::new(&graph);
        assert_eq!(search.search("f", 1)[0].qualname, "m.f");
        assert!(search.search("needle_at_the_end", 5).is_empty());
    }

    #[test]
    fn equal_scores_keep_a_stable_order_and_the_limit_holds() {
        let (_dir, graph) = graph(&[(
            "m.py",
            "def run_b(): pass\ndef run_a(): pass\ndef run_c(): pass\n",
        )]);
        let search = EntitySearch::new(&graph);
        let hits: Vec<String> = search
            .search("run", 2)
            .into_iter()
            .map(|h| h.qualname)
            .collect();
        assert_eq!(hits, ["m.run_a", "m.run_b"]);
        assert_eq!(search.len(), 4);
    }
}
