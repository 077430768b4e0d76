//! The caller's environment does not leak into the sandbox. Its own test binary
//! because it sets a variable in this process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{builder, workdir};
use sandbox::{Isolation, Sandbox};

const SECRET: &str = "sk-test-do-not-leak-4f1b2";

async fn env_inside(isolation: Isolation, pass: bool) -> String {
    let dir = workdir();
    let mut config = builder(dir.path(), isolation);
    if pass {
        config = config.pass_env("OPENAI_API_KEY");
    }
    let sandbox = Sandbox::new(config.build().unwrap()).await.unwrap();
    let result = sandbox.run_shell("env").await.unwrap();
    assert!(result.success(), "{result:?}");
    let home_line = format!("HOME={}", sandbox.home_dir().display());
    assert!(
        result.stdout.contains(&home_line),
        "HOME is the private one"
    );
    result.stdout.to_string()
}

#[allow(unsafe_code)]
#[tokio::test]
async fn a_secret_in_the_callers_environment_is_not_visible_inside() {
    // SAFETY: this binary holds only this test, and the variable is set before any
    // thread of ours reads the environment or spawns a process.
    unsafe { std::env::set_var("OPENAI_API_KEY", SECRET) };

    let mut levels = vec![Isolation::Process];
    if common::namespaces_or_skip("environment check in namespaces").await {
        levels.push(Isolation::Namespaces);
    }
    for isolation in levels {
        let inside = env_inside(isolation, false).await;
        assert!(!inside.contains("OPENAI_API_KEY"), "{isolation}: {inside}");
        assert!(!inside.contains(SECRET), "{isolation}");
        // Control: explicitly allowed, it does arrive, so the check above can fail.
        let allowed = env_inside(isolation, true).await;
        assert!(
            allowed.contains(&format!("OPENAI_API_KEY={SECRET}")),
            "{isolation}"
        );
    }
}
