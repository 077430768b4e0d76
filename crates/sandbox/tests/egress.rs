//! pip in a container reaches the package registry and nothing else: a
//! `setup.py` run by `pip install` once reached a service on the host's
//! loopback (issue 26). The package here probes the network from its
//! `setup.py` while pip builds it (fetching setuptools through the relay on
//! the way) and writes what it found next to itself.
//!
//! Needs the package registry (PyPI), as the project's other pip tests do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{builder, workdir};
use sandbox::{Isolation, Sandbox};

const SETUP_PY: &str = r#"import os, socket
here = os.path.dirname(os.path.abspath(__file__))
seen = []
port = int(open(os.path.join(here, "port")).read())
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    seen.append("host-loopback reached")
except OSError as e:
    seen.append("host-loopback refused")
try:
    socket.create_connection(("pypi.org", 443), timeout=3).close()
    seen.append("direct reached")
except OSError as e:
    seen.append("direct refused")
proxy = os.environ.get("HTTPS_PROXY", "")
seen.append("proxy " + ("set" if proxy else "unset"))
def through_proxy(host):
    hostport = proxy.rsplit("/", 1)[-1].split("//")[-1]
    h, p = hostport.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=10)
    s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host, host)).encode())
    line = s.recv(200).split(b"\r\n")[0].decode(errors="replace")
    s.close()
    return line
if proxy:
    for host in ("pypi.org", "example.com", "localhost"):
        try:
            seen.append("via-proxy %s: %s" % (host, through_proxy(host)))
        except OSError as e:
            seen.append("via-proxy %s: error %s" % (host, e))
with open(os.path.join(here, "seen.txt"), "w") as f:
    f.write("\n".join(seen) + "\n")
from setuptools import setup
setup(name="egressprobe", version="0.1", py_modules=[])
"#;

#[tokio::test]
async fn pip_in_a_container_reaches_the_registry_and_nothing_else() {
    if sandbox::namespaces_available().await.is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the namespace egress test"
        );
        eprintln!("namespaces unavailable: this test needs them");
        return;
    }
    let dir = workdir();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("setup.py"), SETUP_PY).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(pkg.join("port"), port.to_string()).unwrap();

    let config = builder(dir.path(), Isolation::Namespaces)
        .package_registry(true)
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let env = sandbox.create_venv(".venv").await.unwrap();
    let installed = sandbox.pip_install(&env, &["./pkg"]).await;
    drop(listener);
    let installed = installed.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        installed
            .stdout
            .contains("Successfully installed egressprobe"),
        "{installed:?}"
    );
    let seen = std::fs::read_to_string(pkg.join("seen.txt")).unwrap();
    assert!(seen.contains("host-loopback refused"), "{seen}");
    assert!(seen.contains("direct refused"), "{seen}");
    assert!(seen.contains("proxy set"), "{seen}");
    assert!(seen.contains("via-proxy pypi.org: HTTP/1.1 200"), "{seen}");
    assert!(
        seen.contains("via-proxy example.com: HTTP/1.1 403"),
        "{seen}"
    );
    assert!(seen.contains("via-proxy localhost: HTTP/1.1 403"), "{seen}");
}
