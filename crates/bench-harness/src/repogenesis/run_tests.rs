use super::*;

#[test]
fn killed_runs_still_say_how_far_they_got() {
    let log = "tests/t.py::a PASSED [ 10%]\ntests/t.py::b FAILED [ 20%]\ntests/t.py::c ";
    assert_eq!(verbose_progress(log).as_deref(), Some("1 passed, 1 failed"));
    assert_eq!(verbose_progress("collecting ..."), None);
}

const LISTENING: Readiness = Readiness::Listening { after_ms: 100 };

#[test]
fn the_legacy_dsr_reads_exit_messages() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("start.sh"), "").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        legacy_dsr(Language::Python, dir.path(), true, &LISTENING, "").1,
        "Unknown or missing build config"
    );
    std::fs::write(dir.path().join("requirements.txt"), "").unwrap_or_else(|e| panic!("{e}"));
    let exited = Readiness::Exited {
        code: Some(0),
        after_ms: 300,
    };
    assert!(
        legacy_dsr(
            Language::Python,
            dir.path(),
            true,
            &exited,
            " * Running on http://x"
        )
        .0
    );
    assert!(
        legacy_dsr(
            Language::Python,
            dir.path(),
            true,
            &exited,
            "OSError: Address already in use"
        )
        .0
    );
    assert_eq!(
        legacy_dsr(Language::Python, dir.path(), true, &exited, "boom"),
        (false, "Server exited with code 0".to_owned())
    );
    assert!(!legacy_dsr(Language::Python, dir.path(), false, &LISTENING, "").0);
    let no_script = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(no_script.path().join("pyproject.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        legacy_dsr(Language::Python, no_script.path(), true, &LISTENING, "").1,
        "start.sh not found (recursive)"
    );
}
