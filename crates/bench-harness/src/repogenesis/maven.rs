//! What a Java task's build needs from Maven, checked before Maven runs:
//! the parent POM, the dependencies and the plugins a `pom.xml` declares,
//! looked up in the local repository. Where Maven Central cannot be
//! reached, a task whose artifacts are missing is reported
//! `build_unavailable` with their names instead of failing obscurely.
//!
//! The POM is read with an XML parser (roxmltree; namespaces ignored,
//! element names compared by their local name): `<properties>`, `${...}`
//! references, `<parent>`, `<dependency>`, `<plugin>`. It is not Maven's
//! model (no profiles, no inheritance beyond the parent's coordinates): a
//! POM it cannot read declares nothing and Maven itself has the last word.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

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

/// A `${name}` reference.
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$\{([^}]+)\}").unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

/// The largest POM read (the benchmark's are a few kilobytes).
const POM_MAX_BYTES: usize = 4 << 20;

/// The most XML nodes a POM may make.
const POM_MAX_NODES: u32 = 1 << 18;

/// The most attributes one tag may have, and the most namespace
/// declarations a POM may make (see [`sandbox::xml_tags_within_limits`]).
const POM_MAX_ATTRIBUTES: usize = 64;
const POM_MAX_NAMESPACES: usize = 32;

/// The artifact of a Maven offline-mode or resolution failure.
static OFFLINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:the artifact|Could not find artifact|Could not resolve artifact|Plugin) ([A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-]+(?::[A-Za-z0-9_.\-]+){1,3})",
    )
    .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

/// Whether `node` is an element named `name` (any namespace).
fn named(node: &roxmltree::Node<'_, '_>, name: &str) -> bool {
    node.is_element() && node.tag_name().name() == name
}

/// The first child element of `node` named `name`.
fn child<'a, 'input>(
    node: roxmltree::Node<'a, 'input>,
    name: &str,
) -> Option<roxmltree::Node<'a, 'input>> {
    node.children().find(|c| named(c, name))
}

