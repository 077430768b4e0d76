//! Python: inline code, script files, virtualenvs and pip, without network.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::Path;

use common::{builder, workdir};
use sandbox::{Isolation, PythonEnv, PythonScript, Sandbox, SandboxError};

const NO_ARGS: &[&str] = &[];

#[tokio::test]
async fn inline_code_sees_its_arguments_and_can_import_from_the_working_directory() {
    let dir = workdir();
    std::fs::write(dir.path().join("helper.py"), "VALUE = 41\n").unwrap();
    let sandbox = Sandbox::new(builder(dir.path(), Isolation::Auto).build().unwrap())
        .await
        .unwrap();
    let result = sandbox
        .run_python(
            PythonScript::code("import sys, helper\nprint(helper.VALUE + 1, sys.argv[1:])"),
            &["a", "b c"],
        )
        .await
        .unwrap();
    assert!(result.success(), "{result:?}");
    assert_eq!(result.stdout.head, "42 ['a', 'b c']\n");

    std::fs::write(
        dir.path().join("script.py"),
        "import sys\nsys.exit(int(sys.argv[1]))\n",
    )
    .unwrap();
    let result = sandbox
        .run_python(PythonScript::file("script.py"), &["5"])
        .await
        .unwrap();
    assert_eq!(result.exit_code, Some(5));
}

#[tokio::test]
async fn a_python_traceback_comes_back_on_stderr() {
    let dir = workdir();
    let sandbox = Sandbox::new(builder(dir.path(), Isolation::Auto).build().unwrap())
        .await
        .unwrap();
    let result = sandbox
        .run_python(
            PythonScript::code("raise ValueError('bad input 17')"),
            NO_ARGS,
        )
        .await
        .unwrap();
    assert_eq!(result.exit_code, Some(1));
    assert!(
        result.stderr.contains("ValueError: bad input 17"),
        "{result:?}"
    );
    assert!(!result.killed_for_memory);
}

