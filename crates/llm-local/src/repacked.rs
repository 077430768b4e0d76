//! The interleaved K-quant matrices of a GGUF file, kept beside it in
//! `.<name>.repacked` and memory-mapped by the loads after the first.
//!
//! Interleaving the Q4_K and Q6_K matrices (see `kernels::interleaved`)
//! takes about a second per GB and leaves the weights in anonymous
//! memory. The first load of a file writes the result here; later loads
//! map it and use its pages in place, shared between processes and never
//! copied, so a load costs the header, the small vectors and one check
//! of the mapped bytes.
//!
//! Layout: each matrix's groups at the offset its entry names (multiples
//! of 4,096 from the start), then the header as JSON ([`Header`]), then
//! 16 bytes: the header's offset (u64, little-endian) and [`MAGIC`].
//!
//! The file is used only when its header names this layout
//! ([`VERSION`]) and the GGUF file as it is now ([`FileKey`] and a hash of
//! its first MiB), every entry's tensor is in the GGUF with a type and
//! shape whose interleaved length is the entry's, and every entry's bytes
//! hash to what the header says. Anything else is logged and the file
//! rebuilt. It is written under a temporary name and renamed into place,
//! never changed in place; like any memory map, it must not be truncated
//! by someone else while a model uses it.

// Mapping a file is `unsafe` because another process could change it
// under the map; see the module's last paragraph.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use candle_core::quantized::GgmlDType;
use candle_core::quantized::gguf_file::Content;
use memmap2::Mmap;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tracing::{debug, info, warn};
use xxhash_rust::xxh3::xxh3_64;

use crate::install::{FileKey, temp_name};
use crate::kernels::{NativeType, QMatrix};

/// The file's last 8 bytes.
const MAGIC: &[u8; 8] = b"RAREPACK";

/// The layout of the groups (`kernels::interleaved`); a file of another
/// version is rebuilt.
const VERSION: u32 = 1;

/// Offsets of the matrices are multiples of this (a page).
const ALIGN: u64 = 4096;

/// The bytes of the GGUF file hashed into [`Header::source_head`] (its
/// metadata and tensor table, for a model of this size).
const SOURCE_HEAD: u64 = 1 << 20;

/// The largest header read (a header is about 100 bytes per matrix).
const MAX_HEADER: u64 = 16 << 20;

/// What a file of repacked weights says about itself.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    version: u32,
    /// The GGUF file the matrices were made from.
    source: FileKey,
    /// xxh3 of the GGUF file's first [`SOURCE_HEAD`] bytes.
    source_head: u64,
    entries: Vec<Entry>,
}

/// One matrix in a file of repacked weights.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// The GGUF tensor's name.
    name: String,
    offset: u64,
    len: u64,
    /// xxh3 of the bytes.
    xxh3: u64,
}

/// Where the repacked weights of the GGUF at `path` are kept.
pub(crate) fn cache_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.repacked"))
}

/// The engine's interleaved type of a GGUF tensor, with its rows and
/// columns; `None` for tensors that are not interleaved.
fn interleaved_tensor(content: &Content, name: &str) -> Option<(NativeType, usize, usize)> {
    let info = content.tensor_infos.get(name)?;
    let kind = match info.ggml_dtype {
        GgmlDType::Q4K => NativeType::Q4K,
        GgmlDType::Q6K => NativeType::Q6K,
        _ => return None,
    };
    match info.shape.dims() {
        &[rows, cols] => Some((kind, rows, cols)),
        _ => None,
    }
}

/// Whether the GGUF has any matrix worth a file of repacked weights.
pub(crate) fn has_interleaved(content: &Content) -> bool {
    content
        .tensor_infos
        .keys()
        .any(|name| interleaved_tensor(content, name).is_some())
}

/// xxh3 of the first [`SOURCE_HEAD`] bytes of `file`.
fn source_head(file: &File) -> io::Result<u64> {
    let len = file.metadata()?.len().min(SOURCE_HEAD);
    let mut head = vec![0u8; len as usize];
    file.read_exact_at(&mut head, 0)?;
    Ok(xxh3_64(&head))
}

