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
//!   (`crate::runtime::cycle::config_follow`) come,
//! - when the table asks for it, the resolved struct the rest of the program reads
//!   (`RuntimeConfig`, …): one field per key, its doc made from the definition (doc line,
//!   default, range), and `resolve_with`, which fills each field from its getter (then
//!   the definition's `check` and conversion), taking what a resolver works out by hand
//!   (paths, values that depend on other keys) from the table's `…Hand` struct.
//!
//! Adding a key: one definition in its table's `config_table!` (`config/raw.rs`,
//! `monitor.rs`, `goal.rs`, `budget.rs`, `notify.rs`) and its use (`config.runtime.<key>`);
//! then
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
    // `resolved` and `extras` are read by the test that keeps each key declared once
    // (`no_key_is_declared_twice`).
    /// The resolved struct the definitions make (`VcsConfig`), if they make one.
    #[cfg_attr(not(test), allow(dead_code))]
    pub resolved: Option<&'static str>,
    /// That struct's fields written by hand: neither a key nor a key's value (e.g.
    /// whether a key was written at all), each with its doc.
    #[cfg_attr(not(test), allow(dead_code))]
    pub extras: &'static [Extra],
}

/// A field of a resolved struct that no definition makes (`(name, doc)`).
pub(crate) type Extra = (&'static str, &'static str);

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

/// How a definition's value becomes its resolved field (`into (field: Type = conversion)`):
/// the conversions a definition may name, each total.
pub(crate) mod convert {
    use std::time::Duration;

    /// The value as it is, under another field name.
    pub(crate) fn same<T>(value: T) -> T {
        value
    }

    /// Seconds as a [`Duration`].
    pub(crate) fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// Seconds, when given, as a [`Duration`].
    pub(crate) fn secs_opt(s: Option<u64>) -> Option<Duration> {
        s.map(Duration::from_secs)
    }

    /// Seconds as a [`Duration`], `0` meaning off (`None`).
    pub(crate) fn secs_or_off(s: u64) -> Option<Duration> {
        (s > 0).then(|| Duration::from_secs(s))
    }

    /// A count as `u32`, saturating.
    pub(crate) fn saturating_u32(n: u64) -> u32 {
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// A text, `None` when blank.
    pub(crate) fn non_blank(text: Option<String>) -> Option<String> {
        text.filter(|t| !t.trim().is_empty())
    }
}

/// The checks a definition may name (`check name`) beyond its type and range: each takes
/// the dotted key and the value. Errors: the key (with the entry's index for a list) and
/// what was expected.
pub(crate) mod check {
    use super::Bad;

