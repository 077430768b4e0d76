//! Snapshots of the `routes` view of one small web service per framework
//! under `testdata/routes/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use repo_graph::Analyzer;

macro_rules! routes_test {
    ($name:ident) => {
        #[test]
        fn $name() {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../testdata/routes")
                .join(stringify!($name));
            let graph = Analyzer::new(dir).analyze().unwrap();
            insta::assert_json_snapshot!(
                concat!("routes_", stringify!($name)),
                graph.routes_document()
            );
        }
    };
}

routes_test!(spring_boot);
routes_test!(quarkus_jaxrs);
routes_test!(micronaut);
routes_test!(javalin);
routes_test!(spark);
routes_test!(flask);
routes_test!(fastapi);
routes_test!(django);

/// A URLconf reached through many chains of `include`s gets a bounded
/// number of prefixes instead of one per chain (2^20 here).
#[test]
fn django_include_diamonds_stay_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: String| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("site/__init__.py", String::new());
    for level in 0..20 {
        write(
            &format!("site/urls{level}.py"),
            format!(
                "from django.urls import include, path\nurlpatterns = [\n    path(\"a/\", include(\"site.urls{n}\")),\n    path(\"b/\", include(\"site.urls{n}\")),\n]\n",
                n = level + 1
            ),
        );
    }
    write(
        "site/urls20.py",
        "from django.urls import path\nfrom .views import leaf\nurlpatterns = [path(\"leaf/\", leaf)]\n".into(),
    );
    write("site/views.py", "def leaf(request):\n    pass\n".into());
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let routes = graph.routes();
    assert!(!routes.is_empty() && routes.len() <= 32, "{}", routes.len());
    assert!(routes.iter().all(|r| r.handler == "site.views.leaf"));
    assert!(routes.iter().all(|r| r.path.ends_with("/leaf/")));
}
