//! ARCHITECTURE.md cannot drift from the code: its code map names every source file of
//! every crate, and its "Threads" section every thread the supervisor and the launcher
//! start (issue 40, item 4).
//!
//! **Named file.** A source file (`.rs`, `.py`, `.sh`, `.js`) of `protocol/`,
//! `plugin-host/`, `sdk/`, `supervisor/` (each: `src/`, `build.rs`; the SDK's `python/`
//! too), `tests/src/` and `examples/` (an example's tests aside) is read by its path in
//! its crate with every `src` folder left out: `supervisor/src/runtime/cycle/serve.rs` is
//! `runtime/cycle/serve`, its folder `runtime/cycle` and its name `serve`. Its crate's part
//! of the code map (from its `### \`crate/\`` heading to the next heading) must hold its
//! name in backticks (`` `serve` ``, `` `serve.rs` ``, or a path with it as one of its
//! parts): anywhere in the part when the folder is the crate's own, else in the list item
//! that opens with the folder in backticks (`` - `runtime/cycle/` — … ``), in that item's
//! own lines (its sub-items are theirs). A crate's root and a folder's face (`lib`,
//! `main`, `__main__`, `mod`) need no name: the crate's heading and the folder's item name
//! them.
//!
//! **Named thread.** A place in the code of `supervisor/src` or `plugin-host/src` (its
//! test-only `ar-test-*` binaries aside; `#[cfg(test)]` code aside) that starts a thread
//! (`thread::spawn`, `thread::Builder`, `thread::scope`, `spawn_blocking`, a multi-thread
//! runtime, the OpenTelemetry SDK's `BatchSpanProcessor`) or a task (`tokio::spawn`, a
//! handle's `.spawn(async …)`) must have its module in backticks in "Threads"
//! (`runtime::agent::process`, and for the launcher's crate `plugin_host::common::notify`),
//! and a thread given a name (`.name("ar-egress"…)`) its name too. The launcher
//! (`plugin-host/src/launcher/`) starts none: it confines itself in a single-threaded
//! process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn architecture() -> String {
    std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap()
}

const SOURCE: &[&str] = &["rs", "py", "sh", "js"];

/// Every file under `dir` with a source extension, as paths relative to `base`; folders
/// named in `skip` (and hidden ones) are not entered.
fn walk(base: &Path, dir: &Path, skip: &[&str], out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            if !skip.contains(&name.as_str()) {
                walk(base, &path, skip, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| SOURCE.iter().any(|s| e == *s))
        {
            let rel = path.strip_prefix(base).unwrap();
            out.push(rel.to_string_lossy().into_owned());
        }
    }
}

/// The source files of each crate: `(crate, path in the crate)`, e.g.
/// `("supervisor", "src/runtime/cycle/serve.rs")`.
fn source_files() -> Vec<(String, String)> {
    let root = repo();
    let mut all = Vec::new();
    for krate in ["protocol", "plugin-host", "sdk", "supervisor", "tests"] {
        let base = root.join(krate);
        let mut files = Vec::new();
        walk(&base, &base.join("src"), &[], &mut files);
        if krate == "sdk" {
            walk(&base, &base.join("python"), &["__pycache__"], &mut files);
        }
        if base.join("build.rs").exists() {
            files.push("build.rs".to_owned());
        }
        all.extend(files.into_iter().map(|f| (krate.to_owned(), f)));
    }
    let examples = root.join("examples");
    let mut files = Vec::new();
    walk(
        &examples,
        &examples,
        &["tests", "target", "__pycache__"],
        &mut files,
    );
    all.extend(files.into_iter().map(|f| ("examples".to_owned(), f)));
    all.sort();
    all
}

/// The part of `map` under the heading that opens with `### \`crate/\``, up to the next
/// heading.
fn crate_part<'a>(map: &'a str, krate: &str) -> Option<&'a str> {
    let head = format!("\n### `{krate}/`");
    let at = map.find(&head)? + 1;
    let rest = &map[at..];
    let body = rest.find('\n').map_or("", |n| &rest[n..]);
    let end = body.find("\n#").map_or(body.len(), |n| n + 1);
    Some(&body[..end])
}

