//! The git config keys that make git run a program, move the work tree or read more
//! config: reviewed data, one row per key with its why (docs/security.md, "What runs
//! later: the watched tier"). Two rules read it:
//!
//! - the supervisor's own git overrides every [`Effect::Runs`] and [`Effect::Shapes`] key
//!   the repository's config sets ([`overridden`], used by
//!   [`crate::runtime::git::repo::program_overrides`]);
//! - after a round, a key of the repository's config the round added or changed is
//!   reverted when its row's effect is anything but [`Effect::Shapes`] ([`watched`],
//!   used by [`crate::runtime::git::config_watch`]).
//!
//! Keys are matched as `git config --list` prints them: section and name in lower case,
//! a subsection as written (it may hold dots).

/// What setting a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Names a program (or shell command) git runs by itself during ordinary commands
    /// (`status`, `diff`, `commit`, `fetch`, `push`, `log`): overridden in the supervisor's
    /// git and reverted after a round.
    Runs,
    /// Names a program that only commands the supervisor's git never runs start (`fetch`
    /// and `push` through a remote helper, `send-email`, `help`, an alias, `submodule
    /// update`, `add -p`): reverted after a round, not overridden.
    OnCall,
    /// Moves the work tree or the repository git works on: reverted after a round (the
    /// supervisor's git is pinned to the repository found at boot and ignores them).
    Moves,
    /// Makes git read another config file: reverted after a round (the file may set any
    /// key of this list).
    Includes,
    /// Opens a transport that runs a command (`ext::`): reverted after a round.
    Enables,
    /// Chooses whether and with which key commits and tags are signed: reverted after a
    /// round, before the supervisor's own commit (which would sign the agent's work with
    /// the key the agent named, one it cannot read itself).
    Signs,
    /// Shapes how a program of this list is called, runs nothing by itself: overridden in
    /// the supervisor's git, not reverted.
    Shapes,
    /// Hides a change from `git status` (a file git stops comparing with the index, an
    /// untracked file it stops listing, a submodule's move): overridden in the supervisor's
    /// git (with the operator's value, else git's default) and reverted after a round, so
    /// neither the supervisor's look at the tree nor the operator's next `git status` misses
    /// what the round changed.
    Hides,
}

/// One reviewed key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key {
    /// The key: `section.name`, or `section.<sub>.name` for any subsection; a name `*`
    /// is any name, with or without a subsection.
    pub key: &'static str,
    /// Which values count.
    pub values: Values,
    /// What it does.
    pub effect: Effect,
    /// Why it is listed: what it runs or moves.
    pub why: &'static str,
}

/// Which values of a key count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Values {
    /// Any value.
    Any,
    /// A shell command: a value starting with `!`.
    Command,
    /// git's boolean true (`true`, `yes`, `on` in any case, any nonzero integer; a key
    /// without a value).
    True,
    /// A URL or a path rather than a remote's name: a value with a `/` or `:`, or one
    /// starting with `.` or `~`.
    NotAName,
}

const fn key(key: &'static str, effect: Effect, why: &'static str) -> Key {
    Key {
        key,
        values: Values::Any,
        effect,
        why,
    }
}

use Effect::{Enables, Hides, Includes, Moves, OnCall, Runs, Shapes, Signs};