    /// Every entry compiles as a Rust `regex`.
    pub(crate) fn regexes(key: &str, patterns: &[String]) -> Result<(), Bad> {
        for (i, pattern) in patterns.iter().enumerate() {
            if let Err(e) = regex::Regex::new(pattern) {
                return Err((
                    format!("{key}[{i}]"),
                    format!(
                        "{pattern:?} is not a valid regular expression: {}",
                        e.to_string().replace('\n', " ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every entry is a glob pattern.
    pub(crate) fn globs(key: &str, patterns: &[String]) -> Result<(), Bad> {
        for (i, pattern) in patterns.iter().enumerate() {
            if let Err(e) = glob::Pattern::new(pattern) {
                return Err((
                    format!("{key}[{i}]"),
                    format!("{pattern:?} is not a glob pattern: {e}"),
                ));
            }
        }
        Ok(())
    }

    /// A percentage in `[0, 100]`.
    pub(crate) fn percent(key: &str, v: &f64) -> Result<(), Bad> {
        percentage(key, *v, false)
    }

    /// A percentage in `(0, 100]`.
    pub(crate) fn positive_percent(key: &str, v: &f64) -> Result<(), Bad> {
        percentage(key, *v, true)
    }

    fn percentage(key: &str, v: f64, positive: bool) -> Result<(), Bad> {
        if v.is_finite() && v <= 100.0 && (v > 0.0 || (!positive && v == 0.0)) {
            return Ok(());
        }
        Err((
            key.to_owned(),
            format!(
                "{v} is out of range; expected a percentage {} 100",
                if positive { "in (0," } else { "in [0," }
            ),
        ))
    }

    /// A finite number above 0.
    pub(crate) fn positive(key: &str, v: &f64) -> Result<(), Bad> {
        if v.is_finite() && *v > 0.0 {
            return Ok(());
        }
        Err((key.to_owned(), format!("{v}: expected a positive number")))
    }

    /// TCP ports: none is 0.
    pub(crate) fn ports(key: &str, ports: &[u16]) -> Result<(), Bad> {
        if ports.contains(&0) {
            return Err((
                key.to_owned(),
                "0 is not a TCP port; expected integers in 1..=65535".into(),
            ));
        }
        Ok(())
    }

    /// Environment variable names: none empty or holding `=` or NUL.
    pub(crate) fn variable_names(key: &str, names: &[String]) -> Result<(), Bad> {
        match names
            .iter()
            .find(|n| n.is_empty() || n.contains(['=', '\0']))
        {
            Some(name) => Err((
                key.to_owned(),
                format!("{name:?} is not a variable name; expected names without `=` or NUL"),
            )),
            None => Ok(()),
        }
    }

    /// US dollars above 0, when given.
    pub(crate) fn dollars(key: &str, v: &Option<f64>) -> Result<(), Bad> {
        match v {
            Some(v) if !(v.is_finite() && *v > 0.0) => Err((
                key.to_owned(),
                format!("{v} is out of range; expected US dollars > 0"),
            )),
            _ => Ok(()),
        }
    }
}

/// One config table's definitions: the serde struct, its getters, its [`Key`] list and,
/// when asked, the resolved struct (module docs). Each key:
///
/// ```text
/// /// doc line (docs/configuration.md's "meaning", and the resolved field's doc)
/// name: Type [as Word] = (default) [range(lo..) | range(lo..=hi)] [label "docs type"]
///     [check name] reload Next|Boot|Restart [init (write [“comment”]) | (preset) | (commented “note”)]
///     [into (field: Type = conversion) | (field: Type = hand) | (hand)];
/// ```
///
/// `(default)` is `(value)`, `(value, "note")`, `(none)`: absent means off,
/// `(computed "text")`: worked out where the key is used, `(empty)`: `[]` / `{}`,
/// or `(required)`. `as Word`: the file holds a string of the vocabulary `Word`
/// (`config::vocabulary`); the getter returns the word. `check name`: a rule of
/// [`check`] the value must also meet. Sub-tables that are no keys follow
/// as `@sub name: Type;` (`#[serde(default)]`: a table, an `Option` of one, or a `Vec` of
/// an array of tables such as `[[goal.checks]]`, whose entries are a table of their own,
/// named `goal.checks`), then fields that are neither, written as they are with their
/// attributes, as `@field name: Type;` (a required table, or one filled by hand under
/// `#[serde(skip)]`), the attributes after `@field`. Table `""` is the file's top level: its keys have no prefix.
///
/// After the table, `=> #[derive(…)] pub struct XConfig by XHand { extra: Type, … }`
/// makes the resolved struct: one field per key, its doc the key's doc line, default and
/// range. Without `into`, the field is named and typed as the getter returns it (the
/// word, `Option<T>` for `(none)` and `(computed …)`) and filled by it (then `check`);
/// `into (field: Type = conversion)` renames it and passes the value through a
/// [`convert`] function; `into (field: Type = hand)` leaves the value to a hand-written
/// resolver, which hands it over in `XHand`; `into (hand)` makes no field (the value is
/// folded into another, or only checked). The `extra` fields are no key's (docs say what
/// they hold, never a default: a test checks); the resolver hands them over too.
/// `raw.resolve_with(XHand { … })` checks every other key and builds the struct.
macro_rules! config_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident = $table:literal {
            $(
                $(#[doc = $doc:literal])*
                $field:ident : $ty:ty $(as $word:ty)? = $default:tt
                    $(range $range:tt)? $(label $label:literal)? $(check $check:ident)?
                    reload $reload:ident $(init $init:tt)? $(into $into:tt)? ;
            )*
            $( @sub $sub:ident : $subty:ty ; )*
            $( @field $(#[$fmeta:meta])* $plain:ident : $plainty:ty ; )*
        }
        $($resolved:tt)*
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
                resolved: Self::RESOLVED,
                extras: Self::EXTRAS,
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

        config_table!(@resolved $table, $name, raw, hand,
            [$( [$field, $ty, [$($word)?], $default, [$($range)?], [$($check)?], [$($doc),*], [$($into)?]] )*]
            $($resolved)*);
    };

    // The resolved struct: none asked for.
    (@resolved $table:literal, $name:ident, $raw:ident, $hand:ident, $rows:tt) => {
        #[allow(dead_code)]
        impl $name {
            /// No resolved struct is made from this table.
            pub(crate) const RESOLVED: Option<&'static str> = None;
            /// No resolved struct, no hand-written fields.
            pub(crate) const EXTRAS: &'static [$crate::config::keys::Extra] = &[];
        }
    };
    (@resolved $table:literal, $name:ident, $raw:ident, $hand:ident, $rows:tt
        => $(#[$rmeta:meta])* $rvis:vis struct $rname:ident by $handty:ident {
            $( $(#[doc = $edoc:literal])* $extra:ident : $extraty:ty ),* $(,)?
        }
    ) => {
        config_table!(@munch {$table $raw $hand}
            {[$(#[$rmeta])*] [$rvis] $name $rname $handty [$( [$(#[doc = $edoc])*] $extra : $extraty ; )*]}
            $rows [] [] []);
    };

    // One row at a time: its field, its hand-over, its initializer.
    (@munch {$table:literal $raw:ident $hand:ident} $out:tt
        [[$field:ident, $ty:ty, $word:tt, $default:tt, $range:tt, $check:tt, $docs:tt, []] $($rest:tt)*]
        [$($fields:tt)*] [$($hands:tt)*] [$($inits:tt)*]
    ) => {
        config_table!(@munch {$table $raw $hand} $out [$($rest)*]
            [$($fields)*
                #[doc = config_table!(@rdoc $table, $field, $default, $range, $docs)]
                pub $field: config_table!(@rty $ty, $word, $default),]
            [$($hands)*]
            [$($inits)* $field: config_table!(@rvalue $table, $raw, $field, $word, $default, $check),]);
    };
    (@munch {$table:literal $raw:ident $hand:ident} $out:tt
        [[$field:ident, $ty:ty, $word:tt, $default:tt, $range:tt, $check:tt, $docs:tt, [(hand)]] $($rest:tt)*]
        $fields:tt $hands:tt $inits:tt
    ) => {
        config_table!(@munch {$table $raw $hand} $out [$($rest)*] $fields $hands $inits);
    };
    (@munch {$table:literal $raw:ident $hand:ident} $out:tt
        [[$field:ident, $ty:ty, $word:tt, $default:tt, $range:tt, $check:tt, $docs:tt, [($r:ident : $rty:ty = hand)]] $($rest:tt)*]
        [$($fields:tt)*] [$($hands:tt)*] [$($inits:tt)*]
    ) => {
        config_table!(@munch {$table $raw $hand} $out [$($rest)*]
            [$($fields)*
                #[doc = config_table!(@rdoc $table, $field, $default, $range, $docs)]
                pub $r: $rty,]
            [$($hands)*
                #[doc = concat!("`", $table, ".", stringify!($field), "`, resolved by hand.")]
                pub $r: $rty,]
            [$($inits)* $r: $hand.$r,]);
    };
    (@munch {$table:literal $raw:ident $hand:ident} $out:tt
        [[$field:ident, $ty:ty, $word:tt, $default:tt, $range:tt, $check:tt, $docs:tt, [($r:ident : $rty:ty = $conv:ident)]] $($rest:tt)*]
        [$($fields:tt)*] [$($hands:tt)*] [$($inits:tt)*]
    ) => {
        config_table!(@munch {$table $raw $hand} $out [$($rest)*]
            [$($fields)*
                #[doc = config_table!(@rdoc $table, $field, $default, $range, $docs)]
                pub $r: $rty,]
            [$($hands)*]
            [$($inits)* $r: $crate::config::keys::convert::$conv(
                config_table!(@rvalue $table, $raw, $field, $word, $default, $check)),]);
    };
    (@munch {$table:literal $raw:ident $hand:ident}
        {[$(#[$rmeta:meta])*] [$rvis:vis] $name:ident $rname:ident $handty:ident
            [$( [$(#[doc = $edoc:literal])*] $extra:ident : $extraty:ty ; )*]}
        [] [$($fields:tt)*] [$($hands:tt)*] [$($inits:tt)*]
    ) => {
        $(#[$rmeta])*
        $rvis struct $rname {
            $($fields)*
            $(
                $(#[doc = $edoc])*
                pub $extra: $extraty,
            )*
        }

        #[doc = concat!("What the hand-written resolver hands over to [`", stringify!($name),
            "::resolve_with`]: the keys resolved by hand and the fields that are no key's.")]
        pub(super) struct $handty {
            $($hands)*
            $(
                $(#[doc = $edoc])*
                pub $extra: $extraty,
            )*
        }

        #[allow(dead_code)]
        impl $name {
            #[doc = concat!("The resolved struct made from this table: `", stringify!($rname), "`.")]
            pub(crate) const RESOLVED: Option<&'static str> = Some(stringify!($rname));
            #[doc = concat!("`", stringify!($rname), "`'s fields that are no key's.")]
            pub(crate) const EXTRAS: &'static [$crate::config::keys::Extra] =
                &[$( (stringify!($extra), concat!($($edoc),*)) ),*];

            #[doc = concat!("`", stringify!($rname), "`: every key not resolved by hand read (its default filled, its range and check met) and converted; the rest from `",
                stringify!($handty), "`.\n\nErrors: the first bad key, dotted, and what was expected.")]
            #[allow(unused_variables, clippy::redundant_field_names)]
            pub(super) fn resolve_with(&self, $hand: $handty) -> Result<$rname, $crate::config::keys::Bad> {
                let $raw = self;
                Ok($rname {
                    $($inits)*
                    $( $extra: $hand.$extra, )*
                })
            }
        }
    };

    // A resolved field's type, as its getter returns it.
    (@rty $ty:ty, [$word:ty], $default:tt) => { $word };
    (@rty $ty:ty, [], (required)) => { $ty };
    (@rty $ty:ty, [], (none)) => { Option<$ty> };
    (@rty $ty:ty, [], (computed $text:literal)) => { Option<$ty> };
    (@rty $ty:ty, [], $default:tt) => { $ty };

    // A resolved field's value: the getter's (the field itself for a required key), checked.
    (@rvalue $table:literal, $raw:ident, $field:ident, $word:tt, $default:tt, [$($check:ident)?]) => {{
        let value = config_table!(@get $raw, $field, $word, $default);
        $(
            $crate::config::keys::check::$check(
                $crate::config::keys::dotted(concat!($table, ".", stringify!($field))),
                &value,
            )?;
        )?
        value
    }};
    (@get $raw:ident, $field:ident, [], (required)) => { $raw.$field.clone() };
    (@get $raw:ident, $field:ident, [], (empty $(, $note:literal)?)) => { $raw.$field() };
    (@get $raw:ident, $field:ident, $word:tt, $default:tt) => { $raw.$field()? };

    // A resolved field's doc: the key, its doc line, its default and range.
    (@rdoc $table:literal, $field:ident, $default:tt, [$($range:tt)?], [$($doc:literal),*]) => {
        concat!(
            "`", $table, ".", stringify!($field), "`:", $($doc, "\n",)* "\n",
            config_table!(@rdefault $default),
            $(" Range: `", stringify! $range, "`.",)?
        )
    };
    (@rdefault (required)) => { "Required." };
    (@rdefault (none)) => { "Absent: off." };
    (@rdefault (computed $text:literal)) => { concat!("Default: ", $text, ".") };
    (@rdefault (empty)) => { "Default: empty." };
    (@rdefault (empty, $note:literal)) => { concat!("Default: empty (", $note, ").") };
    (@rdefault ($value:expr, $note:literal)) => {
        concat!("Default: `", stringify!($value), "` (", $note, ").")
    };
    (@rdefault ($value:expr)) => { concat!("Default: `", stringify!($value), "`.") };

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

    /// Tables whose keys are resolved by hand alone (no struct made from the definitions),
    /// and why.
    const RESOLVED_BY_HAND: &[(&str, &str)] = &[
        (
            "",
            "schema_version is only checked; the other top-level entries are tables",
        ),
        (
            "schedule",
            "windows and zones parsed into `Schedule`, shared with phases",
        ),
        (
            "phases.<name>",
            "overrides of other tables' keys, merged per phase",
        ),
        (
            "budget.prices.<model>",
            "a price row shared with the built-in table",
        ),
        ("telemetry", "one endpoint from the key or the environment"),
        (
            "notify.webhooks",
            "one URL source from two exclusive keys, a secret",
        ),
    ];

    /// A key is declared once, in its definition: a resolved struct's field is made from
    /// it. A field written by hand beside them (an extra) that is named as a key of its
    /// table, or whose doc states a default, would be the key's second declaration; a
    /// table without a resolved struct must say why.
    #[test]
    fn no_key_is_declared_twice() {
        for table in crate::config::TABLES {
            for (field, doc) in table.extras {
                let is_key = table.keys.iter().any(|k| {
                    k.field == *field
                        || k.field.strip_suffix("_s") == Some(*field)
                        || k.field.strip_suffix("_ms") == Some(*field)
                });
                assert!(
                    !is_key,
                    "{:?}: field `{field}` is written by hand but holds the key of that name; \
                     give the key's definition `into (…)` instead",
                    table.resolved
                );
                assert!(
                    !doc.to_lowercase().contains("default"),
                    "{:?}: the hand-written doc of `{field}` states a default; defaults live \
                     in the definitions: {doc}",
                    table.resolved
                );
            }
            let by_hand = RESOLVED_BY_HAND.iter().any(|(name, _)| *name == table.name);
            assert_eq!(
                table.resolved.is_none(),
                by_hand,
                "table {:?}: either its definitions make a resolved struct (`=> … struct … by …`) \
                 or RESOLVED_BY_HAND says why not",
                table.name
            );
        }
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
