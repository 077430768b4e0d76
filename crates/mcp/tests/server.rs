//! The MCP server driven by rmcp's own client, in-process over a pipe:
//! every tool on a small fixture repository, the schemas, the path policy,
//! an edit between calls, resources, and protocol errors.

use std::path::Path;

use agent::run::tools::ToolName;
use repo_mcp::{McpConfig, McpServer};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A copy of `testdata/mcp_shop` (a CLI, a Flask route, a class whose
/// methods call each other, a README) that a test may edit.
fn fixture(dir: &Path) -> Result<(), agent::CopyError> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/mcp_shop");
    agent::copy_tree(&source, dir, &agent::CopyLimits::default(), &[]).map(|_| ())
}

async fn connect(
    server: McpServer,
) -> Result<RunningService<RoleClient, ()>, Box<dyn std::error::Error>> {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    Ok(().serve(client_io).await?)
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    value["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn params(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let map = match arguments {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    CallToolRequestParams::new(name).with_arguments(map)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_offered_tool_answers_on_a_fixture_with_the_agents_schemas() -> TestResult {
    let dir = tempfile::tempdir()?;
    fixture(dir.path())?;
    let server = McpServer::new(McpConfig::builder().repository(dir.path()).build()?).await?;
    let client = connect(server.clone()).await?;

    let tools = client.list_tools(None).await?.tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "list_directory",
            "view_code",
            "view_file",
            "search_code",
            "find_callers",
            "find_callees",
            "module_dependencies",
            "dependency_path",
            "read_document",
            "overview",
            "rank",
            "routes",
            "usage",
        ],
        "no code execution, no writes, no finish without --allow-exec"
    );
    // One definition: the schema offered is the agent's own.
    for tool in &tools {
        let name = ToolName::ALL
            .iter()
            .find(|t| t.as_str() == tool.name)
            .ok_or("a tool the agent does not declare")?;
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            name.parameters()
        );
        assert_eq!(tool.description.as_deref(), Some(name.description()));
    }

    let calls: [(&str, Value, &str); 13] = [
        ("list_directory", json!({"path": "."}), "basket.py"),
        (
            "view_code",
            json!({"target": "shop.basket.Basket"}),
            "def total",
        ),
        (
            "view_file",
            json!({"path": "shop/cli.py", "start_line": 6, "end_line": 7}),
            "def main",
        ),
        (
            "search_code",
            json!({"query": "price"}),
            "shop.basket.price_of",
        ),
        (
            "find_callers",
            json!({"name": "price_of"}),
            "shop.basket.Basket.total",
        ),
        ("find_callees", json!({"name": "shop.cli.main"}), "Basket"),
        (
            "module_dependencies",
            json!({"module": "shop.web", "direction": "imports"}),
            "shop.basket",
        ),
        (
            "dependency_path",
            json!({"from": "shop.cli", "to": "shop.basket"}),
            "shop.basket",
        ),
        (
            "read_document",
            json!({"path": "README.md"}),
            "Prices baskets",
        ),
        (
            "overview",
            json!({"task": "compute the total of a basket", "budget": 2000}),
            "Basket",
        ),
        ("rank", json!({"top": 5}), "shop.basket"),
        ("routes", json!({}), "/total"),
        ("usage", json!({}), "shop-total"),
    ];
    for (name, arguments, expected) in calls {
        let result = client.call_tool(params(name, arguments)).await?;
        let text = text_of(&result);
        assert_ne!(result.is_error, Some(true), "{name}: {text}");
        assert!(
            text.contains(expected),
            "{name} lacks {expected:?}:\n{text}"
        );
    }
    // One analysis served all of them.
    assert_eq!(server.stats().analyses, 1);
    client.cancel().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_repository_are_refused_as_tool_errors() -> TestResult {
    let dir = tempfile::tempdir()?;
    fixture(dir.path())?;
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("secret.txt"), "s3cret\n")?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )?;
    let server = McpServer::new(McpConfig::builder().repository(dir.path()).build()?).await?;
    let client = connect(server).await?;
    let secret = outside.path().join("secret.txt").display().to_string();
    for (name, arguments) in [
        ("view_file", json!({"path": secret})),
        ("view_file", json!({"path": "../../../../etc/passwd"})),
        ("read_document", json!({"path": "link.txt"})),
        ("list_directory", json!({"path": "/"})),
        ("view_code", json!({"target": secret})),
    ] {
        let result = client.call_tool(params(name, arguments.clone())).await?;
        let text = text_of(&result);
        assert_eq!(result.is_error, Some(true), "{name} {arguments}: {text}");
        assert!(
            !text.contains("s3cret") && !text.contains("root:"),
            "{text}"
        );
    }
    client.cancel().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_edited_between_calls_is_seen_and_only_that_analysis_reruns() -> TestResult {
    let dir = tempfile::tempdir()?;
    fixture(dir.path())?;
    let server = McpServer::new(McpConfig::builder().repository(dir.path()).build()?).await?;
    let client = connect(server.clone()).await?;
    let search = |q: &'static str| params("search_code", json!({"query": q}));
    let before = text_of(&client.call_tool(search("discount")).await?);
    assert!(!before.contains("apply_discount"), "{before}");
    // Unchanged: checked, not analysed again.
    client.call_tool(search("basket")).await?;
    assert_eq!(server.stats().analyses, 1);
    assert_eq!(server.stats().checks, 2);

    let basket = dir.path().join("shop/basket.py");
    let mut source = std::fs::read_to_string(&basket)?;
    source.push_str("\n\ndef apply_discount(total, rate):\n    return total * (1 - rate)\n");
    std::fs::write(&basket, source)?;
    let after = text_of(&client.call_tool(search("discount")).await?);
    assert!(after.contains("shop.basket.apply_discount"), "{after}");
    assert_eq!(server.stats().analyses, 2);

    // A new file, and a removed one.
    std::fs::write(
        dir.path().join("shop/tax.py"),
        "def vat(x):\n    return x * 0.2\n",
    )?;
    std::fs::remove_file(dir.path().join("shop/web.py"))?;
    let routes = text_of(&client.call_tool(params("routes", json!({}))).await?);
    assert!(routes.contains("No web routes"), "{routes}");
    let view = text_of(
        &client
            .call_tool(params("view_code", json!({"target": "shop.tax.vat"})))
            .await?,
    );
    assert!(view.contains("return x * 0.2"), "{view}");
    assert_eq!(server.stats().analyses, 3);
    client.cancel().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tools_and_bad_arguments_are_protocol_errors_that_say_what_to_do() -> TestResult {
    let dir = tempfile::tempdir()?;
    fixture(dir.path())?;
    let server = McpServer::new(McpConfig::builder().repository(dir.path()).build()?).await?;
    let client = connect(server.clone()).await?;
    for (name, arguments, says) in [
        ("run_shell", json!({"command": "id"}), "this server's tools"),
        (
            "write_file",
            json!({"path": "x", "content": "y"}),
            "this server's tools",
        ),
        ("no_such_tool", json!({}), "this server's tools"),
        ("view_file", json!({}), "path"),
        ("view_code", json!({"target": "x", "bogus": 1}), "bogus"),
    ] {
        let error = client
            .call_tool(params(name, arguments))
            .await
            .err()
            .ok_or(format!("{name} was accepted"))?;
        let message = error.to_string();
        assert!(message.contains(says), "{name}: {message}");
    }
    // Refused before any analysis.
    assert_eq!(server.stats().analyses, 0);
    client.cancel().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_blocks_are_resources() -> TestResult {
    let dir = tempfile::tempdir()?;
    fixture(dir.path())?;
    let server = McpServer::new(McpConfig::builder().repository(dir.path()).build()?).await?;
    let client = connect(server).await?;
    let resources = client.list_resources(None).await?.resources;
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    let name = dir
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .ok_or("no name")?;
    let whole = format!("repo-agent://{name}/context");
    assert!(uris.contains(&whole.as_str()), "{uris:?}");
    let read = |uri: String| ReadResourceRequestParams::new(uri);
    let text = |value: rmcp::model::ReadResourceResult| {
        serde_json::to_value(&value).unwrap_or(Value::Null)["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let context = text(client.read_resource(read(whole.clone())).await?);
    assert!(context.contains("Prices baskets"), "{context}");
    let readme = text(
        client
            .read_resource(read(format!("{whole}/readme")))
            .await?,
    );
    assert!(
        readme.contains("Prices baskets") && !readme.contains("Basket("),
        "{readme}"
    );
    for bad in [
        format!("{whole}/nothing"),
        "repo-agent://other/context".to_owned(),
        "file:///etc/passwd".to_owned(),
    ] {
        let error = client
            .read_resource(read(bad.clone()))
            .await
            .err()
            .ok_or(bad)?;
        assert!(error.to_string().contains("resources/list"), "{error}");
    }
    client.cancel().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_listens_on_loopback_only_and_serves_the_same_tools() -> TestResult {
    let dir = tempfile::tempdir()?;
    fixture(dir.path())?;
    let server = McpServer::new(McpConfig::builder().repository(dir.path()).build()?).await?;
    let refused = server
        .clone()
        .serve_http("0.0.0.0:0".parse()?, |_| {}, std::future::pending())
        .await;
    assert!(
        matches!(refused, Err(repo_mcp::Error::NotLoopback(_))),
        "{refused:?}"
    );

    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve_http(
        "127.0.0.1:0".parse()?,
        move |addr| {
            let _ = bound_tx.send(addr);
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let addr = bound_rx.await?;
    // reqwest is built here without a default TLS provider (plain HTTP is
    // all this test speaks, but the client wants one installed).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport =
        rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = ().serve(transport).await?;
    let tools = client.list_tools(None).await?.tools;
    assert_eq!(tools.len(), 13);
    let result = client
        .call_tool(params("find_callers", json!({"name": "price_of"})))
        .await?;
    assert!(
        text_of(&result).contains("Basket.total"),
        "{}",
        text_of(&result)
    );
    client.cancel().await?;
    let _ = stop_tx.send(());
    tokio::time::timeout(std::time::Duration::from_secs(10), serving).await???;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_exec_code_runs_in_the_sandbox_and_cannot_write_the_repository() -> TestResult {
    let dir = tempfile::tempdir()?;
    fixture(dir.path())?;
    let config = McpConfig::builder()
        .repository(dir.path())
        .allow_exec(repo_mcp::ExecPolicy {
            isolation: sandbox::Isolation::Process,
            package_registry: false,
            ..repo_mcp::ExecPolicy::default()
        })
        .build()?;
    let server = McpServer::new(config).await?;
    let client = connect(server).await?;
    let names: Vec<String> = client
        .list_tools(None)
        .await?
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"run_python".to_owned()) && names.contains(&"run_shell".to_owned()));
    assert!(!names.contains(&"write_file".to_owned()));

    let repo = dir.path().display().to_string();
    let code = format!(
        "import sys\nsys.path.insert(0, {repo:?})\nfrom shop.basket import Basket\nb = Basket()\nb.add('tea', 3)\nb.add('jam', 4)\nprint('total', b.total())\n"
    );
    let ran = client
        .call_tool(params("run_python", json!({"code": code})))
        .await?;
    let text = text_of(&ran);
    assert!(text.contains("total 7"), "{text}");

    let basket = dir.path().join("shop/basket.py");
    let before = std::fs::read(&basket)?;
    let command = format!(
        "echo tampered > {}/shop/basket.py; echo done",
        dir.path().display()
    );
    let shell = client
        .call_tool(params("run_shell", json!({"command": command})))
        .await?;
    assert_eq!(std::fs::read(&basket)?, before, "{}", text_of(&shell));
    client.cancel().await?;
    Ok(())
}
