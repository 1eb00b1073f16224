//! The files of `supervisor/src` import each other without a cycle, and the folders keep the
//! order of ARCHITECTURE.md, "Layers": a file imports only from its own folder or from a
//! folder on a lower row. A folder with a block of its own in that section (```` ```text
//! runtime/ ````) keeps its folders in layers the same way.
//!
//! A file's imports are every path in its code (comments, string literals and
//! `#[cfg(test)]` modules aside) that starts with `crate::`, `super::`, `self::` or the
//! name of a child module the file declares (`use child::X`, `child::f()`), `pub use`
//! re-exports included. A path is resolved to the file that defines its item: to the
//! longest module path that is a file, and through that file's re-exports (`pub use
//! stats::CallHistogram` in `hosts/mod.rs` makes `crate::hosts::CallHistogram` an import
//! of `hosts/stats.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Module path (`record::events`) → file, for every `.rs` file but the crate roots:
/// `lib.rs`, `main.rs` and the other binaries' `bin/*.rs` (the `plugin-host` launcher, whose
/// code is another crate's).
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && prefix.is_empty() && name == "bin" {
            continue;
        }
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

/// The code of a file: comments (line, doc and nested block comments) and the contents of
/// string and character literals blanked, the `#[cfg(test)]` tail cut off.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && matches!(next, Some('#') | Some('"'))
            && !out.ends_with(|p: char| p.is_alphanumeric() || p == '_')
        {
            // A raw string: r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < chars.len() {
                if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A character literal ('x', '\n', '\''); a lifetime ('a) is code.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The child modules a file declares (`mod name;`, any visibility).
fn declared_children(code: &str) -> BTreeSet<String> {
    let mut children = BTreeSet::new();
    for (at, _) in code.match_indices("mod ") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let name: String = code[at + 4..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && code[at + 4 + name.len()..].trim_start().starts_with(';') {
            children.insert(name);
        }
    }
    children
}

/// Reads one path from `rest`: `a::b::c`, `a::{b, c::{d, e}}` expanded, `as` aliases kept
/// apart. Returns `(path, alias)` pairs; the alias is the name the path is known by here.
fn expand(rest: &str) -> Vec<(String, String)> {
    fn ident_len(s: &str) -> usize {
        s.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    }
    fn walk(s: &str, base: &str, out: &mut Vec<(String, String)>) -> usize {
        // Returns how many bytes of `s` the path took.
        let mut at = 0;
        let mut path = base.to_owned();
        loop {
            let here = &s[at..];
            let skipped = here.len() - here.trim_start().len();
            at += skipped;
            let here = &s[at..];
            if let Some(inner) = here.strip_prefix('{') {
                let mut used = 1;
                let mut inner_at = 0;
                loop {
                    let part = &inner[inner_at..];
                    let trimmed = part.trim_start();
                    inner_at += part.len() - trimmed.len();
                    if inner[inner_at..].starts_with('}') {
                        inner_at += 1;
                        break;
                    }
                    if inner_at >= inner.len() {
                        break;
                    }
                    let took = walk(&inner[inner_at..], &path, out);
                    inner_at += took.max(1);
                    let after = inner[inner_at..].trim_start();
                    inner_at = inner.len() - after.len();
                    if after.starts_with(',') {
                        inner_at += 1;
                    }
                }
                used += inner_at;
                return at + used;
            }
            let len = ident_len(here);
            if len == 0 {
                if !path.is_empty() && path != base {
                    let last = path.rsplit("::").next().unwrap_or("").to_owned();
                    out.push((path, last));
                }
                return at;
            }
            let ident = &here[..len];
            at += len;
            if ident == "self" && !path.is_empty() {
                let last = path.rsplit("::").next().unwrap_or("").to_owned();
                out.push((path.clone(), last));
                return at;
            }
            path = if path.is_empty() {
                ident.to_owned()
            } else {
                format!("{path}::{ident}")
            };
            if s[at..].starts_with("::") {
                at += 2;
                continue;
            }
            let after = s[at..].trim_start();
            if let Some(alias) = after.strip_prefix("as ") {
                let alias = alias.trim_start();
                let alias_len = ident_len(alias);
                out.push((path, alias[..alias_len].to_owned()));
                return s.len() - alias.len() + alias_len;
            }
            let last = ident.to_owned();
            out.push((path, last));
            return at;
        }
    }
    let mut out = Vec::new();
    walk(rest, "", &mut out);
    out
}

/// One file's imports: every path it names, made absolute; and its re-exports, name →
/// absolute path.
struct FileImports {
    paths: Vec<String>,
    reexports: BTreeMap<String, String>,
}

/// `path` as written in module `module` (a file), made absolute, when it starts with
/// `crate`, `super`, `self` or a declared child.
fn absolute(path: &str, module: &str, children: &BTreeSet<String>) -> Option<String> {
    let mut segs: Vec<&str> = path.split("::").collect();
    let mut base: Vec<String> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_owned).collect()
    };
    match segs[0] {
        "crate" => {
            base.clear();
            segs.remove(0);
        }
        "self" => {
            segs.remove(0);
        }
        "super" => {
            while segs.first() == Some(&"super") {
                segs.remove(0);
                base.pop()?;
            }
        }
        first if children.contains(first) => {}
        _ => return None,
    }
    base.extend(segs.iter().map(|s| (*s).to_owned()));
    Some(base.join("::"))
}

