//! The files of `supervisor/src` import each other without a cycle (ARCHITECTURE.md: the
//! folders are layers). A file's imports are the `crate::…` and `super::…` paths in its
//! code (comments and `#[cfg(test)]` modules aside), each resolved to the longest module
//! path that is a file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Module path (`runtime::events`) → file, for every `.rs` file but `lib.rs` and `main.rs`.
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut inner = prefix.to_vec();
            inner.push(name);
            modules(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut parts = prefix.to_vec();
            if name != "mod" {
                parts.push(name);
            }
            if !parts.is_empty()
                && !(prefix.is_empty() && (parts[0] == "lib" || parts[0] == "main"))
            {
                out.insert(parts.join("::"), path);
            }
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)]` tail.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a file names after `marker` (`crate::`), with `a::{b, c::d}` groups expanded
/// one level.
fn paths_after(code: &str, marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices(marker) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + marker.len()..];
        let base: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == ':')
            .collect();
        let after = &rest[base.len()..];
        let base = base.trim_end_matches(':').to_owned();
        if let Some(group) = after.strip_prefix('{') {
            let group: String = group.chars().take_while(|c| *c != '}').collect();
            for item in group.split(',') {
                let item: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                if !item.is_empty() && item != "self" {
                    found.push(format!("{base}::{}", item.trim_end_matches(':')));
                }
            }
        }
        found.push(base);
    }
    found
}

fn resolve(path: &str, modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let segs: Vec<&str> = path.split("::").collect();
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|m| modules.contains_key(m))
}

fn edges(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (module, file) in modules {
        let code = code(&std::fs::read_to_string(file).unwrap());
        // `super::` in `a/b.rs` and in `a/b/mod.rs` (both module `a::b`) is `a`.
        let segs: Vec<&str> = module.split("::").collect();
        let parent = segs[..segs.len() - 1].to_vec();
        let mut targets: Vec<String> = paths_after(&code, "crate::");
        for p in paths_after(&code, "super::") {
            let mut full = parent.clone();
            full.push(&p);
            targets.push(full.join("::"));
        }
        let deps: BTreeSet<String> = targets
            .iter()
            .filter_map(|t| resolve(t, modules))
            .filter(|t| t != module && !module.starts_with(&format!("{t}::")))
            .collect();
        graph.insert(module.clone(), deps);
    }
    graph
}

/// A cycle through `graph`, if there is one, as the modules along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_owned());
        for next in &graph[node] {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

#[test]
fn supervisor_files_import_each_other_without_a_cycle() {
    let mut found = BTreeMap::new();
    modules(&src_dir(), &[], &mut found);
    assert!(found.contains_key("runtime::events") && found.contains_key("hosts"));
    let graph = edges(&found);
    // The reader sees real imports: the round uses the hosts, the hosts do not use the round.
    assert!(
        graph["runtime::dirty"].contains("hosts"),
        "{:?}",
        graph["runtime::dirty"]
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    assert_eq!(
        paths_after(
            "use crate::hosts::{pins::check_pin, HostManager};",
            "crate::"
        ),
        ["hosts::pins::check_pin", "hosts::HostManager", "hosts"]
    );
}
