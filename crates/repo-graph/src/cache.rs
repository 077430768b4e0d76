//! Per-file facts cached by content hash, in memory and optionally on disk.
//!
//! The key is the xxh3-128 hash of a file's bytes, so a renamed or moved file
//! is still a hit and an edited one is a miss.
//!
//! On disk the cache is one append-only log: a header, then one frame per
//! entry (`hash: u128 LE`, `language: u8`, `len: u32 LE`, then `len` bytes
//! of postcard). After
//! an edit only the new entries are appended, so re-analysing after a small
//! change writes kilobytes, not the whole cache; when stale frames outnumber
//! live ones the log is rewritten (to a temporary file renamed over the old
//! one). Frames decode in parallel. A torn last frame (a crash mid-append) or
//! a frame that does not decode is skipped with a warning: the cache is an
//! optimisation and is never trusted over the source.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::facts::{FACTS_VERSION, Facts, FactsKey};
use crate::model::Language;

pub(crate) type FactsMap = HashMap<FactsKey, Arc<Facts>>;

const MAGIC: &[u8; 8] = b"RGFACTS\0";

pub(crate) fn cache_file(dir: &Path) -> PathBuf {
    dir.join(format!("facts-v{FACTS_VERSION}.log"))
}

fn header() -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&FACTS_VERSION.to_le_bytes());
    out
}

/// What was read from disk: the facts, and how many frames the log holds.
pub(crate) struct Loaded {
    pub facts: FactsMap,
    pub frames: usize,
}

/// Loads the on-disk cache; a missing, stale or unreadable file gives an empty map.
pub(crate) fn load(dir: &Path) -> Loaded {
    let empty = Loaded {
        facts: FactsMap::new(),
        frames: 0,
    };
    let path = cache_file(dir);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %path.display(), %error, "analysis cache unreadable; starting cold");
            }
            return empty;
        }
    };
    let Some(mut rest) = bytes.strip_prefix(header().as_slice()) else {
        tracing::warn!(path = %path.display(), "analysis cache has another format; starting cold");
        return empty;
    };
    let mut frames: Vec<(FactsKey, &[u8])> = Vec::new();
    while !rest.is_empty() {
        let Some((key, len, tail)) = split_frame_header(rest) else {
            tracing::warn!(path = %path.display(), "analysis cache ends in a torn frame; ignoring it");
            break;
        };
        let Some(blob) = tail.get(..len) else {
            tracing::warn!(path = %path.display(), "analysis cache ends in a torn frame; ignoring it");
            break;
        };
        frames.push((key, blob));
        rest = &tail[len..];
    }
    let count = frames.len();
    let facts: FactsMap = frames
        .par_iter()
        .filter_map(|(key, blob)| match postcard::from_bytes::<Facts>(blob) {
            Ok(facts) if facts.language() == key.1 => Some((*key, Arc::new(facts))),
            Ok(_) => {
                tracing::warn!("skipping an analysis cache entry filed under another language");
                None
            }
            Err(error) => {
                tracing::warn!(%error, "skipping an analysis cache entry that does not decode");
                None
            }
        })
        .collect();
    Loaded {
        facts,
        frames: count,
    }
}

fn language_byte(language: Language) -> u8 {
    match language {
        Language::Python => 0,
        Language::Java => 1,
    }
}

fn split_frame_header(bytes: &[u8]) -> Option<(FactsKey, usize, &[u8])> {
    let hash = u128::from_le_bytes(bytes.get(..16)?.try_into().ok()?);
    let language = match bytes.get(16)? {
        0 => Language::Python,
        1 => Language::Java,
        // An unknown language byte means the frame boundaries cannot be trusted.
        _ => return None,
    };
    let len = u32::from_le_bytes(bytes.get(17..21)?.try_into().ok()?);
    Some((
        (hash, language),
        usize::try_from(len).ok()?,
        bytes.get(21..)?,
    ))
}

fn frames(entries: &[(FactsKey, Arc<Facts>)]) -> Result<Vec<u8>, postcard::Error> {
    let blobs: Result<Vec<(FactsKey, Vec<u8>)>, postcard::Error> = entries
        .par_iter()
        .map(|(key, facts)| Ok((*key, postcard::to_stdvec(&**facts)?)))
        .collect();
    let mut out = Vec::new();
    for ((hash, language), blob) in blobs? {
        out.extend_from_slice(&hash.to_le_bytes());
        out.push(language_byte(language));
        let len = u32::try_from(blob.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&blob);
    }
    Ok(out)
}

/// How to bring the on-disk log up to date.
pub(crate) enum Update<'a> {
    /// Append these new entries to the existing log.
    Append(&'a [(FactsKey, Arc<Facts>)]),
    /// Replace the log with exactly these entries.
    Rewrite(&'a [(FactsKey, Arc<Facts>)]),
}

pub(crate) fn store(dir: &Path, update: Update<'_>) -> Result<(), crate::Error> {
    let io = |source| crate::Error::Cache {
        path: dir.to_path_buf(),
        source,
    };
    let encode = |entries| frames(entries).map_err(|e| io(std::io::Error::other(e.to_string())));
    std::fs::create_dir_all(dir).map_err(io)?;
    let path = cache_file(dir);
    match update {
        Update::Append(entries) if path.is_file() => {
            let bytes = encode(entries)?;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(io)?;
            file.write_all(&bytes).map_err(io)
        }
        Update::Append(entries) | Update::Rewrite(entries) => {
            let mut bytes = header();
            bytes.extend(encode(entries)?);
            let temp = dir.join(format!(".facts-{}.tmp", std::process::id()));
            std::fs::write(&temp, &bytes).map_err(io)?;
            std::fs::rename(&temp, &path).map_err(io)
        }
    }
}
