//! `migrate [--dry-run]`: a config written for the reference system (0.3.2 – 0.3.14, or
//! older) turned into one this build loads, comments and layout kept (the file is edited
//! as TOML, not regenerated). What can be rewritten safely is; what needs the operator's
//! judgement is named with what to do (docs/operations.md, "migrate"). Exit 0: nothing to
//! do, or every change made; 1: a change by hand remains; 2: the file cannot be read or is
//! not TOML. The file is replaced whole (written beside it, renamed over it), the old one
//! kept as `<file>.bak`; `--dry-run` writes nothing.

use std::path::Path;
use toml_edit::{Array, DocumentMut, Item, TableLike};

use crate::exit;

/// What `migrate` found.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct Migration {
    /// The config file.
    pub config: std::path::PathBuf,
    /// Each change made (or, with `--dry-run`, to be made), in words.
    pub changed: Vec<String>,
    /// Each change the operator must make, with what to do.
    pub manual: Vec<String>,
    /// Whether the file was rewritten.
    pub written: bool,
}

/// Keys the reference system renamed: `(table, old, new)`.
const RENAMED: &[(&str, &str, &str)] = &[
    ("runtime", "rate_limit_action", "transient_error_action"),
    ("runtime", "round_timeout_s", "round_budget_s"),
    ("vcs", "orphan_action", "dirty_action"),
];

/// Keys that hold a list, where older files wrote a bare string: `(table, key)`.
const LISTS: &[(&str, &str)] = &[
    ("agent", "command"),
    ("agent", "prompt_arg_template"),
    ("phases", "list"),
    ("prompt", "files"),
    ("monitor", "auto_stop_on"),
    ("plugins", "disable"),
    ("plugins", "spawn_override_allow"),
];

/// Runs `migrate` on `config_path`; returns the exit code and what was found.
pub(crate) fn run(config_path: &Path, dry_run: bool) -> (u8, Migration) {
    let mut report = Migration {
        config: config_path.to_owned(),
        ..Migration::default()
    };
    let text = match crate::tree_file::read_regular_to_string(config_path) {
        Ok(text) => text,
        Err(e) => {
            report
                .manual
                .push(format!("cannot read {}: {e}", config_path.display()));
            return (exit::USAGE, report);
        }
    };
    let mut doc: DocumentMut = match text.parse() {
        Ok(doc) => doc,
        Err(e) => {
            report.manual.push(format!(
                "{} is not valid TOML: {}",
                config_path.display(),
                e.to_string().replace('\n', " ")
            ));
            return (exit::USAGE, report);
        }
    };
    rewrite(&mut doc, &mut report);
    let new_text = doc.to_string();
    // What the loader still refuses after the rewrites needs a hand.
    if let Err(e) = crate::config::parse_str(config_path, &new_text) {
        report.manual.push(e.to_string());
    }
    if !report.changed.is_empty() && !dry_run {
        match write_keeping_backup(config_path, &text, &new_text) {
            Ok(()) => report.written = true,
            Err(e) => {
                report
                    .manual
                    .push(format!("cannot write {}: {e}", config_path.display()));
                return (exit::FAILURE, report);
            }
        }
    }
    let code = if report.manual.is_empty() {
        exit::OK
    } else {
        exit::FAILURE
    };
    (code, report)
}

/// The rewrites, each recorded in `report` (manual ones as instructions).
fn rewrite(doc: &mut DocumentMut, report: &mut Migration) {
    if !doc.contains_key("schema_version") {
        doc.insert("schema_version", toml_edit::value(1));
        doc.sort_values_by(|a, _, b, _| {
            (a.get() != "schema_version").cmp(&(b.get() != "schema_version"))
        });
        report.changed.push("schema_version = 1 added".into());
    }
    for (table, old, new) in RENAMED {
        if let Some(t) = table_mut(doc, table) {
            rename(t, old, new, table, report);
        }
    }
    let phase_names: Vec<String> = doc
        .get("phases")
        .and_then(Item::as_table_like)
        .map(|t| {
            t.iter()
                .filter(|(_, v)| v.is_table_like())
                .map(|(k, _)| k.to_owned())
                .collect()
        })
        .unwrap_or_default();
    for name in &phase_names {
        let Some(phase) = doc
            .get_mut("phases")
            .and_then(|p| p.get_mut(name.as_str()))
            .and_then(Item::as_table_like_mut)
        else {
            continue;
        };
        let at = format!("phases.{name}");
        rename(phase, "round_timeout_s", "round_budget_s", &at, report);
        if let Some(runtime) = phase.get_mut("runtime").and_then(Item::as_table_like_mut) {
            rename(
                runtime,
                "round_timeout_s",
                "round_budget_s",
                &format!("{at}.runtime"),
                report,
            );
        }
        if let Some(agent) = phase.get_mut("agent").and_then(Item::as_table_like_mut) {
            for key in ["command", "prompt_arg_template"] {
                wrap(agent, key, &format!("{at}.agent"), report);
            }
        }
    }
    for (table, key) in LISTS {
        if let Some(t) = table_mut(doc, table) {
            wrap(t, key, table, report);
        }
    }
    if doc
        .get("runtime")
        .and_then(|r| r.get("round_timeout_per_phase"))
        .is_some()
    {
        report.manual.push("runtime.round_timeout_per_phase: removed by the reference system; give each phase its budget as [phases.<name>] round_budget_s, then delete the key".into());
    }
    pins_without_hosts(doc, report);
}