/// The reviewed keys (git 2.47's `git help --config`, every key naming a program, a
/// command, a hook, a config file or the work tree).
pub(crate) const KEYS: &[Key] = &[
    key("core.fsmonitor", Runs, "a hook program (or git's own daemon) started by every command that reads the index, `git status` first"),
    key("core.hookspath", Runs, "where git looks for hooks: a directory the agent fills runs at the next commit, checkout, merge or push"),
    key("core.pager", Runs, "the pager every paged command (`log`, `diff`, `show`) pipes its output to"),
    key("core.editor", Runs, "the editor `commit`, `tag`, `rebase -i` start"),
    key("core.askpass", Runs, "the program asked for credentials on fetch and push"),
    key("core.sshcommand", Runs, "the command run instead of `ssh` on every fetch and push over ssh"),
    key("core.gitproxy", Runs, "the command run to connect over the git:// protocol"),
    key("core.alternaterefscommand", Runs, "a command run to list an alternate's refs on fetch and push"),
    key("sequence.editor", Runs, "the editor of `rebase -i`'s todo list"),
    key("pager.*", Runs, "a per-command pager, or a command for one command's output"),
    key("credential.helper", Runs, "a helper run on every authenticated fetch and push (a value starting with `!` is a shell command); it also receives the credentials"),
    key("credential.<url>.helper", Runs, "the same, for one URL"),
    key("gpg.program", Runs, "the signing program run by a signed commit or tag, and by `log --show-signature`"),
    key("gpg.<format>.program", Runs, "the signing program of one format (`openpgp`, `x509`, `ssh`)"),
    key("gpg.ssh.defaultkeycommand", Runs, "a command run to find the signing key when `user.signingKey` is unset"),
    key("diff.external", Runs, "the program every `git diff` runs instead of its own"),
    key("diff.<driver>.command", Runs, "a diff driver's program, run by `diff` for the paths `.gitattributes` gives it"),
    key("diff.<driver>.textconv", Runs, "a program converting a file to text, run by `diff`, `log -p`, `blame`"),
    key("merge.<driver>.driver", Runs, "a merge driver's command, run by `merge`, `rebase`, `cherry-pick`, `stash pop`"),
    key("filter.<driver>.clean", Runs, "a clean filter, run by `add`, `status` and `commit` on the paths `.gitattributes` gives it"),
    key("filter.<driver>.smudge", Runs, "a smudge filter, run by `checkout`, `switch`, `reset`, `stash pop`"),
    key("filter.<driver>.process", Runs, "a long-running filter process, run as clean and smudge are"),
    key("uploadpack.packobjectshook", Runs, "a command run instead of `pack-objects` when this repository serves a fetch"),
    key("remote.<name>.uploadpack", Runs, "the program run on the remote side (for a local path: on this machine) by fetch"),
    key("remote.<name>.receivepack", Runs, "the program run on the remote side (for a local path: on this machine) by push"),
    key("remote.<name>.url", OnCall, "where the operator's next fetch and push go: a repository of the agent's (in the tree, or reached through `/proc/self/cwd`, a link, a path git resolves otherwise) runs its hooks (`pre-receive`, `update`, `post-receive`) with the operator's rights; any value the round added or changed is reverted"),
    key("remote.<name>.pushurl", OnCall, "the same, for push only"),
    key("remote.pushdefault", OnCall, "the remote (a name, or a URL or path taken as one) every push goes to"),
    key("branch.<name>.pushremote", OnCall, "the same, for one branch"),
    Key {
        key: "branch.<name>.remote",
        values: Values::NotAName,
        effect: OnCall,
        why: "a URL or path here (not a remote's name) is where the branch's fetch and push go",
    },
    key("url.<base>.insteadof", OnCall, "rewrites every fetch and push URL starting with the value to `<base>`: the operator's push goes to a repository of the agent's choosing, whose hooks run when it is on this machine"),
    key("url.<base>.pushinsteadof", OnCall, "the same, for push only"),
    key("remote.<name>.vcs", OnCall, "makes fetch and push (never run by the supervisor's git) start the remote helper `git-remote-<vcs>` found on `PATH`"),
    key("trailer.<token>.command", Runs, "a shell command run by `interpret-trailers` and `commit --trailer`"),
    key("trailer.<token>.cmd", Runs, "the same, newer spelling"),
    key("mergetool.<tool>.cmd", Runs, "the command `git mergetool` runs"),
    key("mergetool.<tool>.path", Runs, "the program `git mergetool` runs for a known tool"),
    key("difftool.<tool>.cmd", Runs, "the command `git difftool` runs"),
    key("difftool.<tool>.path", Runs, "the program `git difftool` runs for a known tool"),
    key("gc.recentobjectshook", Runs, "a command run by `gc` and `repack` (git's automatic gc after a commit included)"),
    key("interactive.difffilter", OnCall, "a program `add -p` pipes each hunk through"),
    key("alias.*", OnCall, "an alias starting with `!` is a shell command; any other can carry `-c <key>=<program>` and runs when the operator types it"),
    key("web.browser", OnCall, "the browser `git web--browse` (`help --web`, `instaweb`) starts"),
    key("browser.<tool>.cmd", OnCall, "the command run for that browser"),
    key("browser.<tool>.path", OnCall, "the program run for that browser"),
    key("help.browser", OnCall, "the browser `git help --web` starts"),
    key("man.viewer", OnCall, "the viewer `git help` starts"),
    key("man.<tool>.cmd", OnCall, "the command run for that viewer"),
    key("man.<tool>.path", OnCall, "the program run for that viewer"),
    key("instaweb.httpd", OnCall, "the web server `git instaweb` starts"),
    key("instaweb.browser", OnCall, "the browser `git instaweb` starts"),
    key("guitool.<name>.cmd", OnCall, "a command `git gui` and `gitk` offer in their menus"),
    key("sendemail.sendmailcmd", OnCall, "the command `git send-email` sends through"),
    key("sendemail.smtpserver", OnCall, "an absolute path here is a sendmail program `git send-email` runs"),
    key("sendemail.tocmd", OnCall, "a command `git send-email` runs per patch"),
    key("sendemail.cccmd", OnCall, "a command `git send-email` runs per patch"),
    key("sendemail.headercmd", OnCall, "a command `git send-email` runs per patch"),
    key("sendemail.<identity>.sendmailcmd", OnCall, "the same as `sendemail.sendmailcmd`, for one identity (`sendemail.identity` or `--identity` picks it)"),
    key("sendemail.<identity>.smtpserver", OnCall, "the same as `sendemail.smtpserver`, for one identity"),
    key("sendemail.<identity>.tocmd", OnCall, "the same as `sendemail.tocmd`, for one identity"),
    key("sendemail.<identity>.cccmd", OnCall, "the same as `sendemail.cccmd`, for one identity"),
    key("sendemail.<identity>.headercmd", OnCall, "the same as `sendemail.headercmd`, for one identity"),
    key("imap.tunnel", OnCall, "the command `git imap-send` connects through"),
    key("lfs.customtransfer.<name>.path", Runs, "a custom transfer agent git-lfs runs to move LFS objects: started by the operator's (or the supervisor's) git through the LFS filter of the global config on checkout, and on fetch and push"),
    key("http.cookiefile", OnCall, "with `http.saveCookies`, the file the operator's next https fetch or push writes its cookies to: any file the operator can write"),
    key("http.<url>.cookiefile", OnCall, "the same, for one URL"),
    key("tar.<format>.command", OnCall, "a shell command `git archive` pipes its tar output through for that format (`-o release.tgz` picks `tgz` by the name)"),
    Key {
        key: "submodule.<name>.update",
        values: Values::Command,
        effect: OnCall,
        why: "`!<command>`: the shell command `git submodule update` runs in the submodule (only read from the repository's config, never from `.gitmodules`)",
    },
    key("user.signingkey", Signs, "the key a signed commit or tag is made with: a path to the operator's `~/.ssh/id_ed25519` (with `gpg.format = ssh`) signs the agent's work as the operator"),
    key("gpg.format", Signs, "which signer and which kind of key `user.signingKey` names (`openpgp`, `x509`, `ssh`)"),
    Key {
        key: "commit.gpgsign",
        values: Values::True,
        effect: Signs,
        why: "`true` signs every commit, the supervisor's auto-commit included, with `user.signingKey`",
    },
    Key {
        key: "tag.gpgsign",
        values: Values::True,
        effect: Signs,
        why: "`true` signs every annotated tag with `user.signingKey`",
    },
    key("core.worktree", Moves, "moves the work tree: git's next `status`, `stash`, `clean` act on another directory"),
    Key {
        key: "core.bare",
        values: Values::True,
        effect: Moves,
        why: "`true` declares the repository bare: git no longer takes the directory as its work tree",
    },
    key("include.path", Includes, "reads another config file, which may set any key of this list"),
    key("includeif.<condition>.path", Includes, "the same, under a condition (`gitdir:`, `onbranch:`, `hasconfig:`)"),
    key("protocol.allow", Enables, "the default transport policy: `always` opens `ext::`, whose URL is a command run on fetch and push"),
    key("protocol.<name>.allow", Enables, "one transport's policy: `protocol.ext.allow=always` opens `ext::` URLs (a command run on fetch and push)"),
    key("filter.<driver>.required", Shapes, "a required filter fails the command when its program does not run: false where the supervisor blanks the program"),
    key("ssh.variant", Shapes, "the arguments git passes to the ssh command"),
    key("core.excludesfile", Hides, "an ignore file of the agent's choosing: every untracked file it names (a new `.envrc`, a CI workflow) is missing from `git status`"),
    key("core.ignorestat", Hides, "every file `git add` writes is marked `assume-unchanged`: later changes to it are missing from `git status`"),
    key("core.checkstat", Hides, "`minimal` compares only a file's size and modification time: a change that keeps both (the agent can set the time back) is missing from `git status`"),
    key("core.trustctime", Hides, "`false` stops comparing the change time, the one time a process cannot set back"),
    key("status.showuntrackedfiles", Hides, "`no` hides every untracked file from the operator's `git status`"),
    key("diff.ignoresubmodules", Hides, "hides a submodule's move (or its dirt) from the operator's `git status` and `diff`"),
    key("submodule.<name>.ignore", Hides, "the same, for one submodule"),
    key("core.ignorecase", Hides, "`true` matches file names in any letter case: a new `makefile` beside the tracked `Makefile` (the one `make` prefers) is missing from `git status`"),
    key("core.untrackedcache", Hides, "makes the operator's `git status` trust an untracked cache in the index, which the agent can write: an untracked file it leaves out is missing"),
    key("feature.manyfiles", Hides, "turns the untracked cache on (and index version 4)"),
    key("index.threads", Hides, "a threaded read of the index takes its entries from the offset table, which the agent can point at other entries than those read in order (hidden flags, gitlinks)"),
    key("index.recordoffsettable", Hides, "writes that offset table"),
    key("index.recordendofindexentries", Hides, "writes the end-of-entries mark the threaded read starts from"),
];

