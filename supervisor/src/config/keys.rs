//! Every config key defined once: its name (`table.key`), type, default, range, doc line
//! and whether a re-read config may change it ([`Reload`]). The [`config_table!`] macro
//! turns one table's definitions into
//!
//! - the serde struct the file is parsed into (`Option<T>` per key, `T` for a required
//!   one; unknown keys refused by the struct's own `#[serde(deny_unknown_fields)]`),
//! - one getter per key returning the value or its default, checked against its range
//!   (`Result<_, Bad>`: the dotted key and what was expected),
//! - the table's [`Key`] list, from which docs/configuration.md's key tables
//!   ([`doc_table`]; a test fails when they drift), `init`'s template
//!   (`crate::operator::init`) and config reload's fixed keys
//!   (`crate::runtime::cycle::config_follow`) come.
//!
//! Adding a key: one definition in its table's `config_table!` (`config/raw.rs`,
//! `monitor.rs`, `goal.rs`) and its use; then
//! `AR_UPDATE_CONFIG_DOCS=1 cargo test -p agent-runner --lib config_docs` writes its row
//! (`config::doc_tables`).

use std::collections::BTreeMap;

/// A bad key: the dotted key and what is wrong with it (the config module adds the file to
/// make it a `ConfigError::Key`).
pub(crate) type Bad = (String, String);

/// Whether a running `serve` takes a key's new value when it re-reads the file
/// (docs/configuration.md, "Config follows the file").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reload {
    /// Applies from the next round on.
    Next,
    /// Read once, when `serve` starts: a new value waits for the next start.
    Boot,
    /// Cannot change while `serve` runs: the re-read is refused (`config_broken` naming
    /// the key) and the last good config keeps running.
    Restart,
}

/// What `init`'s template writes for a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Init {
    /// Nothing.
    Omit,
    /// `key = <the preset's value, or the default>`, after a `# <comment>` line if given.
    Write(Option<&'static str>),
    /// Only when the preset gives a value.
    Preset,
    /// `# key = <default>   (<note>)`: shown, left unset.
    Commented(&'static str),
}

/// One key's definition.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key {
    /// The dotted name, e.g. `runtime.round_budget_s`.
    pub name: &'static str,
    /// Its name inside its table.
    pub field: &'static str,
    // The docs' fields are read by the test that writes docs/configuration.md's tables
    // (`config::doc_tables`).
    /// The type as docs/configuration.md writes it (`integer ≥ 1`, `"argv"` \| `"stdin"`).
    pub type_label: fn() -> String,
    /// The default as docs/configuration.md writes it (`` `1800` ``, `none`, `required`).
    pub default_doc: fn() -> String,
    /// The default as a TOML value, for `init`; `None` when the key has no fixed default.
    pub default_toml: fn() -> Option<String>,
    /// The doc line (its lines joined with spaces by [`Key::doc`]).
    pub doc_lines: &'static [&'static str],
    /// Whether a re-read config may change it.
    pub reload: Reload,
    /// What `init` writes.
    pub init: Init,
}

impl Key {
    /// The doc line, one line, with what a reload does when it is not the usual.
    pub(crate) fn doc(&self) -> String {
        let mut doc = self
            .doc_lines
            .iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" ");
        match self.reload {
            Reload::Next => {}
            Reload::Boot => doc.push_str(". Read once, when `serve` starts"),
            Reload::Restart => {
                doc.push_str(". `serve` refuses a re-read config that changes it: restart it")
            }
        }
        doc
    }
}

/// A table of keys: its dotted name and its definitions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table {
    /// `runtime`, `plugins.hosts.<name>`, `monitor.host_health.disk`, …
    pub name: &'static str,
    /// Its keys, in the order the docs list them.
    pub keys: &'static [Key],
}