/// A mapped file of repacked weights, checked against its GGUF file.
pub(crate) struct Repacked {
    map: Arc<Mmap>,
    /// Each matrix's bytes in `map`.
    entries: HashMap<String, Range<usize>>,
}

impl Repacked {
    /// Maps and checks the file at `path` made from `gguf` (whose header
    /// is `content`). The error says why it cannot be used.
    pub(crate) fn open(path: &Path, gguf: &File, content: &Content) -> Result<Self, String> {
        let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        if len < 16 {
            return Err(format!("{len} bytes is too short"));
        }
        let mut trailer = [0u8; 16];
        file.read_exact_at(&mut trailer, len - 16)
            .map_err(|e| format!("cannot read the trailer: {e}"))?;
        let (at, magic) = trailer.split_at(8);
        if magic != MAGIC {
            return Err("not a file of repacked weights".into());
        }
        let at = u64::from_le_bytes(at.try_into().unwrap_or_default());
        let header_len = (len - 16)
            .checked_sub(at)
            .filter(|&n| n <= MAX_HEADER)
            .ok_or_else(|| format!("a header at {at} of a {len}-byte file"))?;
        let mut text = vec![0u8; header_len as usize];
        file.read_exact_at(&mut text, at)
            .map_err(|e| format!("cannot read the header: {e}"))?;
        let header: Header =
            serde_json::from_slice(&text).map_err(|e| format!("unreadable header: {e}"))?;
        if header.version != VERSION {
            return Err(format!("layout {} (this build: {VERSION})", header.version));
        }
        let source = FileKey::of(gguf).map_err(|e| e.to_string())?;
        if header.source != source {
            return Err("made from another version of the model file".into());
        }
        if header.source_head != source_head(gguf).map_err(|e| e.to_string())? {
            return Err("the model file's header changed".into());
        }
        let mut entries = HashMap::with_capacity(header.entries.len());
        for entry in &header.entries {
            let expected = interleaved_tensor(content, &entry.name)
                .and_then(|(kind, rows, cols)| QMatrix::repacked_len(kind, rows, cols));
            let end = entry.offset.checked_add(entry.len).filter(|&end| end <= at);
            if expected != Some(entry.len as usize) || end.is_none() || entry.offset % ALIGN != 0 {
                return Err(format!("entry `{}` does not fit the model", entry.name));
            }
            entries.insert(
                entry.name.clone(),
                entry.offset as usize..(entry.offset + entry.len) as usize,
            );
        }
        // SAFETY: the file is only ever replaced by a rename, never
        // written in place (see the module's documentation); its length
        // was read above and every range is checked against it.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| format!("cannot map: {e}"))?;
        if (map.len() as u64) < at {
            return Err("the file shrank while it was opened".into());
        }
        let bad = header.entries.par_iter().find_any(|entry| {
            let range = entry.offset as usize..(entry.offset + entry.len) as usize;
            xxh3_64(&map[range]) != entry.xxh3
        });
        if let Some(entry) = bad {
            return Err(format!("the bytes of `{}` are corrupt", entry.name));
        }
        Ok(Self {
            map: Arc::new(map),
            entries,
        })
    }

    /// The GGUF tensor `name` as a matrix of mapped groups, if the file
    /// has it.
    pub(crate) fn matrix(&self, content: &Content, name: &str) -> Option<QMatrix> {
        let range = self.entries.get(name)?.clone();
        let (kind, rows, cols) = interleaved_tensor(content, name)?;
        let data: Arc<dyn AsRef<[u8]> + Send + Sync> = self.map.clone();
        // Checked when opened; a failure here only means the matrix is
        // interleaved again from the GGUF file.
        QMatrix::from_repacked(kind, data, range, rows, cols)
            .inspect_err(|error| warn!(name, %error, "a repacked matrix does not fit"))
            .ok()
    }
}

