//! docs/configuration.md's key tables, made from the definitions ([`super::keys`]): each
//! table sits between `<!-- config-keys: NAME -->` and `<!-- /config-keys -->`, NAME being
//! a table (`runtime`), the prefix of several (`monitor.host_health`), or `(top level)`. A test fails when
//! the file drifts from the definitions; refresh it with
//! `AR_UPDATE_CONFIG_DOCS=1 cargo test -p agent-runner --lib config_docs`.

use super::keys::{doc_table, Table};
use super::raw::TABLES;

/// The opening marker of a generated table.
const OPEN: &str = "<!-- config-keys: ";
/// The closing marker.
const CLOSE: &str = "<!-- /config-keys -->";

/// The section NAME of the file's top-level keys (table `""`).
const TOP_LEVEL: &str = "(top level)";

/// The tables a section NAME shows: the table of that name, or else every table under it.
fn section(name: &str) -> Vec<&'static Table> {
    let name = if name == TOP_LEVEL { "" } else { name };
    let exact: Vec<&Table> = TABLES.iter().filter(|t| t.name == name).collect();
    if !exact.is_empty() {
        return exact;
    }
    let prefix = format!("{name}.");
    TABLES
        .iter()
        .filter(|t| t.name.starts_with(&prefix))
        .collect()
}

/// A marker of docs/configuration.md that [`render`] cannot fill.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadMarker {
    /// `<!-- config-keys: ` without its ` -->`.
    #[error("a config-keys marker is not closed with -->")]
    Unclosed,
    /// A section (its name) with no `<!-- /config-keys -->` after it.
    #[error("config-keys: {0} has no {CLOSE}")]
    NoEnd(String),
    /// A section (its name) naming no table of keys.
    #[error("config-keys: {0} names no table of keys")]
    NoTable(String),
}

/// `text` with every generated table made anew from the definitions.
///
/// Errors: [`BadMarker`].
pub(crate) fn render(text: &str) -> Result<String, BadMarker> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some((name, _)) = after.split_once(" -->") else {
            return Err(BadMarker::Unclosed);
        };
        let body_start = start + OPEN.len() + name.len() + " -->\n".len();
        let Some(end) = rest[body_start..].find(CLOSE) else {
            return Err(BadMarker::NoEnd(name.to_owned()));
        };
        let tables = section(name);
        if tables.is_empty() {
            return Err(BadMarker::NoTable(name.to_owned()));
        }
        out.push_str(&rest[..body_start]);
        out.push_str(&doc_table(&tables, name));
        out.push_str(CLOSE);
        rest = &rest[body_start + end + CLOSE.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn docs_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md")
    }

    /// Every defined table is shown, and the shown tables are what the definitions make.
    #[test]
    fn config_docs_tables_match_the_definitions() {
        let path = docs_path();
        let have = std::fs::read_to_string(&path).unwrap();
        let want = render(&have).unwrap();
        if std::env::var_os("AR_UPDATE_CONFIG_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        } else {
            assert!(
                have == want,
                "docs/configuration.md's key tables drifted from the definitions in \
                 supervisor/src/config; refresh with: \
                 AR_UPDATE_CONFIG_DOCS=1 cargo test -p agent-runner --lib config_docs"
            );
        }
        for table in TABLES {
            let shown = want
                .match_indices(OPEN)
                .map(|(i, _)| want[i + OPEN.len()..].split(" -->").next().unwrap())
                .any(|name| section(name).iter().any(|t| t.name == table.name));
            assert!(shown, "table {} has no config-keys section", table.name);
        }
    }

    #[test]
    fn a_marker_naming_no_table_is_refused() {
        let text = "<!-- config-keys: nowhere -->\n<!-- /config-keys -->\n";
        assert_eq!(render(text), Err(BadMarker::NoTable("nowhere".into())));
        assert!(render(text).unwrap_err().to_string().contains("nowhere"));
        let open = "<!-- config-keys: runtime -->\n";
        assert_eq!(render(open), Err(BadMarker::NoEnd("runtime".into())));
        assert_eq!(
            render("<!-- config-keys: runtime"),
            Err(BadMarker::Unclosed)
        );
    }
}
