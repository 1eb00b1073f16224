//! The credential stores under the home directory that no grant may cover by implication,
//! for hosts (an operator's `read_paths`) and the agent alike (docs/security.md).

use std::path::{Path, PathBuf};

/// Reviewed data: credential directories and files under the home directory that no grant
/// may cover implicitly (docs/security.md). An operator's `read_paths` entry that contains
/// one of them (`~`, `~/.config`, `~/.cargo`) is refused; naming one exactly (or a path
/// inside it), or a sibling that holds none (`~/.cargo/registry`, `~/.cache/pip`), is a
/// deliberate choice and allowed. A store belongs here rather than in the agent's own list
/// (`crate::agent::policy::AGENT_WITHHELD`) when it is the operator's secret whichever
/// program reads it: a grant that covered it would hand it to a host or the agent, since
/// Landlock's grants add up and no narrower rule takes a file back. The agent reads every
/// other entry of the home directory, and of a directory holding one of these every other
/// entry (`~/.cargo/bin` and `~/.cargo/registry` beside `~/.cargo/credentials.toml`).
pub const CREDENTIAL_PATHS: &[(&str, &str)] = &[
    (".ssh", "SSH keys"),
    (".aws", "AWS credentials"),
    (".config/gcloud", "Google Cloud credentials"),
    (".claude", "Claude Code credentials"),
    (".claude.json", "Claude Code account state"),
    (".gnupg", "GnuPG keys"),
    (".netrc", "passwords for hosts"),
    (".docker", "registry credentials"),
    (".kube", "Kubernetes credentials"),
    (".config/gh", "GitHub CLI token"),
    (".azure", "Azure credentials"),
    (".git-credentials", "git's stored passwords"),
    (".gemini", "Gemini CLI credentials"),
    (
        ".config/git/credentials",
        "git's stored passwords (credential-store's XDG path)",
    ),
    (".config/hub", "hub's GitHub token"),
    (".config/glab-cli", "GitLab CLI token"),
    (".npmrc", "npm registry tokens (_authToken)"),
    (".yarnrc.yml", "Yarn registry tokens (npmAuthToken)"),
    (".pypirc", "PyPI upload tokens and passwords"),
    (".cargo/credentials", "crates.io token (cargo before 1.46)"),
    (".cargo/credentials.toml", "crates.io and registry tokens"),
    (".gem/credentials", "RubyGems API key"),
    (".composer/auth.json", "Composer (PHP) registry tokens"),
    (
        ".config/composer/auth.json",
        "Composer (PHP) registry tokens (XDG path)",
    ),
    (".m2/settings.xml", "Maven repository passwords"),
    (
        ".gradle/gradle.properties",
        "Gradle repository and signing credentials",
    ),
    (".dockercfg", "registry credentials (Docker's old file)"),
    (
        ".config/containers/auth.json",
        "Podman and Buildah registry logins",
    ),
    (".config/helm/registry", "Helm's OCI registry logins"),
    (
        ".config/helm/repositories.yaml",
        "Helm's chart repository passwords",
    ),
    (
        ".terraform.d/credentials.tfrc.json",
        "Terraform Cloud tokens",
    ),
    (
        ".terraformrc",
        "Terraform CLI config (may hold credentials blocks)",
    ),
    (".pulumi/credentials.json", "Pulumi access tokens"),
    (".vault-token", "HashiCorp Vault token"),
    (".config/op", "1Password CLI sessions and config"),
    (
        ".config/Bitwarden CLI",
        "Bitwarden CLI vault data and session",
    ),
    (".password-store", "pass(1) passwords"),
    (".local/share/keyrings", "GNOME keyring"),
    (".pki", "NSS certificate and key databases"),
    (".pgpass", "PostgreSQL passwords"),
    (".my.cnf", "MySQL client password"),
    (
        ".config/rclone/rclone.conf",
        "rclone's cloud storage credentials",
    ),
    (".s3cfg", "s3cmd's S3 keys"),
    (".boto", "boto and gsutil cloud keys"),
    (".oci", "Oracle Cloud API keys"),
    (".config/doctl", "DigitalOcean token"),
    (".config/hcloud", "Hetzner Cloud tokens"),
    (".fly", "Fly.io access token"),
    (".bluemix", "IBM Cloud credentials"),
    (".databrickscfg", "Databricks tokens"),
    (".huggingface/token", "Hugging Face token (old path)"),
    (".cache/huggingface/token", "Hugging Face token"),
    (".config/sops", "SOPS age keys"),
    (".subversion/auth", "Subversion's cached passwords"),
    (".mozilla", "Firefox profiles: cookies and saved passwords"),
    (
        ".config/google-chrome",
        "Chrome profiles: cookies and saved passwords",
    ),
    (
        ".config/chromium",
        "Chromium profiles: cookies and saved passwords",
    ),
];

/// The first of `protected` that `path` covers without naming it: `path` is a strict
/// ancestor of it. `None` when `path` is safe to grant read-only.
pub fn covers_protected<'a>(path: &Path, protected: &'a [PathBuf]) -> Option<&'a PathBuf> {
    protected
        .iter()
        .find(|p| p.starts_with(path) && p.as_path() != path)
}
