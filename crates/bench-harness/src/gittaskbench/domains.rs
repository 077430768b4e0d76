//! GitTaskBench's seven domains and which of its 18 repositories belongs to
//! which (seed 001, appendix A; the benchmark's README lists the domains,
//! its `code_base/` the repositories).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;

/// A GitTaskBench domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// Style transfer, coloring, restoration, enhancement, backgrounds.
    ImageProcessing,
    /// Video action analysis (3D pose).
    VideoProcessing,
    /// Recognition, noise reduction, separation, enhancement.
    SpeechProcessing,
    /// EDA, ECG, EOG.
    PhysiologicalSignals,
    /// Data simulation, watermark embedding and extraction.
    SecurityPrivacy,
    /// Web crawling and content extraction.
    WebScraping,
    /// PDF and spreadsheet parsing, extraction, processing.
    OfficeDocuments,
    /// A repository the map does not know.
    Other,
}

impl Domain {
    /// Every domain, in report order.
    pub const ALL: [Domain; 8] = [
        Domain::ImageProcessing,
        Domain::VideoProcessing,
        Domain::SpeechProcessing,
        Domain::PhysiologicalSignals,
        Domain::SecurityPrivacy,
        Domain::WebScraping,
        Domain::OfficeDocuments,
        Domain::Other,
    ];

    /// The identifier used in JSON and on the command line (`image_processing`).
    pub fn slug(self) -> &'static str {
        match self {
            Domain::ImageProcessing => "image_processing",
            Domain::VideoProcessing => "video_processing",
            Domain::SpeechProcessing => "speech_processing",
            Domain::PhysiologicalSignals => "physiological_signals",
            Domain::SecurityPrivacy => "security_privacy",
            Domain::WebScraping => "web_scraping",
            Domain::OfficeDocuments => "office_documents",
            Domain::Other => "other",
        }
    }

    /// The name shown in reports (`Image Processing`).
    pub fn label(self) -> &'static str {
        match self {
            Domain::ImageProcessing => "Image Processing",
            Domain::VideoProcessing => "Video Processing",
            Domain::SpeechProcessing => "Speech Processing",
            Domain::PhysiologicalSignals => "Physiological Signals",
            Domain::SecurityPrivacy => "Security & Privacy",
            Domain::WebScraping => "Web Scraping",
            Domain::OfficeDocuments => "Office Document Processing",
            Domain::Other => "Other",
        }
    }

    /// Parses a slug or a label, ignoring case, spaces, `-`, `_` and `&`
    /// (`"web scraping"`, `"Web-Scraping"`, `"security_privacy"`).
    pub fn parse(text: &str) -> Option<Domain> {
        let squash = |s: &str| {
            s.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect::<String>()
        };
        let wanted = squash(text);
        Domain::ALL.into_iter().find(|d| {
            squash(d.slug()) == wanted
                || squash(d.label()) == wanted
                || (*d == Domain::OfficeDocuments && wanted == "officedocuments")
        })
    }
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// GitTaskBench's 18 repositories (their `code_base/` directory names) and
/// their domains.
pub const GITTASKBENCH_REPOSITORIES: [(&str, Domain); 18] = [
    ("AnimeGANv3", Domain::ImageProcessing),
    ("DeOldify", Domain::ImageProcessing),
    ("DeScratch", Domain::ImageProcessing),
    ("StyleTransfer", Domain::ImageProcessing),
    ("SuperResolution", Domain::ImageProcessing),
    ("TransparentBackground", Domain::ImageProcessing),
    ("VideoPose3D", Domain::VideoProcessing),
    ("FunASR", Domain::SpeechProcessing),
    ("SpeechBrain", Domain::SpeechProcessing),
    ("NeuroKit", Domain::PhysiologicalSignals),
    ("Faker", Domain::SecurityPrivacy),
    ("InvisibleWatermark", Domain::SecurityPrivacy),
    ("Stegano", Domain::SecurityPrivacy),
    ("Scrapy", Domain::WebScraping),
    ("Trafilatura", Domain::WebScraping),
    ("Eparse", Domain::OfficeDocuments),
    ("PDFPlumber", Domain::OfficeDocuments),
    ("PyPDF2", Domain::OfficeDocuments),
];

/// Repository name → domain. Lookups ignore case.
///
/// ```
/// use bench_harness::{Domain, DomainMap};
///
/// let map = DomainMap::gittaskbench().with("WordCount", Domain::OfficeDocuments);
/// assert_eq!(map.domain_of("NeuroKit"), Domain::PhysiologicalSignals);
/// assert_eq!(map.domain_of("stegano"), Domain::SecurityPrivacy);
/// assert_eq!(map.domain_of("WordCount"), Domain::OfficeDocuments);
/// assert_eq!(map.domain_of("Unknown"), Domain::Other);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainMap {
    repositories: BTreeMap<String, Domain>,
}

impl DomainMap {
    /// The map of GitTaskBench's 18 repositories.
    pub fn gittaskbench() -> Self {
        DomainMap {
            repositories: GITTASKBENCH_REPOSITORIES
                .iter()
                .map(|(name, domain)| (name.to_ascii_lowercase(), *domain))
                .collect(),
        }
    }

    /// Adds or replaces a repository's domain.
    pub fn with(mut self, repo: &str, domain: Domain) -> Self {
        self.repositories.insert(repo.to_ascii_lowercase(), domain);
        self
    }

    /// Adds the entries of a JSON file `{"Repo": "domain", ...}` (slugs or
    /// labels), replacing existing ones.
    pub fn extend_from_file(mut self, path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: "reading the domain map",
            path: path.to_path_buf(),
            source,
        })?;
        let entries: BTreeMap<String, String> =
            serde_json::from_str(&text).map_err(|e| Error::Invalid {
                path: path.to_path_buf(),
                message: format!("expected a JSON object {{\"Repository\": \"domain\"}}: {e}"),
            })?;
        for (repo, name) in entries {
            let domain = Domain::parse(&name).ok_or_else(|| Error::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "unknown domain {name:?} for {repo}; use one of {}",
                    Domain::ALL.map(Domain::slug).join(", ")
                ),
            })?;
            self = self.with(&repo, domain);
        }
        Ok(self)
    }

    /// The domain of `repo`, [`Domain::Other`] when unknown.
    pub fn domain_of(&self, repo: &str) -> Domain {
        self.repositories
            .get(&repo.to_ascii_lowercase())
            .copied()
            .unwrap_or(Domain::Other)
    }

    /// How many repositories the map knows.
    pub fn len(&self) -> usize {
        self.repositories.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.repositories.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eighteen_repositories_in_seven_domains() {
        let map = DomainMap::gittaskbench();
        assert_eq!(map.len(), 18);
        let domains: std::collections::BTreeSet<Domain> =
            GITTASKBENCH_REPOSITORIES.iter().map(|(_, d)| *d).collect();
        assert_eq!(domains.len(), 7);
        assert!(!domains.contains(&Domain::Other));
    }

    #[test]
    fn domains_parse_from_slugs_and_labels() {
        for d in Domain::ALL {
            assert_eq!(Domain::parse(d.slug()), Some(d));
            assert_eq!(Domain::parse(d.label()), Some(d));
        }
        assert_eq!(Domain::parse("web scraping"), Some(Domain::WebScraping));
        assert_eq!(Domain::parse("nope"), None);
    }
}
