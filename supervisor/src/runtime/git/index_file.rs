//! The index, read in process for what `git status` cannot tell: which entries carry a
//! flag that makes git skip comparing them with the file (`assume-unchanged`,
//! `skip-worktree`: set by `git update-index`, they hide a changed file from every
//! `git status`), and which are gitlinks (a nested repository the operator's `git status`
//! recurses into). docs/security.md, "What runs later: the watched tier".
//!
//! The format is git's (`gitformat-index(5)`): a `DIRC` header with the version (2, 3 or
//! 4) and the entry count; each entry's stat data, mode, object name (20 bytes for
//! SHA-1, 32 for SHA-256), 16-bit flags (`0x8000` assume-valid, `0x4000` extended), in
//! versions 3 and 4 a second 16-bit word when extended (`0x4000` skip-worktree), then the
//! path (versions 2 and 3: NUL-terminated and padded to a multiple of 8 bytes; version 4:
//! a varint of bytes dropped from the previous path, then the NUL-terminated rest);
//! extensions; the checksum. The object name's length is the one whose parse ends exactly
//! at the checksum, and a short name's length in the flags must be the path's (git reads
//! the name by that length: bytes after it would make git and this reader see two paths).
//! An index with an offset table (`IEOT`/`EOIE`: entries git's threaded read may take from
//! elsewhere) is [`OFFSET_TABLE`]: the caller has git rewrite it without one. A split
//! index (the `link` extension: entries live in a second file) or a sparse one (`sdir`:
//! directories stand for their files) is not read here: [`Unread`], and the caller asks git
//! (`git ls-files -v -s -z`, [`Marks::listed`]).

use std::collections::BTreeSet;

/// What the index marks, paths as bytes from the repository's top.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    /// Entries git does not compare with the file: `assume-unchanged` or `skip-worktree`.
    pub hidden: BTreeSet<Vec<u8>>,
    /// Gitlinks (mode `160000`): nested repositories, submodules among them.
    pub gitlinks: BTreeSet<Vec<u8>>,
}

/// Why an index was not read in process: the caller asks git instead.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unread(pub &'static str);

/// An offset table (`IEOT`, with `EOIE`): git's threaded read (`index.threads`, or on its
/// own with 3 CPUs and a large index) loads the entries from the offsets it names, which
/// may hold other entries than the ones read in order here. The caller has git write the
/// index again without it, read in order, then reads that.
pub(crate) const OFFSET_TABLE: Unread =
    Unread("an offset table (`IEOT`): git's threaded read may see other entries");

/// Entries or extensions that do not end exactly at the checksum: truncated, damaged, or
/// read with the wrong object-name length.
pub(crate) const MALFORMED: Unread = Unread("malformed: its entries do not end at its checksum");

/// The largest index read in process ([`read_file`]); a larger one is left to git. 256
/// MiB: an index of several million entries.
const MAX_BYTES: u64 = 256 << 20;

/// The marks of the index file at `path` (none when there is none): never read through a
/// link or from a FIFO ([`crate::tree_file::open_regular`]), at most [`MAX_BYTES`]. Errors:
/// why it was not read in process ([`Marks::read`]'s, or that it could not be opened as a
/// regular file or is larger).
pub(crate) fn read_file(path: &std::path::Path) -> Result<Marks, Unread> {
    use crate::tree_file::{read_regular_at_most, Symlink};
    match read_regular_at_most(path, Symlink::Refuse, MAX_BYTES) {
        Ok(None) => Ok(Marks::default()),
        Ok(Some(bytes)) => Marks::read(&bytes),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            Err(Unread("larger than 256 MiB"))
        }
        Err(_) => Err(Unread(
            "not a regular file that can be opened (a link, a FIFO…)",
        )),
    }
}

const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const SKIP_WORKTREE: u16 = 0x4000;
const NAME_MASK: u16 = 0x0fff;
const GITLINK: u32 = 0o160000;
const TYPE_MASK: u32 = 0o170000;
/// Stat data (ten 32-bit fields) before the object name.
const STAT_LEN: usize = 40;

impl Marks {
    /// The marks of the index file's bytes `index` (empty bytes: no index yet, nothing
    /// marked).
    pub(crate) fn read(index: &[u8]) -> Result<Marks, Unread> {
        if index.is_empty() {
            return Ok(Marks::default());
        }
        // The SHA-1 parse of a SHA-256 index runs off its entries: then the other.
        match parse(index, 20) {
            Err(MALFORMED) => parse(index, 32),
            read => read,
        }
    }