/// The words of the backticked spans of `text`: each span split at anything but letters,
/// digits, `_` and `-`.
fn named(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| {
            span.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The list item of `part` that opens with `` `folder/` ``: its own lines (up to the next
/// item at any depth, a blank line or a heading).
fn item<'a>(part: &'a str, folder: &str) -> Option<String> {
    let head = format!("`{folder}/`");
    let lines: Vec<&'a str> = part.lines().collect();
    let start = lines.iter().position(|l| {
        l.trim_start()
            .strip_prefix("- ")
            .is_some_and(|rest| rest.starts_with(&head))
    })?;
    let mut own = vec![lines[start]];
    for line in &lines[start + 1..] {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with("- ") || t.starts_with('#') {
            break;
        }
        own.push(line);
    }
    Some(own.join("\n"))
}

/// Every file of `files` (`(crate, path)`) that `map` does not name, with why.
fn unnamed_files(map: &str, files: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (krate, path) in files {
        let parts: Vec<&str> = path.split('/').filter(|p| *p != "src").collect();
        let (file, folders) = parts.split_last().unwrap();
        let stem = file.rsplit_once('.').map_or(*file, |(s, _)| s);
        if ["lib", "main", "__main__", "mod"].contains(&stem) {
            continue;
        }
        let whole = format!("{krate}/{path}");
        let Some(part) = crate_part(map, krate) else {
            problems.push(format!(
                "{whole}: no `### \\`{krate}/\\`` part in the code map"
            ));
            continue;
        };
        let folder = folders.join("/");
        let scope = if folder.is_empty() {
            part.to_owned()
        } else if let Some(own) = item(part, &folder) {
            own
        } else {
            problems.push(format!(
                "{whole}: no item `- \\`{folder}/\\` …` in the code map's {krate}/ part"
            ));
            continue;
        };
        if !named(&scope).contains(stem) {
            let place = if folder.is_empty() {
                format!("the {krate}/ part")
            } else {
                format!("the item of {folder}/")
            };
            problems.push(format!("{whole}: `{stem}` is not named in {place}"));
        }
    }
    problems
}

#[test]
fn every_source_file_is_named_in_the_code_map() {
    let files = source_files();
    assert!(
        files.len() > 200,
        "the walk found only {} files",
        files.len()
    );
    assert!(files.contains(&(
        "supervisor".to_owned(),
        "src/runtime/cycle/serve.rs".to_owned()
    )));
    let problems = unnamed_files(&architecture(), &files);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's code map misses {} file(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_file_check_finds_an_unnamed_file() {
    let map = "## Code map\n\
        ### `lib/` — a crate\n\
        Files: `alpha` and `beta.rs`.\n\
        - `deep/` — `gamma` (one), `spawn` …\n  \
          `delta` on a second line.\n  \
          - `deep/er/` — `epsilon`.\n\
        ### `other/`\n\
        `zeta`\n";
    let file = |p: &str| ("lib".to_owned(), p.to_owned());
    let named_all = [
        file("src/alpha.rs"),
        file("src/beta.rs"),
        file("src/lib.rs"),
        file("src/deep/mod.rs"),
        file("src/deep/gamma.rs"),
        file("src/deep/delta.rs"),
        file("src/deep/er/epsilon.rs"),
    ];
    assert_eq!(unnamed_files(map, &named_all), Vec::<String>::new());
    // A file nobody named, one named only in another crate's part, one named only in a
    // sub-item, and one in a folder without an item: each is found.
    let unnamed = [
        file("src/omega.rs"),
        file("src/zeta.rs"),
        file("src/deep/epsilon.rs"),
        file("src/new/alpha.rs"),
    ];
    assert_eq!(
        unnamed_files(map, &unnamed),
        [
            "lib/src/omega.rs: `omega` is not named in the lib/ part",
            "lib/src/zeta.rs: `zeta` is not named in the lib/ part",
            "lib/src/deep/epsilon.rs: `epsilon` is not named in the item of deep/",
            "lib/src/new/alpha.rs: no item `- \\`new/\\` …` in the code map's lib/ part",
        ]
    );
}

/// A place in the code that starts a thread or a task.
#[derive(Debug, PartialEq)]
struct Start {
    /// The module, as the Threads section names it (`runtime::agent::process`).
    module: String,
    /// `thread` or `task`.
    kind: &'static str,
    /// The thread's name, when it is given one.
    name: Option<String>,
}

/// What starts a thread, and what starts a task on the runtime it is called on.
const THREAD_STARTS: &[&str] = &[
    "thread::spawn(",
    "thread::Builder::new(",
    "thread::scope(",
    "spawn_blocking(",
    "new_multi_thread(",
    "BatchSpanProcessor::builder(",
];
const TASK_STARTS: &[&str] = &["tokio::spawn(", "task::spawn(", ".spawn(async"];

/// The starts in one file's text, `module` being its module's name.
fn starts_in(module: &str, text: &str) -> Vec<Start> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for (kind, patterns) in [("thread", THREAD_STARTS), ("task", TASK_STARTS)] {
        for pattern in patterns {
            for (at, _) in code.match_indices(pattern) {
                // A name given on the builder: before the statement's end.
                let ahead = code[at..].split(';').next().unwrap_or("");
                let name = ahead
                    .split_once(".name(\"")
                    .and_then(|(_, rest)| rest.split_once('"'))
                    .map(|(name, _)| name.to_owned());
                found.push(Start {
                    module: module.to_owned(),
                    kind,
                    name,
                });
            }
        }
    }
    found
}

/// `src/runtime/agent/process.rs` → `runtime::agent::process` (with `prefix`, the crate's
/// name, in front when it is not the supervisor's own).
fn module_of(path: &str, prefix: &str) -> String {
    let inner = path.strip_prefix("src/").unwrap_or(path);
    let inner = inner.strip_suffix(".rs").unwrap_or(inner);
    let mut parts: Vec<&str> = inner.split('/').filter(|p| *p != "mod").collect();
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    let mut module = prefix.to_owned();
    for p in parts {
        if !module.is_empty() {
            module.push_str("::");
        }
        module.push_str(p);
    }
    module
}

/// Every start in the supervisor's and the launcher crate's code.
fn starts() -> Vec<Start> {
    let mut all = Vec::new();
    for (krate, prefix) in [("supervisor", ""), ("plugin-host", "plugin_host")] {
        let base = repo().join(krate);
        let mut files = Vec::new();
        walk(&base, &base.join("src"), &[], &mut files);
        files.sort();
        for file in files {
            if !file.ends_with(".rs") || file.contains("/bin/ar-test-") {
                continue;
            }
            let text = std::fs::read_to_string(base.join(&file)).unwrap();
            all.extend(starts_in(&module_of(&file, prefix), &text));
        }
    }
    all
}

/// The "## Threads" section of `map`.
fn threads_section(map: &str) -> &str {
    let rest = map.split("\n## Threads").nth(1).unwrap_or("");
    rest.split("\n## ").next().unwrap_or(rest)
}

/// Every start that `section` does not name, in words.
fn unnamed_starts(section: &str, starts: &[Start]) -> Vec<String> {
    let spans: BTreeSet<&str> = section.split('`').skip(1).step_by(2).collect();
    let mut problems = Vec::new();
    for start in starts {
        if !spans.contains(start.module.as_str()) {
            problems.push(format!(
                "a {} started in `{}`: the module is not named",
                start.kind, start.module
            ));
        }
        if let Some(name) = &start.name {
            if !spans.contains(name.as_str()) {
                problems.push(format!(
                    "the thread `{name}` of `{}`: its name is not named",
                    start.module
                ));
            }
        }
    }
    problems.dedup();
    problems
}

#[test]
fn every_thread_is_named_in_threads() {
    let starts = starts();
    // The reader sees what it must: the agent's log copier, a named thread, a task.
    for (module, kind, name) in [
        ("runtime::agent::process", "thread", None),
        ("runtime::egress::routes", "thread", Some("ar-egress")),
        ("plugin_host::common::notify", "thread", Some("ar-seccomp")),
        ("record::stop", "task", None),
    ] {
        assert!(
            starts
                .iter()
                .any(|s| s.module == module && s.kind == kind && s.name.as_deref() == name),
            "{module} {kind} {name:?} not in {starts:?}"
        );
    }
    let in_launcher: Vec<&Start> = starts
        .iter()
        .filter(|s| s.module.starts_with("plugin_host::launcher"))
        .collect();
    assert!(
        in_launcher.is_empty(),
        "the launcher confines itself single-threaded, yet starts {in_launcher:?}"
    );
    let problems = unnamed_starts(threads_section(&architecture()), &starts);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's Threads section misses:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_thread_check_finds_an_unnamed_thread() {
    let code = "use std::thread;\n\
        fn a() { std::thread::spawn(move || copy()); }\n\
        fn b() {\n    std::thread::Builder::new()\n        .name(\"ar-new\".into())\n        .spawn(f);\n}\n\
        fn c() { tokio::spawn(async move {}); }\n\
        // thread::spawn( in a comment is no start\n\
        #[cfg(test)]\nmod tests { fn d() { std::thread::spawn(|| ()); } }\n";
    let found = starts_in("runtime::x", code);
    assert_eq!(
        found
            .iter()
            .map(|s| (s.kind, s.name.as_deref()))
            .collect::<Vec<_>>(),
        [("thread", None), ("thread", Some("ar-new")), ("task", None)]
    );
    let section = "\n## Threads\nThe copier (`runtime::x`) and `ar-new`.\n## Next\n`ar-old`";
    assert!(unnamed_starts(threads_section(section), &found).is_empty());
    // The same code where the section forgets the name, or the module: both are found.
    let forgot_name = "\n## Threads\nThe copier (`runtime::x`).\n## Next\n`ar-new`";
    assert_eq!(
        unnamed_starts(threads_section(forgot_name), &found),
        ["the thread `ar-new` of `runtime::x`: its name is not named"]
    );
    let forgot_module = "\n## Threads\nThe copier (`runtime::y`) and `ar-new`.\n";
    assert_eq!(
        unnamed_starts(threads_section(forgot_module), &found),
        [
            "a thread started in `runtime::x`: the module is not named",
            "a task started in `runtime::x`: the module is not named",
        ]
    );
    assert_eq!(
        module_of("src/common/notify.rs", "plugin_host"),
        "plugin_host::common::notify"
    );
    assert_eq!(module_of("src/record/mod.rs", ""), "record");
}
