//! What a Java task's build needs from Maven, checked before Maven runs:
//! the parent POM, the dependencies and the plugins a `pom.xml` declares,
//! looked up in the local repository. Where Maven Central cannot be
//! reached, a task whose artifacts are missing is reported
//! `build_unavailable` with their names instead of failing obscurely.
//!
//! The reader handles what POMs of this benchmark contain (comments,
//! `<properties>`, `${...}` references, `<parent>`, `<dependency>`,
//! `<plugin>`), not XML in general; a POM it cannot read declares nothing
//! and Maven itself has the last word.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// What an artifact is to the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactRole {
    /// `<parent>`.
    Parent,
    /// A `<dependency>` (also a BOM import).
    Dependency,
    /// A `<plugin>`.
    Plugin,
}

/// A `groupId:artifactId:version` a POM declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// The group.
    pub group: String,
    /// The artifact.
    pub artifact: String,
    /// The version, `None` when the parent or a BOM manages it.
    pub version: Option<String>,
    /// Its role.
    pub role: ArtifactRole,
}

impl Artifact {
    /// `group:artifact:version` (or `group:artifact` when managed).
    pub fn coordinates(&self) -> String {
        match &self.version {
            Some(v) => format!("{}:{}:{v}", self.group, self.artifact),
            None => format!("{}:{}", self.group, self.artifact),
        }
    }

    /// Where the artifact's POM sits in a local repository.
    pub fn pom_in(&self, repository: &Path) -> Option<PathBuf> {
        let version = self.version.as_deref()?;
        let mut path = repository.to_path_buf();
        path.extend(self.group.split('.'));
        path.push(&self.artifact);
        path.push(version);
        path.push(format!("{}-{version}.pom", self.artifact));
        Some(path)
    }
}

fn compiled(cell: &'static OnceLock<Regex>, pattern: &'static str) -> &'static Regex {
    cell.get_or_init(|| {
        Regex::new(pattern).unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    })
}

/// The text of the first `<name>` element directly in `xml` (no nesting check).
fn element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&close)? + start;
    Some(xml[start..end].trim())
}

/// Every `<name>...</name>` block in `xml`.
fn blocks<'a>(xml: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find(&open) {
        let body = &rest[at + open.len()..];
        let Some(end) = body.find(&close) else { break };
        out.push(&body[..end]);
        rest = &body[end + close.len()..];
    }
    out
}

/// Resolves `${name}` references from `properties` (a few rounds, for
/// properties that refer to properties).
fn resolve(value: &str, properties: &HashMap<String, String>) -> String {
    static REFERENCE: OnceLock<Regex> = OnceLock::new();
    let reference = compiled(&REFERENCE, r"\$\{([^}]+)\}");
    let mut value = value.to_owned();
    for _ in 0..4 {
        if !value.contains("${") {
            break;
        }
        value = reference
            .replace_all(&value, |c: &regex::Captures<'_>| {
                let name = c.get(1).map_or("", |m| m.as_str());
                properties
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| format!("${{{name}}}"))
            })
            .into_owned();
    }
    value
}

/// The artifacts a POM's text declares, parent first, then dependencies
/// and plugins in document order.
///
/// ```
/// use bench_harness::repogenesis::pom_artifacts;
///
/// let pom = "<project><properties><j.version>6.1.3</j.version></properties><dependencies><dependency><groupId>io.javalin</groupId><artifactId>javalin</artifactId><version>${j.version}</version></dependency></dependencies></project>";
/// assert_eq!(pom_artifacts(pom)[0].coordinates(), "io.javalin:javalin:6.1.3");
/// ```
pub fn pom_artifacts(pom: &str) -> Vec<Artifact> {
    static COMMENT: OnceLock<Regex> = OnceLock::new();
    static PROPERTY: OnceLock<Regex> = OnceLock::new();
    let text = compiled(&COMMENT, r"(?s)<!--.*?-->").replace_all(pom, "");
    let mut properties: HashMap<String, String> = HashMap::new();
    if let Some(props) = element(&text, "properties") {
        for m in compiled(
            &PROPERTY,
            r"<([A-Za-z0-9_.\-]+)>([^<]*)</([A-Za-z0-9_.\-]+)>",
        )
        .captures_iter(props)
        {
            if let (Some(open), Some(value), Some(close)) = (m.get(1), m.get(2), m.get(3))
                && open.as_str() == close.as_str()
            {
                properties.insert(open.as_str().to_owned(), value.as_str().trim().to_owned());
            }
        }
    }
    let mut artifacts = Vec::new();
    let parent = blocks(&text, "parent")
        .first()
        .and_then(|b| read_artifact(b, ArtifactRole::Parent, None, &properties));
    if let Some(v) = parent.as_ref().and_then(|p| p.version.clone()) {
        properties
            .entry("project.parent.version".into())
            .or_insert(v);
    }
    // The project's own coordinates, for `${project.version}`: the first
    // ones outside `<parent>` and before the dependencies.
    let own = blocks(&text, "parent")
        .first()
        .map_or(text.to_string(), |p| text.replacen(p, "", 1));
    let own_head: &str = own.split("<dependencies>").next().unwrap_or("");
    if let Some(v) = element(own_head, "version") {
        properties
            .entry("project.version".into())
            .or_insert_with(|| v.to_owned());
    }
    if let Some(g) = element(own_head, "groupId") {
        properties
            .entry("project.groupId".into())
            .or_insert_with(|| g.to_owned());
    }
    artifacts.extend(parent);
    for body in blocks(&text, "dependency") {
        artifacts.extend(read_artifact(
            body,
            ArtifactRole::Dependency,
            None,
            &properties,
        ));
    }
    for body in blocks(&text, "plugin") {
        artifacts.extend(read_artifact(
            body,
            ArtifactRole::Plugin,
            Some("org.apache.maven.plugins"),
            &properties,
        ));
    }
    artifacts
}