    /// The marks of `git ls-files -v -s -z`'s output (`<tag> <mode> <object> <stage>\t<path>`
    /// NUL-separated; a lowercase tag is `assume-unchanged`, `S`/`s` `skip-worktree`).
    pub(crate) fn listed(out: &[u8]) -> Marks {
        let mut marks = Marks::default();
        for line in out.split(|b| *b == 0).filter(|l| !l.is_empty()) {
            let Some(tab) = line.iter().position(|b| *b == b'\t') else {
                continue;
            };
            let (head, path) = (&line[..tab], line[tab + 1..].to_vec());
            let mut fields = head.split(|b| *b == b' ');
            let (Some(tag), Some(mode)) = (fields.next(), fields.next()) else {
                continue;
            };
            if tag
                .first()
                .is_some_and(|t| t.is_ascii_lowercase() || *t == b'S')
            {
                marks.hidden.insert(path.clone());
            }
            if mode == b"160000" {
                marks.gitlinks.insert(path);
            }
        }
        marks
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

/// git's offset varint (version 4's prefix length): 7 bits a byte, each continuation
/// adding one before the shift. The value and the bytes it took.
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value: usize = 0;
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            value = value.checked_add(1)?.checked_mul(128)?;
        }
        value |= usize::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
        if i >= 9 {
            return None;
        }
    }
    None
}