/// A file of repacked weights being written, matrix by matrix as the
/// load makes them (from several threads), under a temporary name.
pub(crate) struct Writer {
    tmp: PathBuf,
    dest: PathBuf,
    file: File,
    source: FileKey,
    source_head: u64,
    /// The entries so far and the end of the last one.
    written: Mutex<(Vec<Entry>, u64)>,
    /// A write failed: the file is not kept.
    failed: AtomicBool,
    /// Renamed into place: nothing to remove when dropped.
    finished: bool,
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.finished {
            debug!(path = %self.tmp.display(), "no repacked weights written");
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl Writer {
    /// Starts the file of repacked weights of `gguf` at `dest`.
    pub(crate) fn create(dest: &Path, gguf: &File) -> io::Result<Self> {
        let source = FileKey::of(gguf)?;
        let source_head = source_head(gguf)?;
        let tmp = temp_name(dest);
        let file = File::options().write(true).create_new(true).open(&tmp)?;
        Ok(Self {
            tmp,
            dest: dest.to_path_buf(),
            file,
            source,
            source_head,
            written: Mutex::new((Vec::new(), 0)),
            failed: AtomicBool::new(false),
            finished: false,
        })
    }

    /// Writes the matrix `name`, if it is interleaved. A failed write
    /// (a full disk) is logged, and the file is then not kept.
    pub(crate) fn add(&self, name: &str, matrix: &QMatrix) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(error) = self.write(name, matrix) {
            warn!(path = %self.tmp.display(), %error, "cannot write the repacked weights");
            self.failed.store(true, Ordering::Relaxed);
        }
    }

    fn write(&self, name: &str, matrix: &QMatrix) -> io::Result<()> {
        let Some(bytes) = matrix.repacked_bytes() else {
            return Ok(());
        };
        let offset = {
            let mut written = self
                .written
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?;
            let offset = written.1.next_multiple_of(ALIGN);
            written.1 = offset + bytes.len() as u64;
            offset
        };
        self.file.write_all_at(bytes, offset)?;
        let entry = Entry {
            name: name.to_owned(),
            offset,
            len: bytes.len() as u64,
            xxh3: xxh3_64(bytes),
        };
        self.written
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .0
            .push(entry);
        Ok(())
    }

    /// Writes the header and renames the file into place.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        if self.failed.load(Ordering::Relaxed) {
            return Err(io::Error::other("a write failed"));
        }
        let (mut entries, end) = std::mem::take(
            &mut *self
                .written
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?,
        );
        entries.sort_by_key(|e| e.offset);
        let count = entries.len();
        let header = Header {
            version: VERSION,
            source: self.source,
            source_head: self.source_head,
            entries,
        };
        let mut tail = serde_json::to_vec(&header).map_err(io::Error::other)?;
        tail.extend_from_slice(&end.to_le_bytes());
        tail.extend_from_slice(MAGIC);
        self.file.write_all_at(&tail, end)?;
        fs::rename(&self.tmp, &self.dest)?;
        self.finished = true;
        info!(path = %self.dest.display(), matrices = count, bytes = end, "wrote the repacked weights");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::{QTensor, gguf_file};
    use candle_core::{Device, Tensor};

    use super::*;
    use crate::engine::TensorFile;
    use crate::kernels::Activations;

