//! `[telemetry]`: where each round's trace is exported (docs/configuration.md,
//! "[telemetry]"; what is exported and when: docs/operations.md, "Traces"). The one place
//! the key and the standard `OTEL_EXPORTER_OTLP_*` variables are read and checked.

use serde::Deserialize;

use super::keys::config_table;

config_table! {
    /// `[telemetry]` as serde sees it.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawTelemetry = "telemetry" {
        /// the OTLP/HTTP collector each round's trace is sent to (protobuf), as
        /// `OTEL_EXPORTER_OTLP_ENDPOINT` writes it: spans go to `<url>/v1/traces` (a URL
        /// already ending in `/v1/traces` is taken as it is); plain `http://` only. Unset:
        /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` of the
        /// supervisor's environment; the key wins over both
        otlp_endpoint: String = (computed "the environment's, else none") label "an `http://` URL" reload Boot;
    }
}

/// The standard variable naming the traces URL whole (OpenTelemetry's exporter spec).
pub(crate) const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The standard variable naming the collector's base URL (`/v1/traces` appended).
pub(crate) const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard variable naming the service (`service.name`).
pub(crate) const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";
/// `service.name` without `OTEL_SERVICE_NAME`.
pub(crate) const DEFAULT_SERVICE_NAME: &str = "agent-runner";

/// Where traces go, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpEndpoint {
    /// The URL spans are POSTed to (`…/v1/traces`).
    pub traces_url: String,
    /// Where it was read: `[telemetry] otlp_endpoint` or `the environment's <VAR>`.
    pub source: String,
    /// The collector's host (a name or an address, IPv6 without brackets).
    pub host: String,
    /// The collector's TCP port (80 when the URL has none).
    pub port: u16,
}

/// `[telemetry]`, resolved: without an endpoint nothing is exported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// Where each round's trace goes; `None`: no traces.
    pub endpoint: Option<OtlpEndpoint>,
    /// `service.name` of the traces: `OTEL_SERVICE_NAME`, else `agent-runner`.
    pub service_name: String,
}

/// Checks `[telemetry]` and the standard variables of `env` (the supervisor's
/// environment, looked up by name). The key must be a plain `http://` URL (this build
/// exports without TLS); a variable that is not one is ignored with a warning (returned,
/// printed once by `config::load`), since the environment is not the operator's file.
///
/// Errors: `(dotted key, what was expected)`.
pub(super) fn resolve(
    raw: Option<RawTelemetry>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(TelemetryConfig, Vec<String>), (String, String)> {
    let service_name = env(SERVICE_NAME_VAR)
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
    let mut warnings = Vec::new();
    let endpoint = match raw.and_then(|r| r.otlp_endpoint) {
        Some(url) => Some(
            parse(&url, "[telemetry] otlp_endpoint".to_owned(), false).map_err(|why| {
                (
                    "telemetry.otlp_endpoint".to_owned(),
                    format!(
                        "{url:?} {why}; expected an http:// URL such as \"http://127.0.0.1:4318\""
                    ),
                )
            })?,
        ),
        None => {
            let mut found = None;
            for (var, whole) in [(TRACES_ENDPOINT_VAR, true), (ENDPOINT_VAR, false)] {
                let Some(url) = env(var).filter(|v| !v.trim().is_empty()) else {
                    continue;
                };
                match parse(&url, format!("the environment's {var}"), whole) {
                    Ok(e) => {
                        found = Some(e);
                        break;
                    }
                    Err(why) => warnings.push(format!(
                        "{var}={url:?} {why}: no traces are exported from it (docs/operations.md \"Traces\")"
                    )),
                }
            }
            found
        }
    };
    Ok((
        TelemetryConfig {
            endpoint,
            service_name,
        },
        warnings,
    ))
}

/// The endpoint of `url` read from `source`; `whole`: the URL is the traces URL itself
/// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), otherwise `/v1/traces` is appended unless it
/// is there already.
fn parse(url: &str, source: String, whole: bool) -> Result<OtlpEndpoint, &'static str> {
    let url = url.trim();
    let Some(rest) = url
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &url[7..])
    else {
        return Err(if url.to_ascii_lowercase().starts_with("https://") {
            "is https: this build exports over plain HTTP only (run the collector on this machine or beside it)"
        } else {
            "is not an http:// URL"
        });
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err("holds credentials (user:password@): put none in a URL");
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']').ok_or("has a bad IPv6 address")?;
        (h, tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or("has a bad port")?,
        None => 80,
    };
    if host.is_empty() {
        return Err("names no host");
    }
    let base = url.trim_end_matches('/');
    let traces_url = if whole || base.ends_with("/v1/traces") {
        url.to_owned()
    } else {
        format!("{base}/v1/traces")
    };
    Ok(OtlpEndpoint {
        traces_url,
        source,
        host: host.to_ascii_lowercase(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(url: &str) -> Option<RawTelemetry> {
        Some(RawTelemetry {
            otlp_endpoint: Some(url.to_owned()),
        })
    }

    #[test]
    fn the_key_wins_over_the_environment_and_gets_its_path() {
        let env = |v: &str| (v == ENDPOINT_VAR).then(|| "http://collector:4318".to_owned());
        let (t, w) = resolve(raw("http://127.0.0.1:4318/"), env).unwrap();
        let e = t.endpoint.unwrap();
        assert_eq!(e.traces_url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!((e.host.as_str(), e.port), ("127.0.0.1", 4318));
        assert_eq!(e.source, "[telemetry] otlp_endpoint");
        assert!(w.is_empty());
        let (t, _) = resolve(None, env).unwrap();
        let e = t.endpoint.unwrap();
        assert_eq!(e.traces_url, "http://collector:4318/v1/traces");
        assert_eq!(e.source, "the environment's OTEL_EXPORTER_OTLP_ENDPOINT");
        assert_eq!(t.service_name, "agent-runner");
    }

    #[test]
    fn the_traces_variable_is_taken_whole_and_before_the_base() {
        let env = |v: &str| match v {
            TRACES_ENDPOINT_VAR => Some("http://[::1]/custom".to_owned()),
            ENDPOINT_VAR => Some("http://other:4318".to_owned()),
            SERVICE_NAME_VAR => Some("fleet-a".to_owned()),
            _ => None,
        };
        let (t, _) = resolve(None, env).unwrap();
        let e = t.endpoint.unwrap();
        assert_eq!(e.traces_url, "http://[::1]/custom");
        assert_eq!((e.host.as_str(), e.port), ("::1", 80));
        assert_eq!(t.service_name, "fleet-a");
    }

    #[test]
    fn a_bad_key_is_an_error_and_a_bad_variable_a_warning() {
        for bad in [
            "https://c:4318",
            "grpc://c:4317",
            "http://u:p@c:4318",
            "http://c:0",
            "http://:4318",
        ] {
            let (key, why) = resolve(raw(bad), |_| None).unwrap_err();
            assert_eq!(key, "telemetry.otlp_endpoint");
            assert!(why.contains("expected an http:// URL"), "{why}");
        }
        let env = |v: &str| (v == ENDPOINT_VAR).then(|| "https://c:4318".to_owned());
        let (t, w) = resolve(None, env).unwrap();
        assert_eq!(t.endpoint, None);
        assert!(w[0].contains("plain HTTP only"), "{w:?}");
    }
}