/// The text directly in `node` (comments and child elements left out),
/// trimmed; `None` when empty.
fn text(node: roxmltree::Node<'_, '_>) -> Option<String> {
    let text: String = node
        .children()
        .filter(roxmltree::Node::is_text)
        .filter_map(|c| c.text())
        .collect();
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The text of `node`'s first child element named `name`.
fn child_text(node: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
    child(node, name).and_then(text)
}

/// Resolves `${name}` references from `properties` (a few rounds, for
/// properties that refer to properties).
fn resolve(value: &str, properties: &HashMap<String, String>) -> String {
    let mut value = value.to_owned();
    for _ in 0..4 {
        if !value.contains("${") {
            break;
        }
        value = REFERENCE
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

/// The artifacts a POM's text declares, parent first, then every
/// `<dependency>` (managed ones too) and every `<plugin>` in document
/// order; nothing when the text is not a well-formed `<project>` (or is
/// larger than 4 MiB, has a DTD or an absurd tag).
///
/// ```
/// use bench_harness::repogenesis::pom_artifacts;
///
/// let pom = "<project><properties><j.version>6.1.3</j.version></properties><dependencies><dependency><groupId>io.javalin</groupId><artifactId>javalin</artifactId><version>${j.version}</version></dependency></dependencies></project>";
/// assert_eq!(pom_artifacts(pom)[0].coordinates(), "io.javalin:javalin:6.1.3");
/// ```
pub fn pom_artifacts(pom: &str) -> Vec<Artifact> {
    if pom.len() > POM_MAX_BYTES
        || !sandbox::xml_tags_within_limits(pom, POM_MAX_ATTRIBUTES, POM_MAX_NAMESPACES)
    {
        return Vec::new();
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: POM_MAX_NODES,
        ..roxmltree::ParsingOptions::default()
    };
    let Ok(document) = roxmltree::Document::parse_with_options(pom, options) else {
        return Vec::new();
    };
    let project = document.root_element();
    if !named(&project, "project") {
        return Vec::new();
    }
    let mut properties: HashMap<String, String> = HashMap::new();
    if let Some(props) = child(project, "properties") {
        // Only text-valued properties (`<a>1.2</a>`); empty ones are empty.
        for property in props
            .children()
            .filter(|p| p.is_element() && !p.children().any(|c| c.is_element()))
        {
            properties.insert(
                property.tag_name().name().to_owned(),
                text(property).unwrap_or_default(),
            );
        }
    }
    let parent_node = child(project, "parent");
    let parent =
        parent_node.and_then(|p| read_artifact(p, ArtifactRole::Parent, None, &properties));
    if let Some(v) = parent.as_ref().and_then(|p| p.version.clone()) {
        properties
            .entry("project.parent.version".into())
            .or_insert(v);
    }
    // The project's own coordinates, for `${project.version}`: its own
    // `<version>` and `<groupId>`, else the parent's (Maven inherits them).
    let own = |name: &str| {
        child_text(project, name).or_else(|| parent_node.and_then(|p| child_text(p, name)))
    };
    if let Some(v) = own("version") {
        properties.entry("project.version".into()).or_insert(v);
    }
    if let Some(g) = own("groupId") {
        properties.entry("project.groupId".into()).or_insert(g);
    }
    let mut artifacts = Vec::new();
    artifacts.extend(parent);
    for dependency in document.descendants().filter(|n| named(n, "dependency")) {
        artifacts.extend(read_artifact(
            dependency,
            ArtifactRole::Dependency,
            None,
            &properties,
        ));
    }
    for plugin in document.descendants().filter(|n| named(n, "plugin")) {
        artifacts.extend(read_artifact(
            plugin,
            ArtifactRole::Plugin,
            Some("org.apache.maven.plugins"),
            &properties,
        ));
    }
    artifacts
}

/// The coordinates of `node`'s own `groupId`, `artifactId` and `version`
/// children, resolved; `None` without an artifact (or a group and no
/// default).
fn read_artifact(
    node: roxmltree::Node<'_, '_>,
    role: ArtifactRole,
    default_group: Option<&str>,
    properties: &HashMap<String, String>,
) -> Option<Artifact> {
    let group = child_text(node, "groupId")
        .map(|g| resolve(&g, properties))
        .or_else(|| default_group.map(str::to_owned))?;
    let artifact = resolve(&child_text(node, "artifactId")?, properties);
    let version = child_text(node, "version").map(|v| resolve(&v, properties));
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
    OFFLINE
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

    fn coordinates(pom: &str) -> Vec<String> {
        pom_artifacts(pom)
            .iter()
            .map(Artifact::coordinates)
            .collect()
    }

    #[test]
    fn namespaced_poms_are_read() {
        let pom =
            include_str!("../../../../testdata/repogenesis-mini/repo/javalin-task-manager/pom.xml");
        let found = coordinates(pom);
        assert_eq!(found.len(), 6);
        assert_eq!(found[0], "io.javalin:javalin:6.1.3");
        let prefixed = r#"<m:project xmlns:m="http://maven.apache.org/POM/4.0.0"><m:version>2</m:version><m:dependencies><m:dependency><m:groupId>g</m:groupId><m:artifactId>a</m:artifactId><m:version>${project.version}</m:version></m:dependency></m:dependencies></m:project>"#;
        assert_eq!(coordinates(prefixed), ["g:a:2"]);
    }

    #[test]
    fn comments_inside_elements_are_not_text() {
        let pom = r#"<project>
  <properties><v><!-- pinned -->1.2<!-- for now --></v><!-- <w>9</w> --></properties>
  <dependencies>
    <!-- <dependency><groupId>x</groupId><artifactId>gone</artifactId></dependency> -->
    <dependency>
      <groupId>g<!-- the group --></groupId>
      <artifactId><![CDATA[a]]></artifactId>
      <version>${v}</version>
      <!-- <version>0</version> -->
    </dependency>
    <dependency><groupId>g</groupId><artifactId>b</artifactId><version>${w}</version></dependency>
  </dependencies>
</project>"#;
        assert_eq!(coordinates(pom), ["g:a:1.2", "g:b:${w}"]);
    }

    #[test]
    fn properties_reach_the_parent_and_the_parent_the_project() {
        let pom = r#"<project>
  <parent>
    <groupId>org.springframework.boot</groupId>
    <artifactId>spring-boot-starter-parent</artifactId>
    <version>${boot.version}</version>
  </parent>
  <artifactId>demo</artifactId>
  <properties><boot.version>3.2.0</boot.version></properties>
  <dependencyManagement><dependencies>
    <dependency><groupId>${project.groupId}</groupId><artifactId>bom</artifactId><version>${project.version}</version><type>pom</type></dependency>
  </dependencies></dependencyManagement>
  <build><plugins>
    <plugin>
      <artifactId>maven-surefire-plugin</artifactId>
      <dependencies><dependency><groupId>org.junit</groupId><artifactId>engine</artifactId><version>${project.parent.version}</version></dependency></dependencies>
    </plugin>
  </plugins></build>
</project>"#;
        assert_eq!(
            coordinates(pom),
            [
                "org.springframework.boot:spring-boot-starter-parent:3.2.0",
                "org.springframework.boot:bom:3.2.0",
                "org.junit:engine:3.2.0",
                // The plugin's group is the default, not its dependency's
                // (the string search took the first `<groupId>` inside).
                "org.apache.maven.plugins:maven-surefire-plugin",
            ]
        );
        assert_eq!(pom_artifacts(pom)[0].role, ArtifactRole::Parent);
    }

    #[test]
    fn what_is_not_a_pom_declares_nothing() {
        let dependency = "<dependency><groupId>g</groupId><artifactId>a</artifactId><version>1</version></dependency>";
        for text in [
            String::new(),
            "not xml at all".to_owned(),
            // Cut short: the string search still found the dependency.
            format!("<project><dependencies>{dependency}"),
            format!("<project><dependencies>{dependency}</project>"),
            // Not a POM.
            format!("<settings><dependencies>{dependency}</dependencies></settings>"),
            dependency.to_owned(),
            // A DTD, an unknown entity.
            format!(
                "<!DOCTYPE project [<!ENTITY v \"1\">]><project><dependencies>{dependency}</dependencies></project>"
            ),
            format!(
                "<project><dependencies>{}</dependencies></project>",
                dependency.replace(">1<", ">&v;<")
            ),
        ] {
            assert_eq!(coordinates(&text), Vec::<String>::new(), "{text}");
        }
        let many: String = (0..=POM_MAX_ATTRIBUTES)
            .map(|i| format!(" a{i}=''"))
            .collect();
        assert!(
            pom_artifacts(&format!(
                "<project{many}><dependencies>{dependency}</dependencies></project>"
            ))
            .is_empty()
        );
        let few: String = (0..8).map(|i| format!(" a{i}=''")).collect();
        assert_eq!(
            pom_artifacts(&format!(
                "<project{few}><dependencies>{dependency}</dependencies></project>"
            ))
            .len(),
            1
        );
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