fn imports_of(module: &str, code: &str) -> FileImports {
    let children = declared_children(code);
    let mut paths = Vec::new();
    let mut reexports = BTreeMap::new();
    let bytes = code.as_bytes();
    let mut starts: Vec<usize> = Vec::new();
    // Every `use` item, and every other path with `::` in it.
    for (at, _) in code.match_indices("use ") {
        if at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            starts.push(at);
        }
    }
    for start in starts {
        let rest = &code[start + 4..];
        let before = code[..start].trim_end();
        let is_pub = before.ends_with("pub")
            || before
                .rfind("pub(")
                .is_some_and(|p| before[p..].find(')') == Some(before.len() - p - 1));
        for (path, alias) in expand(rest.trim_start_matches("::")) {
            if let Some(full) = absolute(&path, module, &children) {
                if is_pub {
                    reexports.insert(alias, full.clone());
                }
                paths.push(full);
            }
        }
    }
    // Paths in expressions and types: `crate::a::b`, `super::x`, `child::f`.
    for (at, _) in code.match_indices("::") {
        let head_start = code[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(0, |p| p + 1);
        if code[..head_start].trim_end().ends_with("use") {
            continue;
        }
        let head = &code[head_start..at];
        if head.contains("::") || head.is_empty() {
            continue; // the middle of a path already read from its start
        }
        for (path, _) in expand(&code[head_start..]) {
            if let Some(full) = absolute(&path, module, &children) {
                paths.push(full);
            }
        }
    }
    FileImports { paths, reexports }
}

/// The file (module path) that defines the item `path` names: the longest module prefix
/// that is a file, followed through that file's re-exports.
fn resolve(
    path: &str,
    modules: &BTreeMap<String, PathBuf>,
    imports: &BTreeMap<String, FileImports>,
    depth: usize,
) -> Option<String> {
    let segs: Vec<&str> = path.split("::").collect();
    let n = (1..=segs.len())
        .rev()
        .find(|n| modules.contains_key(&segs[..*n].join("::")))?;
    let module = segs[..n].join("::");
    if let (Some(name), true) = (segs.get(n), depth < 8) {
        if let Some(target) = imports[&module].reexports.get(*name) {
            let mut target = target.clone();
            for rest in &segs[n + 1..] {
                target = format!("{target}::{rest}");
            }
            if let Some(found) = resolve(&target, modules, imports, depth + 1) {
                return Some(found);
            }
        }
    }
    Some(module)
}