#[cfg(test)]
/// The markdown table of `tables`' keys for docs/configuration.md, key names written
/// relative to `under` (`monitor.host_health` writes `disk.warning_pct`).
pub(crate) fn doc_table(tables: &[&Table], under: &str) -> String {
    let mut out = String::from("| key | type | default | meaning |\n|---|---|---|---|\n");
    for key in tables.iter().flat_map(|t| t.keys) {
        let name = key
            .name
            .strip_prefix(under)
            .and_then(|n| n.strip_prefix('.'))
            .unwrap_or(key.name);
        out.push_str(&format!(
            "| `{name}` | {} | {} | {} |\n",
            (key.type_label)(),
            (key.default_doc)(),
            key.doc()
        ));
    }
    out
}

/// A value written as TOML (the docs' defaults and `init`'s template).
pub(crate) trait Toml {
    /// Its TOML text.
    fn toml(&self) -> String;
    /// How the docs name the type when the definition gives no label.
    fn type_label() -> &'static str;
}

impl Toml for u64 {
    fn toml(&self) -> String {
        self.to_string()
    }
    fn type_label() -> &'static str {
        "integer"
    }
}

impl Toml for f64 {
    fn toml(&self) -> String {
        toml::Value::Float(*self).to_string()
    }
    fn type_label() -> &'static str {
        "number"
    }
}

impl Toml for bool {
    fn toml(&self) -> String {
        self.to_string()
    }
    fn type_label() -> &'static str {
        "bool"
    }
}

impl Toml for String {
    /// A basic string on one line: `"\"type\":\"result\""`, `"\n\n"`.
    fn toml(&self) -> String {
        let mut out = String::with_capacity(self.len() + 2);
        out.push('"');
        for c in self.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
    fn type_label() -> &'static str {
        "string"
    }
}

impl Toml for Vec<String> {
    fn toml(&self) -> String {
        let items: Vec<String> = self.iter().map(Toml::toml).collect();
        format!("[{}]", items.join(", "))
    }
    fn type_label() -> &'static str {
        "list of strings"
    }
}

impl<V: Toml> Toml for BTreeMap<String, V> {
    fn toml(&self) -> String {
        let items: Vec<String> = self
            .iter()
            .map(|(k, v)| format!("{k} = {}", v.toml()))
            .collect();
        format!("{{{}}}", items.join(", "))
    }
    fn type_label() -> &'static str {
        "table"
    }
}

/// How an empty value of a list or table type is written: `[]`, `{}`.
pub(crate) trait Empty {
    /// Its TOML text.
    const EMPTY: &'static str;
}

impl<T> Empty for Vec<T> {
    const EMPTY: &'static str = "[]";
}

impl<K, V> Empty for BTreeMap<K, V> {
    const EMPTY: &'static str = "{}";
}

impl Empty for serde_json::Map<String, serde_json::Value> {
    const EMPTY: &'static str = "{}";
}

/// A default written in a definition, made the key's type: `1800`, `"\n\n"`, `&["a"]`.
pub(crate) trait DefaultOf<T> {
    /// The value.
    fn value(self) -> T;
}

impl<T> DefaultOf<T> for T {
    fn value(self) -> T {
        self
    }
}

impl DefaultOf<String> for &str {
    fn value(self) -> String {
        self.to_owned()
    }
}