    /// A GGUF with a Q4_K and a Q6_K matrix (row counts not multiples of
    /// 16) and an f32 vector.
    fn kquant_gguf(dir: &Path) -> PathBuf {
        let tensors: Vec<(&str, QTensor)> = [
            ("a.weight", vec![40, 512], GgmlDType::Q4K),
            ("b.weight", vec![24, 256], GgmlDType::Q6K),
            ("n.weight", vec![256], GgmlDType::F32),
        ]
        .into_iter()
        .map(|(name, shape, dtype)| {
            let n: usize = shape.iter().product();
            let values: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let tensor = Tensor::from_vec(values, shape.as_slice(), &Device::Cpu).unwrap();
            (name, QTensor::quantize(&tensor, dtype).unwrap())
        })
        .collect();
        let path = dir.join("m.gguf");
        let mut file = File::create(&path).unwrap();
        let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, q)| (*n, q)).collect();
        gguf_file::write(&mut file, &[], &refs).unwrap();
        path
    }

    /// Loads the two matrices as a model load does; whether they were
    /// mapped.
    fn load(path: &Path) -> (Vec<QMatrix>, bool) {
        let mut file = File::open(path).unwrap();
        let content = Content::read(&mut file).unwrap();
        assert!(has_interleaved(&content));
        let repacking = crate::repacking(path, &file, &content);
        let tensors = TensorFile::new(&content, &file)
            .unwrap()
            .with_repacking(repacking);
        let matrices = ["a.weight", "b.weight"].map(|n| tensors.matrix(n).unwrap());
        (matrices.into(), tensors.finish())
    }

    /// Each matrix times 3 tokens.
    fn products(matrices: &[QMatrix]) -> Vec<Vec<f32>> {
        matrices
            .iter()
            .map(|m| {
                let x: Vec<f32> = (0..3 * m.cols()).map(|i| (i % 7) as f32 - 3.0).collect();
                let mut act = Activations::default();
                act.set(&x, m.cols()).unwrap();
                let mut out = vec![0.0; 3 * m.rows()];
                m.matmul(&act, &mut out).unwrap();
                out
            })
            .collect()
    }

    fn bits(values: &[Vec<f32>]) -> Vec<Vec<u32>> {
        values
            .iter()
            .map(|v| v.iter().map(|x| x.to_bits()).collect())
            .collect()
    }

    #[test]
    fn the_second_load_maps_what_the_first_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = kquant_gguf(dir.path());
        let (made, mapped) = load(&path);
        assert!(!mapped);
        assert!(cache_path(&path).is_file());
        let (again, mapped) = load(&path);
        assert!(mapped, "the second load maps the file");
        for (a, b) in made.iter().zip(&again) {
            assert_eq!(a.repacked_bytes(), b.repacked_bytes());
            assert_eq!((a.rows(), a.cols()), (b.rows(), b.cols()));
        }
        assert_eq!(bits(&products(&made)), bits(&products(&again)));
        // Only the file of repacked weights is left beside the model.
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [".m.gguf.repacked", "m.gguf"]);
    }

    #[test]
    fn a_damaged_or_stale_file_is_rebuilt_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = kquant_gguf(dir.path());
        let cache = cache_path(&path);
        let (made, _) = load(&path);
        let good = fs::read(&cache).unwrap();
        let flipped = {
            let mut bytes = good.clone();
            bytes[100] ^= 1;
            bytes
        };
        let damaged: [(&str, Vec<u8>); 5] = [
            ("a flipped bit", flipped),
            ("cut short", good[..good.len() - 20].to_vec()),
            ("cut in the groups", good[..5000].to_vec()),
            ("empty", Vec::new()),
            ("garbage", b"not a file of repacked weights".repeat(100)),
        ];
        for (what, bytes) in damaged {
            fs::write(&cache, bytes).unwrap();
            let (rebuilt, mapped) = load(&path);
            assert!(!mapped, "{what}: not used");
            assert_eq!(bits(&products(&rebuilt)), bits(&products(&made)), "{what}");
            assert_eq!(fs::read(&cache).unwrap(), good, "{what}: rebuilt");
            assert!(load(&path).1, "{what}: the rebuilt file is used");
        }
        // The model file touched (another modification time): rebuilt.
        let model = File::options().write(true).open(&path).unwrap();
        model
            .set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(7))
            .unwrap();
        drop(model);
        assert!(!load(&path).1, "a changed model file");
        assert!(load(&path).1);
    }

    #[test]
    fn a_file_without_k_quant_matrices_needs_no_repacked_weights() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.gguf");
        let tensor = Tensor::from_vec(vec![1.0f32; 64], 64, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&tensor, GgmlDType::F32).unwrap();
        gguf_file::write(&mut File::create(&path).unwrap(), &[], &[("n.weight", &q)]).unwrap();
        let content = Content::read(&mut File::open(&path).unwrap()).unwrap();
        assert!(!has_interleaved(&content));
    }
}