fn parse(index: &[u8], hash_len: usize) -> Result<Marks, Unread> {
    if index.get(..4) != Some(b"DIRC") {
        return Err(Unread("not an index file"));
    }
    let version = u32_at(index, 4).ok_or(Unread("not an index file"))?;
    if !(2..=4).contains(&version) {
        return Err(Unread("an index version other than 2, 3 or 4"));
    }
    let count = u32_at(index, 8).ok_or(Unread("not an index file"))?;
    let end = index.len().checked_sub(hash_len).ok_or(MALFORMED)?;
    let mut at = 12;
    let mut marks = Marks::default();
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = u32_at(index, start + 24).ok_or(MALFORMED)?;
        let flags_at = start + STAT_LEN + hash_len;
        let flags = u16_at(index, flags_at).ok_or(MALFORMED)?;
        let mut name_at = flags_at + 2;
        let mut skip_worktree = false;
        if flags & EXTENDED != 0 {
            if version < 3 {
                return Err(MALFORMED);
            }
            let extended = u16_at(index, name_at).ok_or(MALFORMED)?;
            skip_worktree = extended & SKIP_WORKTREE != 0;
            name_at += 2;
        }
        let path = if version == 4 {
            let (drop, took) =
                varint(index.get(name_at..end).ok_or(MALFORMED)?).ok_or(MALFORMED)?;
            let rest_at = name_at + took;
            let nul = index
                .get(rest_at..end)
                .and_then(|r| r.iter().position(|b| *b == 0))
                .ok_or(MALFORMED)?;
            let kept = previous.len().checked_sub(drop).ok_or(MALFORMED)?;
            let mut path = previous[..kept].to_vec();
            path.extend_from_slice(&index[rest_at..rest_at + nul]);
            at = rest_at + nul + 1;
            // git takes a short name's length from the flags, not from the NUL: bytes
            // between the two would make git read another path than this reader.
            let short = usize::from(flags & NAME_MASK);
            if short != usize::from(NAME_MASK) && short != path.len() {
                return Err(MALFORMED);
            }
            path
        } else {
            let nul = index
                .get(name_at..end)
                .and_then(|r| r.iter().position(|b| *b == 0))
                .ok_or(MALFORMED)?;
            let short = usize::from(flags & NAME_MASK);
            if short != usize::from(NAME_MASK) && short != nul {
                return Err(MALFORMED);
            }
            // 1 to 8 NULs, the entry a multiple of 8 bytes long.
            let len = name_at - start + nul;
            at = start + (len + 8) / 8 * 8;
            index[name_at..name_at + nul].to_vec()
        };
        if at > end {
            return Err(MALFORMED);
        }
        if flags & ASSUME_VALID != 0 || skip_worktree {
            marks.hidden.insert(path.clone());
        }
        if mode & TYPE_MASK == GITLINK {
            marks.gitlinks.insert(path.clone());
        }
        previous = path;
    }
    let mut unread = None;
    while at < end {
        let signature = index.get(at..at + 4).ok_or(MALFORMED)?;
        let size = u32_at(index, at + 4).ok_or(MALFORMED)? as usize;
        match signature {
            b"IEOT" | b"EOIE" => unread = Some(OFFSET_TABLE),
            b"link" => unread = unread.or(Some(Unread("a split index (`core.splitIndex`)"))),
            b"sdir" => unread = unread.or(Some(Unread("a sparse index (`index.sparse`)"))),
            _ => {}
        }
        at = at
            .checked_add(8)
            .and_then(|a| a.checked_add(size))
            .ok_or(MALFORMED)?;
    }
    if at != end {
        return Err(MALFORMED);
    }
    match unread {
        Some(why) => Err(why),
        None => Ok(marks),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::runtime::git::test_git as git;

    /// A repository with a gitlink, an `assume-unchanged` file, a `skip-worktree` file and
    /// a plain one, in `format` with index `version`.
    fn repository(format: &str, version: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        git(p, &["init", "-q", &format!("--object-format={format}")]);
        std::fs::create_dir_all(p.join(".vscode")).unwrap();
        std::fs::write(p.join(".vscode/tasks.json"), "{}").unwrap();
        std::fs::write(p.join("a-long-name-shared-with-the-next"), "a").unwrap();
        std::fs::write(p.join("a-long-name-shared-with-the-other"), "b").unwrap();
        std::fs::create_dir(p.join("nested")).unwrap();
        git(
            &p.join("nested"),
            &["init", "-q", &format!("--object-format={format}")],
        );
        git(
            &p.join("nested"),
            &["commit", "-q", "--allow-empty", "-m", "n"],
        );
        git(p, &["add", "."]);
        git(p, &["commit", "-q", "-m", "i"]);
        git(
            p,
            &["update-index", "--skip-worktree", ".vscode/tasks.json"],
        );
        git(
            p,
            &[
                "update-index",
                "--assume-unchanged",
                "a-long-name-shared-with-the-next",
            ],
        );
        git(p, &["update-index", "--index-version", version]);
        dir
    }

    #[test]
    fn each_version_and_object_format_reads_as_git_lists_it() {
        for format in ["sha1", "sha256"] {
            for version in ["2", "3", "4"] {
                let dir = repository(format, version);
                let index = std::fs::read(dir.path().join(".git/index")).unwrap();
                let read = Marks::read(&index);
                let listed = Marks::listed(&git(dir.path(), &["ls-files", "-v", "-s", "-z"]));
                assert_eq!(read.as_ref(), Ok(&listed), "{format} v{version}");
                assert_eq!(
                    listed.hidden,
                    BTreeSet::from([
                        b".vscode/tasks.json".to_vec(),
                        b"a-long-name-shared-with-the-next".to_vec()
                    ]),
                    "{format} v{version}"
                );
                assert_eq!(listed.gitlinks, BTreeSet::from([b"nested".to_vec()]));
            }
        }
    }

    #[test]
    fn a_name_longer_than_its_flags_say_or_an_offset_table_is_not_taken() {
        let dir = repository("sha1", "4");
        let index = std::fs::read(dir.path().join(".git/index")).unwrap();
        assert!(Marks::read(&index).is_ok());
        // The last entry's name, `nested`, given two more bytes than its flags say (git
        // reads `nested`; a reader going to the NUL would read `nestedQQ`).
        let end = index.len() - 20;
        let name_end = index[..end]
            .windows(7)
            .rposition(|w| w == b"nested\0")
            .unwrap()
            + 6;
        let mut forged = index[..name_end].to_vec();
        forged.extend_from_slice(b"QQ");
        forged.extend_from_slice(&index[name_end..end]);
        forged.extend_from_slice(&[0; 20]);
        assert_eq!(Marks::read(&forged), Err(MALFORMED));

        let dir = repository("sha1", "2");
        git(
            dir.path(),
            &[
                "-c",
                "index.threads=2",
                "-c",
                "index.recordOffsetTable=true",
                "update-index",
                "--force-write-index",
            ],
        );
        let index = std::fs::read(dir.path().join(".git/index")).unwrap();
        assert_eq!(Marks::read(&index), Err(OFFSET_TABLE));
    }

    #[test]
    fn a_split_or_damaged_index_is_left_to_git() {
        let dir = repository("sha1", "2");
        let index = std::fs::read(dir.path().join(".git/index")).unwrap();
        assert_eq!(Marks::read(&index[..index.len() - 7]), Err(MALFORMED));
        assert_eq!(
            Marks::read(b"DIRX\0\0\0\x02"),
            Err(Unread("not an index file"))
        );
        assert_eq!(Marks::read(b""), Ok(Marks::default()));
        git(dir.path(), &["update-index", "--split-index"]);
        let index = std::fs::read(dir.path().join(".git/index")).unwrap();
        assert_eq!(
            Marks::read(&index),
            Err(Unread("a split index (`core.splitIndex`)"))
        );
    }
}