impl DefaultOf<Vec<String>> for &[&str] {
    fn value(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}

/// A key's dotted name made by [`config_table!`] (`concat!(table, ".", field)`), without
/// the leading dot of a top-level key (table `""`: `.schema_version` → `schema_version`).
pub(crate) const fn dotted(name: &'static str) -> &'static str {
    match name.as_bytes() {
        [b'.', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(field) => field,
            Err(_) => name,
        },
        _ => name,
    }
}

/// The words of a vocabulary as the docs write a type: `` `"a"` \| `"b"` ``.
pub(crate) fn words_label<W: super::vocabulary::Vocabulary>() -> String {
    W::ALL
        .iter()
        .map(|w| format!("`{:?}`", w.word()))
        .collect::<Vec<_>>()
        .join(" \\| ")
}

/// The message of a value outside a key's range: `0 is out of range; expected integer ≥ 1`.
pub(crate) fn out_of_range(key: &str, value: impl std::fmt::Display, label: &str) -> Bad {
    (
        key.to_owned(),
        format!("{value} is out of range; expected {label}"),
    )
}

/// One config table's definitions: the serde struct, its getters and its [`Key`] list
/// (module docs). Each key:
///
/// ```text
/// /// doc line (docs/configuration.md's "meaning")
/// name: Type [as Word] = (default) [range(lo..) | range(lo..=hi)] [label "docs type"]
///     reload Next|Boot|Restart [init (write [“comment”]) | (preset) | (commented “note”)];
/// ```
///
/// `(default)` is `(value)`, `(value, "note")`, `(none)`: absent means off,
/// `(computed "text")`: worked out where the key is used, `(empty)`: `[]` / `{}`,
/// or `(required)`. `as Word`: the file holds a string of the vocabulary `Word`
/// (`config::vocabulary`); the getter returns the word. Sub-tables that are no keys follow
/// as `@sub name: Type;` (`#[serde(default)]`: a table, an `Option` of one, or a `Vec` of
/// an array of tables such as `[[goal.checks]]`, whose entries are a table of their own,
/// named `goal.checks`), then fields that are neither, written as they are with their
/// attributes, as `@field name: Type;` (a required table, or one filled by hand under
/// `#[serde(skip)]`), the attributes after `@field`. Table `""` is the file's top level: its keys have no prefix.
macro_rules! config_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident = $table:literal {
            $(
                $(#[doc = $doc:literal])*
                $field:ident : $ty:ty $(as $word:ty)? = $default:tt
                    $(range $range:tt)? $(label $label:literal)?
                    reload $reload:ident $(init $init:tt)? ;
            )*
            $( @sub $sub:ident : $subty:ty ; )*
            $( @field $(#[$fmeta:meta])* $plain:ident : $plainty:ty ; )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                $(#[doc = $doc])*
                pub $field: config_table!(@field_ty $default, $ty),
            )*
            $(
                #[serde(default)]
                pub $sub: $subty,
            )*
            $(
                $(#[$fmeta])*
                pub $plain: $plainty,
            )*
        }

        #[allow(dead_code)]
        impl $name {
            /// This table and its keys.
            pub(crate) const TABLE: $crate::config::keys::Table = $crate::config::keys::Table {
                name: $table,
                keys: Self::KEYS,
            };

            /// Every key of this table, defined once (`config::keys`).
            pub(crate) const KEYS: &'static [$crate::config::keys::Key] = &[
                $(
                    $crate::config::keys::Key {
                        name: $crate::config::keys::dotted(concat!($table, ".", stringify!($field))),
                        field: stringify!($field),
                        type_label: || config_table!(@label $ty, [$($word)?], [$($range)?], [$($label)?]),
                        default_doc: || config_table!(@default_doc $ty, [$($word)?], $default),
                        default_toml: || config_table!(@default_toml $ty, [$($word)?], $default),
                        doc_lines: &[$($doc),*],
                        reload: $crate::config::keys::Reload::$reload,
                        init: config_table!(@init [$($init)?]),
                    },
                )*
            ];

            $(
                config_table!(@getter $crate::config::keys::dotted(concat!($table, ".", stringify!($field))), $field, $ty,
                    [$($word)?], $default, [$($range)?], [$($label)?]);
            )*
        }
    };

    (@field_ty (required), $ty:ty) => { $ty };
    (@field_ty $other:tt, $ty:ty) => { Option<$ty> };

    (@label $ty:ty, [$word:ty], [], []) => { $crate::config::keys::words_label::<$word>() };
    (@label $ty:ty, [$($word:ty)?], [$($range:tt)?], [$label:literal]) => { $label.to_owned() };
    (@label $ty:ty, [], [], []) => {
        <$ty as $crate::config::keys::Toml>::type_label().to_owned()
    };
    (@label $ty:ty, [], [($lo:literal ..)], []) => {
        format!("{} ≥ {}", <$ty as $crate::config::keys::Toml>::type_label(), $lo)
    };
    (@label $ty:ty, [], [($lo:literal ..= $hi:expr)], []) => {
        format!("{} {}..={}", <$ty as $crate::config::keys::Toml>::type_label(), $lo, $hi)
    };

    (@default_doc $ty:ty, [$($word:ty)?], (required)) => { "required".to_owned() };
    (@default_doc $ty:ty, [$($word:ty)?], (none)) => { "none".to_owned() };
    (@default_doc $ty:ty, [$($word:ty)?], (computed $text:literal)) => { $text.to_owned() };
    (@default_doc $ty:ty, [], (empty $(, $note:literal)?)) => {
        format!(concat!("`{}`" $(, " (", $note, ")")?), <$ty as $crate::config::keys::Empty>::EMPTY)
    };
    (@default_doc $ty:ty, [$($word:ty)?], ($value:expr, $note:literal)) => {
        format!("{} ({})", config_table!(@default_doc $ty, [$($word)?], ($value)), $note)
    };
    (@default_doc $ty:ty, [$($word:ty)?], ($value:expr)) => {
        format!("`{}`", config_table!(@default_toml $ty, [$($word)?], ($value)).unwrap_or_default())
    };

    (@default_toml $ty:ty, [$($word:ty)?], (required)) => { None };
    (@default_toml $ty:ty, [$($word:ty)?], (none)) => { None };
    (@default_toml $ty:ty, [$($word:ty)?], (computed $text:literal)) => { None };
    (@default_toml $ty:ty, [], (empty $(, $note:literal)?)) => {
        Some(<$ty as $crate::config::keys::Empty>::EMPTY.to_owned())
    };
    (@default_toml $ty:ty, [$($word:ty)?], ($value:expr, $note:literal)) => {
        config_table!(@default_toml $ty, [$($word)?], ($value))
    };
    (@default_toml $ty:ty, [$word:ty], ($value:expr)) => {
        Some(format!("{:?}", $crate::config::vocabulary::Vocabulary::word($value)))
    };
    (@default_toml $ty:ty, [], ($value:expr)) => {
        Some(<$ty as $crate::config::keys::Toml>::toml(
            &$crate::config::keys::DefaultOf::<$ty>::value($value),
        ))
    };

    (@init []) => { $crate::config::keys::Init::Omit };
    (@init [(write)]) => { $crate::config::keys::Init::Write(None) };
    (@init [(write $comment:literal)]) => { $crate::config::keys::Init::Write(Some($comment)) };
    (@init [(preset)]) => { $crate::config::keys::Init::Preset };
    (@init [(commented $note:literal)]) => { $crate::config::keys::Init::Commented($note) };

    // Getters. A required key has none: its field is the value.
    (@getter $key:expr, $field:ident, $ty:ty, [$($word:ty)?], (required), $range:tt, $label:tt) => {};
    (@getter $key:expr, $field:ident, $ty:ty, [], (empty $(, $note:literal)?), $range:tt, $label:tt) => {
        #[doc = concat!("`", stringify!($field), "`, or its default.")]
        pub(crate) fn $field(&self) -> $ty {
            self.$field.clone().unwrap_or_default()
        }
    };
    (@getter $key:expr, $field:ident, $ty:ty, [$word:ty], ($value:expr $(, $note:literal)?), $range:tt, $label:tt) => {
        #[doc = concat!("`", stringify!($field), "`, or its default.\n\nErrors: a word outside the vocabulary.")]
        pub(crate) fn $field(&self) -> Result<$word, $crate::config::keys::Bad> {
            $crate::config::vocabulary::parse(self.$field.as_deref(), $value)
                .map_err(|e| ($key.to_owned(), e.to_string()))
        }
    };
    (@getter $key:expr, $field:ident, $ty:ty, [], (none), $range:tt, $label:tt) => {
        config_table!(@getter_option $key, $field, $ty, $range, $label);
    };
    (@getter $key:expr, $field:ident, $ty:ty, [], (computed $text:literal), $range:tt, $label:tt) => {
        config_table!(@getter_option $key, $field, $ty, $range, $label);
    };
    (@getter $key:expr, $field:ident, $ty:ty, [], ($value:expr $(, $note:literal)?), [$($range:tt)?], [$($label:literal)?]) => {
        #[doc = concat!("`", stringify!($field), "`, or its default.\n\nErrors: a value outside its range.")]
        pub(crate) fn $field(&self) -> Result<$ty, $crate::config::keys::Bad> {
            let value: $ty = match &self.$field {
                Some(v) => v.clone(),
                None => $crate::config::keys::DefaultOf::<$ty>::value($value),
            };
            config_table!(@check $key, $ty, value, [$($range)?], [$($label)?]);
            Ok(value)
        }
    };
    (@getter_option $key:expr, $field:ident, $ty:ty, [$($range:tt)?], [$($label:literal)?]) => {
        #[doc = concat!("`", stringify!($field), "`, `None` when absent.\n\nErrors: a value outside its range.")]
        pub(crate) fn $field(&self) -> Result<Option<$ty>, $crate::config::keys::Bad> {
            if let Some(value) = &self.$field {
                let value = value.clone();
                config_table!(@check $key, $ty, value, [$($range)?], [$($label)?]);
                let _ = value;
            }
            Ok(self.$field.clone())
        }
    };

    (@check $key:expr, $ty:ty, $value:ident, [], $label:tt) => {};
    (@check $key:expr, $ty:ty, $value:ident, [($lo:literal ..)], [$($label:literal)?]) => {
        if $value < $lo {
            return Err($crate::config::keys::out_of_range(
                $key,
                &$value,
                &config_table!(@label $ty, [], [($lo ..)], [$($label)?]),
            ));
        }
    };
    (@check $key:expr, $ty:ty, $value:ident, [($lo:literal ..= $hi:expr)], [$($label:literal)?]) => {
        if !($lo..=$hi).contains(&$value) {
            return Err($crate::config::keys::out_of_range(
                $key,
                &$value,
                &config_table!(@label $ty, [], [($lo ..= $hi)], [$($label)?]),
            ));
        }
    };
}

pub(crate) use config_table;

#[cfg(test)]
mod tests {
    use super::*;

    /// What the docs and `init` write reads back as the same value.
    #[test]
    fn toml_text_reads_back() {
        for text in [
            "\"type\":\"result\"",
            "\n\n",
            "a\\b\tc\u{1}",
            "~/.x/{project}",
        ] {
            let line = format!("x = {}", Toml::toml(&text.to_owned()));
            let table: toml::Table = toml::from_str(&line).unwrap();
            assert_eq!(table["x"].as_str(), Some(text), "{line}");
        }
        let list = vec!["a".to_owned(), "b\"".to_owned()];
        let table: toml::Table = toml::from_str(&format!("x = {}", list.toml())).unwrap();
        assert_eq!(table["x"].as_array().unwrap().len(), 2);
        assert_eq!(90.0f64.toml(), "90.0");
    }

    /// A top-level key (table `""`) is named without a dot; others keep their table.
    #[test]
    fn top_level_keys_have_no_prefix() {
        assert_eq!(dotted(".schema_version"), "schema_version");
        assert_eq!(dotted("runtime.round_budget_s"), "runtime.round_budget_s");
        let top = crate::config::TABLES
            .iter()
            .find(|t| t.name.is_empty())
            .unwrap();
        assert_eq!(top.keys[0].name, "schema_version");
        let check = crate::config::TABLES
            .iter()
            .find(|t| t.name == "goal.checks")
            .unwrap();
        assert!(check.keys.iter().any(|k| k.name == "goal.checks.timeout_s"));
    }
}