/// `[plugins.pin]` entries that name no `[plugins.hosts.<name>]`: in the reference system
/// they pinned Python plugin modules, whose code does not run here.
fn pins_without_hosts(doc: &DocumentMut, report: &mut Migration) {
    let plugins = doc.get("plugins");
    let hosts: Vec<&str> = plugins
        .and_then(|p| p.get("hosts"))
        .and_then(Item::as_table_like)
        .map(|t| t.iter().map(|(k, _)| k).collect())
        .unwrap_or_default();
    let Some(pins) = plugins
        .and_then(|p| p.get("pin"))
        .and_then(Item::as_table_like)
    else {
        return;
    };
    for (name, _) in pins.iter() {
        if !hosts.contains(&name) {
            report.manual.push(format!(
                "plugins.pin.{name}: pins a plugin of the reference system, whose Python code does not run here; run it as a host ([plugins.hosts.{name}], docs/protocol.md; `agent-runner plugin new` scaffolds one) and pin that, or delete the pin"
            ));
        }
    }
}

fn table_mut<'a>(doc: &'a mut DocumentMut, name: &str) -> Option<&'a mut dyn TableLike> {
    doc.get_mut(name).and_then(Item::as_table_like_mut)
}

/// Renames `old` to `new` in `table` (at `at`); both present is a manual change.
fn rename(table: &mut dyn TableLike, old: &str, new: &str, at: &str, report: &mut Migration) {
    if !table.contains_key(old) {
        return;
    }
    if table.contains_key(new) {
        report.manual.push(format!(
            "{at}.{old}: renamed {new} by the reference system, and {at}.{new} is set too; keep one"
        ));
        return;
    }
    let item = table.remove(old).expect("present");
    table.insert(new, item);
    report.changed.push(format!("{at}.{old} → {at}.{new}"));
}

/// A bare string where a list belongs becomes a one-element list; one with spaces in an
/// argv key is left for the operator (where the words split is theirs to say).
fn wrap(table: &mut dyn TableLike, key: &str, at: &str, report: &mut Migration) {
    let Some(text) = table.get(key).and_then(Item::as_str).map(str::to_owned) else {
        return;
    };
    if matches!(key, "command" | "prompt_arg_template") && text.contains(' ') {
        report.manual.push(format!(
            "{at}.{key} = {text:?}: a string with spaces where an argv list belongs; write it as a list of words, e.g. [\"{}\", …]",
            text.split(' ').next().unwrap_or("")
        ));
        return;
    }
    table.insert(key, toml_edit::value(Array::from_iter([text.as_str()])));
    report
        .changed
        .push(format!("{at}.{key} = {text:?} → [{text:?}]"));
}

/// Keeps `old` as `<path>.bak`, then writes `new` beside `path` and renames it over.
fn write_keeping_backup(path: &Path, old: &str, new: &str) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    std::fs::write(path.with_file_name(format!("{name}.bak")), old)?;
    let tmp = path.with_file_name(format!(".{name}.migrate.tmp"));
    std::fs::write(&tmp, new)?;
    std::fs::rename(&tmp, path)
}

/// The human report.
pub(crate) fn render(m: &Migration, dry_run: bool) -> String {
    let mut out = String::new();
    let verb = if dry_run { "would change" } else { "changed" };
    for line in &m.changed {
        out.push_str(&format!("{verb}: {line}\n"));
    }
    for line in &m.manual {
        out.push_str(&format!("by hand: {line}\n"));
    }
    if m.changed.is_empty() && m.manual.is_empty() {
        out.push_str(&format!("{}: nothing to migrate\n", m.config.display()));
    } else if m.written {
        out.push_str(&format!(
            "{} rewritten; the old file is kept as {}.bak\n",
            m.config.display(),
            m.config.file_name().unwrap_or_default().to_string_lossy()
        ));
    }
    out
}