fn edges(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let imports: BTreeMap<String, FileImports> = modules
        .iter()
        .map(|(module, file)| {
            let code = code(&std::fs::read_to_string(file).unwrap());
            (module.clone(), imports_of(module, &code))
        })
        .collect();
    imports
        .iter()
        .map(|(module, found)| {
            let deps = found
                .paths
                .iter()
                .filter_map(|p| resolve(p, modules, &imports, 0))
                .filter(|t| t != module)
                .collect();
            (module.clone(), deps)
        })
        .collect()
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
        for next in graph.get(node).into_iter().flatten() {
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

/// The blocks of ARCHITECTURE.md's "Layers" section: the folder each is about (`""` for
/// `supervisor/src` itself, whose block's fence is plain ```` ```text ````; `"runtime"` for
/// a block fenced ```` ```text runtime/ ````) → its rows, top row first, each row the
/// folders (or files, without `.rs`) that stand on it.
fn layer_blocks(architecture: &str) -> BTreeMap<String, Vec<Vec<String>>> {
    let section = architecture
        .split("\n## Layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a '## Layers' section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut blocks = BTreeMap::new();
    // Odd pieces between fences are the blocks' insides.
    for block in section.split("```").skip(1).step_by(2) {
        let mut lines = block.lines();
        let tag = lines.next().unwrap_or("").trim();
        let Some(folder) = tag.strip_prefix("text") else {
            continue;
        };
        let rows = lines
            .map(|l| l.split('#').next().unwrap_or("").split_whitespace())
            .map(|w| w.map(str::to_owned).collect::<Vec<_>>())
            .filter(|row| !row.is_empty())
            .collect();
        blocks.insert(folder.trim().trim_end_matches('/').to_owned(), rows);
    }
    assert!(
        blocks.contains_key(""),
        "the Layers section holds a ```text block for supervisor/src"
    );
    blocks
}

/// The rows of the Layers section's block for `supervisor/src` itself, top row first.
fn layers(architecture: &str) -> Vec<Vec<String>> {
    layer_blocks(architecture).remove("").unwrap_or_default()
}

/// The imports between modules under `folder` (`runtime`), with `folder::` taken off both
/// ends: the graph its own block of layers is checked against.
fn inside(
    graph: &BTreeMap<String, BTreeSet<String>>,
    folder: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let prefix = format!("{folder}::");
    graph
        .iter()
        .filter_map(|(from, deps)| {
            let from = from.strip_prefix(&prefix)?;
            let deps = deps
                .iter()
                .filter_map(|d| d.strip_prefix(&prefix).map(str::to_owned))
                .collect();
            Some((from.to_owned(), deps))
        })
        .collect()
}

/// Each row's names against what stands in the folder (`tops`): one missing from the rows,
/// or a row naming what is not there, is a problem. `place` names the block.
fn rows_match(rows: &[Vec<String>], tops: &BTreeSet<&str>, place: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let listed: Vec<&String> = rows.iter().flatten().collect();
    for top in tops {
        if !listed.iter().any(|l| l == top) {
            problems.push(format!("{top} stands on no row of {place}"));
        }
    }
    for l in &listed {
        if !tops.contains(l.as_str()) {
            problems.push(format!("{l} is in {place} but not in src"));
        }
    }
    problems
}

/// Every import that breaks the layers: from a folder to one on its own row or a higher
/// one. `rows` is top row first; a module's folder is its first path segment.
fn upward(graph: &BTreeMap<String, BTreeSet<String>>, rows: &[Vec<String>]) -> Vec<String> {
    let row_of = |module: &str| {
        let top = module.split("::").next().unwrap_or(module);
        rows.iter().position(|r| r.iter().any(|f| f == top))
    };
    let mut broken = Vec::new();
    for (from, deps) in graph {
        for to in deps {
            let (f, t) = (from.split("::").next(), to.split("::").next());
            if f == t {
                continue;
            }
            match (row_of(from), row_of(to)) {
                (Some(a), Some(b)) if a < b => {}
                (Some(_), Some(_)) => broken.push(format!("{from} -> {to}")),
                _ => {}
            }
        }
    }
    broken
}

#[test]
fn supervisor_files_keep_the_layers_without_a_cycle() {
    let mut found = BTreeMap::new();
    modules(&src_dir(), &[], &mut found);
    let graph = edges(&found);
    // The reader sees real imports: the round uses the hosts, the hosts do not use the round;
    // a child module named bare and a re-export are seen too.
    assert!(
        graph["runtime::steps::dirty"].contains("hosts"),
        "{:?}",
        graph["runtime::steps::dirty"]
    );
    assert!(
        graph["hosts"].contains("hosts::host"),
        "{:?}",
        graph["hosts"]
    );
    let architecture = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"),
    )
    .unwrap();
    let mut problems = Vec::new();
    for (folder, rows) in layer_blocks(&architecture) {
        let (graph, place) = if folder.is_empty() {
            (graph.clone(), "ARCHITECTURE.md's Layers".to_owned())
        } else {
            (
                inside(&graph, &folder),
                format!("ARCHITECTURE.md's Layers for {folder}/"),
            )
        };
        // What stands in the folder: its modules' first segments.
        let tops: BTreeSet<&str> = graph.keys().filter_map(|m| m.split("::").next()).collect();
        problems.extend(rows_match(&rows, &tops, &place));
        for edge in upward(&graph, &rows) {
            problems.push(format!("import against {place}: {edge}"));
        }
    }
    // Each cycle found is cut at its last edge and looked for again, so every one is named.
    let mut rest = graph.clone();
    while let Some(cycle) = find_cycle(&rest) {
        problems.push(format!("import cycle: {}", cycle.join(" -> ")));
        let (from, to) = (&cycle[cycle.len() - 2], &cycle[cycle.len() - 1]);
        rest.get_mut(from).unwrap().remove(to);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_sees_every_kind_of_path() {
    let code = code(
        "//! crate::a in a comment\n\
         use crate::hosts::{pins::check_pin, HostManager};\n\
         pub(crate) use stats::{CallHistogram as Hist, CALL_BUCKETS};\n\
         mod stats;\n\
         fn f() { let s = \"crate::in_a_string\"; super::g(); self::h::i(); stats::j(); 'x'; }\n\
         fn k<'a>(x: &'a str) -> crate::record::events::Event { todo!() }\n",
    );
    let found = imports_of("hosts", &code);
    for want in [
        "hosts::pins::check_pin",
        "hosts::HostManager",
        "hosts::stats::CallHistogram",
        "hosts::stats::CALL_BUCKETS",
        "g",
        "hosts::h::i",
        "hosts::stats::j",
        "record::events::Event",
    ] {
        assert!(
            found.paths.iter().any(|p| p == want),
            "{want} not in {:?}",
            found.paths
        );
    }
    assert!(!found.paths.iter().any(|p| p.contains("in_a")));
    assert_eq!(found.reexports["Hist"], "hosts::stats::CallHistogram");
    assert_eq!(
        found.reexports["CALL_BUCKETS"],
        "hosts::stats::CALL_BUCKETS"
    );
}

#[test]
fn the_checks_find_cycles_and_upward_imports() {
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
    let rows = layers("# x\n## Layers\n```text\na   # top\nb d\nc\n```\n");
    assert_eq!(rows, [vec!["a"], vec!["b", "d"], vec!["c"]]);
    assert_eq!(upward(&graph, &rows), ["c -> a"]);
}

#[test]
fn a_folder_with_its_own_block_keeps_its_inner_layers() {
    // `r/` stands in two folders, `top` over `low`; `low::x` importing `top::y` breaks them.
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("r", vec![]),
        ("r::top::y", vec!["r::low::x"]),
        ("r::low::x", vec!["r::top::y", "e"]),
        ("e", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    let blocks = layer_blocks(
        "# x\n## Layers\n```text\nr\ne\n```\ntext\n```text r/\ntop  # over\nlow\n```\n## Next\n```text x/\nz\n```\n",
    );
    assert_eq!(blocks.keys().collect::<Vec<_>>(), ["", "r"]);
    let inner = inside(&graph, "r");
    assert_eq!(upward(&inner, &blocks["r"]), ["low::x -> top::y"]);
    let tops: BTreeSet<&str> = ["top", "low", "new"].into_iter().collect();
    assert_eq!(
        rows_match(&blocks["r"], &tops, "r's block"),
        ["new stands on no row of r's block"]
    );
    // The same imports the right way up break nothing.
    let mut fixed = inner.clone();
    fixed.get_mut("low::x").unwrap().remove("top::y");
    assert!(upward(&fixed, &blocks["r"]).is_empty());
}