/// `key` (as `git config --list` prints it) split into section, subsection and name.
fn parts(key: &str) -> (&str, Option<&str>, &str) {
    let (section, rest) = key.split_once('.').unwrap_or((key, ""));
    match rest.rsplit_once('.') {
        Some((sub, name)) => (section, Some(sub), name),
        None => (section, None, rest),
    }
}

impl Key {
    /// Whether this row names `key` (`git config --list` spelling).
    fn names(&self, key: &str) -> bool {
        let (section, sub, name) = parts(key);
        let (p_section, p_sub, p_name) = parts(self.key);
        if !section.eq_ignore_ascii_case(p_section) {
            return false;
        }
        if p_name == "*" && p_sub.is_none() {
            return true;
        }
        let sub_fits = match p_sub {
            None => sub.is_none(),
            Some(_) => sub.is_some(),
        };
        sub_fits && name.eq_ignore_ascii_case(p_name)
    }

    /// Whether `value` is one this row counts.
    fn counts(&self, value: &str) -> bool {
        match self.values {
            Values::Any => true,
            Values::Command => value.trim_start().starts_with('!'),
            Values::True => {
                ["true", "yes", "on"]
                    .iter()
                    .any(|t| value.trim().eq_ignore_ascii_case(t))
                    || nonzero_int(value.trim())
            }
            Values::NotAName => {
                let value = value.trim();
                value.contains(['/', ':']) || value.starts_with(['.', '~'])
            }
        }
    }
}