fn read_artifact(
    body: &str,
    role: ArtifactRole,
    default_group: Option<&str>,
    properties: &HashMap<String, String>,
) -> Option<Artifact> {
    let group = element(body, "groupId")
        .map(|g| resolve(g, properties))
        .or_else(|| default_group.map(str::to_owned))?;
    let artifact = resolve(element(body, "artifactId")?, properties);
    let version = element(body, "version").map(|v| resolve(v, properties));
    Some(Artifact {
        group,
        artifact,
        version,
        role,
    })
}

/// The declared artifacts (with a version) whose POM is not in `repository`.
pub fn missing_artifacts(pom: &str, repository: &Path) -> Vec<Artifact> {
    pom_artifacts(pom)
        .into_iter()
        .filter(|a| a.pom_in(repository).is_some_and(|path| !path.is_file()))
        .collect()
}

/// The artifact named in Maven's offline-mode failure, if the log has one
/// (`... offline mode and the artifact G:A:TYPE:V has not been downloaded`,
/// `Could not find artifact G:A:TYPE:V`).
pub fn missing_from_log(log: &str) -> Option<String> {
    static OFFLINE: OnceLock<Regex> = OnceLock::new();
    let pattern = compiled(
        &OFFLINE,
        r"(?:the artifact|Could not find artifact|Could not resolve artifact|Plugin) ([A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-]+(?::[A-Za-z0-9_.\-]+){1,3})",
    );
    pattern
        .captures(log)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_owned())
}

/// The Dockerfile's fix of Java 11 to 17 in a POM (`Dockerfile.java`).
pub fn java17(pom: &str) -> String {
    pom.replace(
        "<maven.compiler.source>11</maven.compiler.source>",
        "<maven.compiler.source>17</maven.compiler.source>",
    )
    .replace(
        "<maven.compiler.target>11</maven.compiler.target>",
        "<maven.compiler.target>17</maven.compiler.target>",
    )
    .replace("<source>11</source>", "<source>17</source>")
    .replace("<target>11</target>", "<target>17</target>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_properties_plugins_and_comments() {
        let pom = r#"<project>
  <!-- <dependency><groupId>x</groupId><artifactId>commented</artifactId><version>1</version></dependency> -->
  <parent><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter-parent</artifactId><version>3.2.0</version></parent>
  <groupId>com.example</groupId><artifactId>demo</artifactId><version>0.1</version>
  <properties><a>1.${b}</a><b>2</b></properties>
  <dependencies>
    <dependency><groupId>g</groupId><artifactId>managed</artifactId></dependency>
    <dependency><groupId>g</groupId><artifactId>x</artifactId><version>${a}</version></dependency>
    <dependency><groupId>com.example</groupId><artifactId>self</artifactId><version>${project.version}</version></dependency>
  </dependencies>
  <build><plugins><plugin><artifactId>maven-compiler-plugin</artifactId><version>3.11.0</version></plugin></plugins></build>
</project>"#;
        let found: Vec<String> = pom_artifacts(pom)
            .iter()
            .map(Artifact::coordinates)
            .collect();
        assert_eq!(
            found,
            [
                "org.springframework.boot:spring-boot-starter-parent:3.2.0",
                "g:managed",
                "g:x:1.2",
                "com.example:self:0.1",
                "org.apache.maven.plugins:maven-compiler-plugin:3.11.0",
            ]
        );
        let empty = tempfile::tempdir()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default();
        assert_eq!(missing_artifacts(pom, &empty).len(), 4);
    }

    #[test]
    fn maven_names_what_it_could_not_get() {
        let log = "[ERROR] Failed to execute goal on project x: Cannot access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact io.javalin:javalin:jar:6.1.3 has not been downloaded from it before. -> [Help 1]";
        assert_eq!(
            missing_from_log(log).as_deref(),
            Some("io.javalin:javalin:jar:6.1.3")
        );
        assert_eq!(missing_from_log("BUILD SUCCESS"), None);
    }
}