#[tokio::test]
async fn a_missing_interpreter_is_a_clear_error() {
    let dir = workdir();
    let sandbox = Sandbox::new(
        builder(dir.path(), Isolation::Process)
            .python("/nonexistent/python3")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let err = sandbox
        .run_python(PythonScript::code("print(1)"), NO_ARGS)
        .await
        .unwrap_err();
    assert!(
        matches!(err, SandboxError::PythonUnavailable { .. }),
        "{err}"
    );
    assert!(err.to_string().contains(".python("), "{err}");
}

/// Writes a minimal pure-Python wheel by hand, so that pip can install it with
/// `--no-index` and no build step.
fn write_wheel(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("sbxdemo-0.1-py3-none-any.whl");
    let file = std::fs::File::create(&path).unwrap();
    let mut zip = ZipWriter::new(file);
    zip.add(
        "sbxdemo/__init__.py",
        b"ANSWER = 'installed from a local wheel'\n",
    );
    zip.add(
        "sbxdemo-0.1.dist-info/METADATA",
        b"Metadata-Version: 2.1\nName: sbxdemo\nVersion: 0.1\n",
    );
    zip.add(
        "sbxdemo-0.1.dist-info/WHEEL",
        b"Wheel-Version: 1.0\nGenerator: sandbox-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    );
    zip.add(
        "sbxdemo-0.1.dist-info/RECORD",
        b"sbxdemo/__init__.py,,\nsbxdemo-0.1.dist-info/METADATA,,\nsbxdemo-0.1.dist-info/WHEEL,,\nsbxdemo-0.1.dist-info/RECORD,,\n",
    );
    zip.finish();
    path
}

/// Just enough of the zip format (stored, no compression) for a wheel.
struct ZipWriter {
    out: std::fs::File,
    offset: u32,
    central: Vec<u8>,
    count: u16,
}

impl ZipWriter {
    fn new(out: std::fs::File) -> Self {
        Self {
            out,
            offset: 0,
            central: Vec::new(),
            count: 0,
        }
    }

    fn add(&mut self, name: &str, data: &[u8]) {
        let crc = crc32(data);
        let size = data.len() as u32;
        let mut local = Vec::new();
        local.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        local.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0x21, 0]);
        local.extend_from_slice(&crc.to_le_bytes());
        local.extend_from_slice(&size.to_le_bytes());
        local.extend_from_slice(&size.to_le_bytes());
        local.extend_from_slice(&(name.len() as u16).to_le_bytes());
        local.extend_from_slice(&0u16.to_le_bytes());
        local.extend_from_slice(name.as_bytes());
        self.out.write_all(&local).unwrap();
        self.out.write_all(data).unwrap();

        self.central
            .extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        self.central
            .extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0x21, 0]);
        self.central.extend_from_slice(&crc.to_le_bytes());
        self.central.extend_from_slice(&size.to_le_bytes());
        self.central.extend_from_slice(&size.to_le_bytes());
        self.central
            .extend_from_slice(&(name.len() as u16).to_le_bytes());
        self.central.extend_from_slice(&[0; 12]);
        self.central.extend_from_slice(&self.offset.to_le_bytes());
        self.central.extend_from_slice(name.as_bytes());
        self.offset += (local.len() + data.len()) as u32;
        self.count += 1;
    }

    fn finish(mut self) {
        let mut end = Vec::new();
        end.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        end.extend_from_slice(&[0, 0, 0, 0]);
        end.extend_from_slice(&self.count.to_le_bytes());
        end.extend_from_slice(&self.count.to_le_bytes());
        end.extend_from_slice(&(self.central.len() as u32).to_le_bytes());
        end.extend_from_slice(&self.offset.to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        self.out.write_all(&self.central).unwrap();
        self.out.write_all(&end).unwrap();
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

async fn venv_roundtrip(isolation: Isolation) {
    let dir = workdir();
    let cache = tempfile::tempdir().unwrap();
    let wheel = write_wheel(dir.path());
    let sandbox = Sandbox::new(
        builder(dir.path(), isolation)
            .pip_cache_dir(cache.path().join("pip"))
            .timeout(std::time::Duration::from_secs(120))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let env = sandbox.create_venv(".venv").await.unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(env.dir(), root.join(".venv"));

    let prefix = sandbox
        .run_python_in(
            &env,
            PythonScript::code("import sys; print(sys.prefix)"),
            NO_ARGS,
        )
        .await
        .unwrap();
    assert!(prefix.success(), "{isolation}: {prefix:?}");
    assert_eq!(prefix.stdout.head.trim_end(), env.dir().to_str().unwrap());

    let before = sandbox
        .run_python_in(&env, PythonScript::code("import sbxdemo"), NO_ARGS)
        .await
        .unwrap();
    assert!(before.stderr.contains("ModuleNotFoundError"), "{before:?}");

    let installed = sandbox
        .pip_install(&env, &[wheel.as_os_str()])
        .await
        .unwrap();
    assert!(
        installed
            .stdout
            .contains("Successfully installed sbxdemo-0.1"),
        "{installed:?}"
    );
    let after = sandbox
        .run_python_in(
            &env,
            PythonScript::code("import sbxdemo; print(sbxdemo.ANSWER)"),
            NO_ARGS,
        )
        .await
        .unwrap();
    assert_eq!(
        after.stdout.head, "installed from a local wheel\n",
        "{after:?}"
    );

    let cache_dir = sandbox.pip(&env, &["cache", "dir"]).await.unwrap();
    assert_eq!(
        cache_dir.stdout.head.trim_end(),
        cache.path().join("pip").to_str().unwrap(),
        "pip uses the shared cache"
    );

    // Without the registry switch pip may not reach an index: a name that is not a
    // local file cannot be installed, and the error says how to allow downloads.
    let err = sandbox
        .pip_install(&env, &["surely-not-a-local-package"])
        .await
        .unwrap_err();
    assert!(matches!(err, SandboxError::PipFailed { .. }), "{err}");
    assert!(err.to_string().contains("package_registry(true)"), "{err}");

    let reopened = PythonEnv::open(env.dir()).unwrap();
    assert_eq!(reopened, env);
}

#[tokio::test]
async fn venv_pip_install_from_a_local_wheel_in_process_mode() {
    venv_roundtrip(Isolation::Process).await;
}

#[tokio::test]
async fn venv_pip_install_from_a_local_wheel_in_namespaces_mode() {
    if !common::namespaces_or_skip("venv_pip_install_from_a_local_wheel_in_namespaces_mode").await {
        return;
    }
    venv_roundtrip(Isolation::Namespaces).await;
}
