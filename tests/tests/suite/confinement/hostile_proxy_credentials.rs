//! A hostile agent behind the egress proxy (`[agent.sandbox] allow_hosts`, under `mode =
//! "require"`) after the operator's proxy credentials (docs/security.md, "Through an
//! upstream proxy"): the supervisor's `HTTP_PROXY` carries `user:password@`, which the
//! egress proxy turns into `Proxy-Authorization` and the agent's environment never holds
//! (its proxy variables are ours). A variable the egress proxy cannot use (here an
//! `https://` proxy URL) fails the agent's request with a `502` naming the variable: the
//! answer must not carry the password. The agent asks for a listed host and prints the
//! answer to its round log.
//!
//! Control: the agent's request reached that error (the answer names `HTTP_PROXY` and why it
//! cannot be used), and the agent's environment holds no password; before the fix the
//! answer held the whole URL, password and all (`HTTP_PROXY=https://operator:…@…`).

use agent_runner_e2e::{ConfigBuilder, Operator, Project};

const PASSWORD: &str = "proxy-pass-7f3a9c";

fn ask(operator: Operator) {
    let p = Project::new_as(operator);
    let agent = p.script(
        "agent/ask.sh",
        "#!/bin/sh\n\
         echo \"env: $(env | grep -ci proxy-pass)\"\n\
         curl -s --max-time 20 http://api.example.invalid/\n\
         echo\n\
         echo done\n",
    );
    let text = ConfigBuilder::new(&agent).render().replacen(
        "[runtime]\n",
        "[agent.sandbox]\nmode = \"require\"\nallow_hosts = [\"api.example.invalid\"]\n[runtime]\n",
        1,
    );
    p.write_config_text(&text);
    // Never reached: the scheme is refused before any connection.
    let proxy = format!("https://operator:{PASSWORD}@127.0.0.1:9/");
    let out = p.run_env(
        &["round"],
        &[
            ("HTTP_PROXY", proxy.as_str()),
            ("http_proxy", proxy.as_str()),
            ("HTTPS_PROXY", proxy.as_str()),
            ("https_proxy", proxy.as_str()),
        ],
    );
    let events = p.events_text();
    assert_eq!(out.code(), 0, "{out}\n{events}");
    let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
    // Control: the request reached the unusable variable's error, and the agent's own
    // environment held no password.
    assert!(log.contains("env: 0"), "{log}");
    assert!(log.contains("done"), "{log}");
    assert!(
        log.contains("HTTP_PROXY") && log.contains("https://"),
        "{log}\n{events}"
    );
    assert!(!log.contains(PASSWORD), "{log}");
    assert!(!events.contains(PASSWORD), "{events}");
}

#[test]
fn an_unusable_proxy_variable_s_error_keeps_its_password_from_the_agent_as_root() {
    ask(Operator::Root);
}

#[test]
fn an_unusable_proxy_variable_s_error_keeps_its_password_from_the_agent_as_unprivileged_user() {
    ask(Operator::Unprivileged);
}