/// Whether `value` is an integer git reads as a true boolean: any nonzero one, in
/// decimal, hex (`0x`) or octal (leading `0`), with an optional `k`, `m` or `g` unit
/// (git's `git_config_bool` falls back to `git_config_int`: `core.bare = 2` is true).
fn nonzero_int(value: &str) -> bool {
    let digits = value.trim_end_matches(['k', 'K', 'm', 'M', 'g', 'G']);
    let unsigned = digits.trim_start_matches(['-', '+']);
    let parsed = match unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None if unsigned.len() > 1 && unsigned.starts_with('0') => {
            u64::from_str_radix(&unsigned[1..], 8)
        }
        None => unsigned.parse::<u64>(),
    };
    // Too large for 64 bits: git refuses it as out of range, which fails the command.
    parsed.is_ok_and(|n| n != 0)
}

/// The row naming `key` whose effect is reverted after a round and which counts one of
/// `values` (an entry without a value counts as `true`), if any.
pub(crate) fn watched<'a>(
    key: &str,
    values: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<&'static Key> {
    KEYS.iter().find(|row| {
        row.effect != Effect::Shapes
            && row.names(key)
            && values.clone().into_iter().any(|v| row.counts(v))
    })
}

/// Whether the supervisor's own git overrides `key` when the repository's config sets it
/// ([`Effect::Runs`], [`Effect::Shapes`] and [`Effect::Hides`] rows).
pub(crate) fn overridden(key: &str) -> bool {
    KEYS.iter().any(|row| {
        matches!(row.effect, Effect::Runs | Effect::Shapes | Effect::Hides)
            && row.values == Values::Any
            && row.names(key)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_watched(key: &str, value: &str) -> bool {
        watched(key, [value]).is_some()
    }

    #[test]
    fn program_keys_are_watched_and_ordinary_ones_are_not() {
        for (key, value) in [
            ("core.fsmonitor", "./monitor"),
            ("core.hookspath", ".husky"),
            ("core.worktree", "/home/op/.ssh"),
            ("core.bare", "true"),
            ("core.bare", "Yes"),
            ("core.bare", "1"),
            ("core.bare", "2"),
            ("core.bare", "1k"),
            ("core.bare", "0x1"),
            ("core.bare", "-1"),
            ("alias.x", "!sh -c id"),
            ("alias.st", "-c core.pager=./evil status"),
            ("filter.Evil Driver.clean", "./clean %f"),
            ("filter.lfs.process", "./p"),
            ("diff.pdf.textconv", "./conv"),
            ("credential.https://example.com.helper", "!f() { :; }; f"),
            ("credential.helper", "store"),
            ("gpg.ssh.program", "./sign"),
            ("include.path", "evil.inc"),
            ("includeif.gitdir:/tmp/.path", "evil.inc"),
            ("protocol.ext.allow", "always"),
            ("remote.origin.vcs", "evil"),
            ("remote.origin.uploadpack", "./up"),
            ("pager.log", "./less"),
            ("submodule.lib.update", "!./run"),
            ("browser.firefox.cmd", "./ff"),
            ("sendemail.smtpserver", "/usr/bin/x"),
            ("sendemail.work.sendmailcmd", "./x"),
            ("sendemail.Work.SmtpServer", "/usr/bin/x"),
            ("tar.tgz.command", "./x; gzip -cn"),
            ("tar.tar.gz.command", "./x"),
            ("lfs.customtransfer.evil.path", "./agent"),
            ("http.cookiefile", "/root/.bashrc"),
            ("http.https://x.example.cookiefile", "/root/.profile"),
            ("remote.origin.url", "/work/tree/.cache/evil.git"),
            ("remote.origin.url", "/proc/self/cwd/.cache/evil.git"),
            ("remote.origin.url", "https://x.example/op/repo.git"),
            ("remote.up.pushurl", "sub/../x:y"),
            ("remote.pushdefault", "/t/.cache/evil.git"),
            ("branch.main.pushremote", "/t/.cache/evil.git"),
            ("branch.main.remote", "/t/.cache/evil.git"),
            ("branch.main.remote", "../evil.git"),
            ("url./srv/evil.git.insteadof", "https://x.example/op/repo"),
            (
                "url.git@x.example:a/b.pushinsteadof",
                "https://x.example/op/repo",
            ),
            ("user.signingkey", "/root/.ssh/id_ed25519"),
            ("gpg.format", "ssh"),
            ("commit.gpgsign", "true"),
        ] {
            assert!(is_watched(key, value), "{key} = {value}");
        }
        for (key, value) in [
            ("user.email", "a@b"),
            ("commit.gpgsign", "false"),
            ("branch.main.remote", "origin"),
            ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
            ("branch.main.remote", "origin"),
            ("branch.main.merge", "refs/heads/main"),
            ("submodule.lib.url", "../lib.git"),
            ("submodule.lib.active", "true"),
            ("submodule.lib.update", "rebase"),
            ("core.filemode", "true"),
            ("core.bare", "false"),
            ("core.bare", "0"),
            ("core.bare", "0x0"),
            ("core.bare", "0k"),
            ("core.repositoryformatversion", "0"),
            ("extensions.worktreeconfig", "true"),
            ("diff.renames", "true"),
            ("filter.lfs.required", "true"),
            ("ssh.variant", "simple"),
            ("diff.pdf.binary", "true"),
            ("core.pager.x", "y"),
            ("lfs.url", "https://x.example/lfs"),
            ("http.savecookies", "true"),
        ] {
            assert!(!is_watched(key, value), "{key} = {value}");
        }
        // A value-led row: the key counts when any value of it is a command.
        assert!(watched("submodule.lib.update", ["rebase", "!x"]).is_some());
    }

    #[test]
    fn the_supervisors_git_overrides_what_runs_in_ordinary_commands() {
        for key in [
            "core.fsmonitor",
            "core.pager",
            "pager.log",
            "credential.https://x.example.helper",
            "filter.lfs.required",
            "ssh.variant",
            "mergetool.meld.path",
            "gpg.x509.program",
            "lfs.customtransfer.evil.path",
            "core.excludesfile",
            "core.trustctime",
            "submodule.lib.ignore",
        ] {
            assert!(overridden(key), "{key}");
        }
        for key in [
            "user.email",
            "diff.renames",
            "alias.x",
            "include.path",
            "core.worktree",
            "protocol.ext.allow",
            "web.browser",
            "submodule.lib.update",
        ] {
            assert!(!overridden(key), "{key}");
        }
    }

    #[test]
    fn every_key_has_its_why_in_docs_security() {
        let doc = include_str!("../../../../docs/security.md");
        for row in KEYS {
            assert!(!row.why.is_empty(), "{}", row.key);
            assert!(
                doc.contains(&format!("`{}`", row.key)),
                "docs/security.md does not list `{}`",
                row.key
            );
        }
    }
}
