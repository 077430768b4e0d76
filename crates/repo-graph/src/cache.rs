//! Per-file facts cached by content hash, in memory and optionally on disk.
//!
//! The key is the xxh3-128 hash of a file's bytes, so a renamed or moved file
//! is still a hit and an edited one is a miss. The on-disk form is one
//! postcard file written atomically (temporary file, fsync, rename); a cache
//! that cannot be read is discarded with a warning, never trusted.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::python::{FACTS_VERSION, FileFacts};

pub(crate) type FactsMap = HashMap<u128, Arc<FileFacts>>;

#[derive(Deserialize)]
struct CacheFile {
    version: u32,
    entries: Vec<(u128, FileFacts)>,
}

/// The same layout as [`CacheFile`], borrowing the facts to avoid a copy.
#[derive(Serialize)]
struct CacheFileRef<'a> {
    version: u32,
    entries: Vec<(u128, &'a FileFacts)>,
}

pub(crate) fn cache_file(dir: &Path) -> PathBuf {
    dir.join(format!("facts-v{FACTS_VERSION}.postcard"))
}

/// Loads the on-disk cache; a missing, stale or corrupt file gives an empty map.
pub(crate) fn load(dir: &Path) -> FactsMap {
    let path = cache_file(dir);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %path.display(), %error, "analysis cache unreadable; starting cold");
            }
            return FactsMap::new();
        }
    };
    match postcard::from_bytes::<CacheFile>(&bytes) {
        Ok(file) if file.version == FACTS_VERSION => file
            .entries
            .into_iter()
            .map(|(hash, facts)| (hash, Arc::new(facts)))
            .collect(),
        Ok(_) => FactsMap::new(),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "analysis cache corrupt; starting cold");
            FactsMap::new()
        }
    }
}

/// Writes the facts of the current files, replacing the previous cache atomically.
pub(crate) fn store(dir: &Path, entries: &[(u128, Arc<FileFacts>)]) -> Result<(), crate::Error> {
    let io = |source| crate::Error::Cache {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let file = CacheFileRef {
        version: FACTS_VERSION,
        entries: entries
            .iter()
            .map(|(hash, facts)| (*hash, &**facts))
            .collect(),
    };
    let bytes = postcard::to_stdvec(&file).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let target = cache_file(dir);
    let mut temp = tempfile_in(dir).map_err(io)?;
    temp.1.write_all(&bytes).map_err(io)?;
    temp.1.sync_all().map_err(io)?;
    std::fs::rename(&temp.0, &target).map_err(io)?;
    Ok(())
}

fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let path = dir.join(format!(".facts-{}.tmp", std::process::id()));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}
