//! The manifests of deploy/kubernetes/ checked without a cluster (issue 39):
//!
//! - every core object validates with `kubernetes-validate --strict` against Kubernetes
//!   1.37's schemas (PyPI; tests/setup.d/50-kubernetes-validate.sh), and so do the core
//!   parts inside the agent-sandbox objects (the pod template as a Pod, the network rules
//!   as a NetworkPolicy, the claim templates as PersistentVolumeClaims); a misspelt field
//!   is the control;
//! - the agent-sandbox objects use only the fields of that project's documented API
//!   (kubernetes-sigs/agent-sandbox docs/api.md, `extensions.agents.x-k8s.io/v1alpha1`,
//!   read at commit 01e149d1ce83706266b931548ff04aabaf40750f; field names below, no copy
//!   of its schema), and their references resolve;
//! - the Job and the CronJob: `serve --job`, a deadline above one run, the settings the
//!   policy needs, equal pod templates; the policy itself is held to
//!   supervisor/src/exit.rs by the supervisor's `pod_failure_policy` unit tests;
//! - every pod: no service-account token; the NetworkPolicy selects every workload's pods
//!   and lets DNS, the provider and the operator's list through, and nothing private.

use crate::kube_common;

use agent_runner_e2e::serde_json::{json, Value};
use kube_common::{document, documents, job_action, manifests, validate};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const SANDBOX_API: &str = "extensions.agents.x-k8s.io/v1alpha1";

/// The kinds the validator has no schema for (agent-sandbox's); checked field by field.
const SANDBOX_KINDS: [&str; 3] = ["SandboxTemplate", "SandboxWarmPool", "SandboxClaim"];

#[test]
fn every_manifest_validates_strictly_against_kubernetes_schemas() {
    let files = manifests();
    assert!(files.len() >= 8, "{files:?}");
    let (ok, out) = validate(&files);
    assert!(ok, "{out}");
    let mut core = 0;
    for file in &files {
        for doc in documents(file) {
            let kind = doc["kind"].as_str().expect("kind");
            if SANDBOX_KINDS.contains(&kind) {
                continue;
            }
            core += 1;
            let name = doc["metadata"]["name"].as_str().expect("name");
            assert!(
                out.contains(&format!(
                    "passed for resource {}/{name}",
                    kind.to_lowercase()
                )),
                "{kind}/{name} of {} not validated:\n{out}",
                file.display()
            );
        }
    }
    assert!(core >= 10, "{out}");
    // The core parts inside the agent-sandbox objects.
    let dir = tempfile::tempdir().unwrap();
    let parts = sandbox_core_parts(dir.path());
    let (ok, out) = validate(&parts);
    assert!(ok, "{out}");
    assert!(!out.contains("Couldn't find schema"), "{out}");
    // The control: one misspelt field fails.
    let job = std::fs::read_to_string(Path::new(&workspace("deploy/kubernetes/job.yaml")))
        .unwrap()
        .replace("backoffLimit: 3", "backoffLimit: 3\n  backofLimit: 3");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, job).unwrap();
    let (ok, out) = validate(&[bad]);
    assert!(!ok && out.contains("backofLimit"), "{out}");
}

fn workspace(path: &str) -> PathBuf {
    agent_runner_e2e::workspace_root().join(path)
}

/// The core objects inside every SandboxTemplate, written as YAML (JSON is YAML) to `dir`.
fn sandbox_core_parts(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (i, t) in sandbox_docs("SandboxTemplate").into_iter().enumerate() {
        let spec = &t["spec"];
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("pod-{i}"), "labels": spec["podTemplate"]["metadata"]["labels"]},
            "spec": spec["podTemplate"]["spec"],
        });
        let mut policy = spec["networkPolicy"].clone();
        policy["podSelector"] = json!({});
        let policy = json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": format!("policy-{i}")}, "spec": policy,
        });
        let mut docs = vec![pod, policy];
        for claim in spec["volumeClaimTemplates"].as_array().expect("claims") {
            docs.push(json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": claim["metadata"], "spec": claim["spec"],
            }));
        }
        for (j, doc) in docs.iter().enumerate() {
            let file = dir.join(format!("part-{i}-{j}.yaml"));
            std::fs::write(&file, doc.to_string()).unwrap();
            out.push(file);
        }
    }
    out
}

/// Every document of `kind` under deploy/kubernetes/agent-sandbox/.
fn sandbox_docs(kind: &str) -> Vec<Value> {
    manifests()
        .iter()
        .filter(|f| f.parent().is_some_and(|p| p.ends_with("agent-sandbox")))
        .flat_map(|f| documents(f))
        .filter(|d| d["kind"] == kind)
        .collect()
}

/// The keys of `object` not in `allowed`, as `path.key`.
fn unknown(object: &Value, path: &str, allowed: &[&str]) -> Vec<String> {
    object
        .as_object()
        .unwrap_or_else(|| panic!("{path} is not an object"))
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| format!("{path}.{k}"))
        .collect()
}

/// The fields of `doc` that agent-sandbox's documented v1alpha1 API does not have, and the
/// required ones it lacks (docs/api.md: SandboxTemplateSpec, PodTemplate, PodMetadata,
/// PersistentVolumeClaimTemplate, EmbeddedObjectMetadata, NetworkPolicySpec,
/// SandboxWarmPoolSpec, SandboxTemplateRef, SandboxWarmPoolUpdateStrategy,
/// SandboxClaimSpec, Lifecycle, EnvVar).
fn sandbox_api_violations(doc: &Value) -> Vec<String> {
    let mut bad = unknown(doc, "", &["apiVersion", "kind", "metadata", "spec"]);
    if doc["apiVersion"] != SANDBOX_API {
        bad.push(format!("apiVersion {}", doc["apiVersion"]));
    }
    let spec = &doc["spec"];
    let mut require = |ok: bool, what: &str| {
        if !ok {
            bad.push(format!("{what} missing or not allowed"));
        }
    };
    match doc["kind"].as_str() {
        Some("SandboxTemplate") => {
            require(
                spec["podTemplate"]["spec"].is_object(),
                "spec.podTemplate.spec",
            );
            require(
                ["Managed", "Unmanaged"].contains(
                    &spec["networkPolicyManagement"]
                        .as_str()
                        .unwrap_or("Managed"),
                ),
                "spec.networkPolicyManagement",
            );
            let mut found = unknown(
                spec,
                "spec",
                &[
                    "podTemplate",
                    "volumeClaimTemplates",
                    "networkPolicy",
                    "networkPolicyManagement",
                    "envVarsInjectionPolicy",
                    "service",
                ],
            );
            found.extend(unknown(
                &spec["podTemplate"],
                "spec.podTemplate",
                &["spec", "metadata"],
            ));
            if spec["podTemplate"]["metadata"].is_object() {
                found.extend(unknown(
                    &spec["podTemplate"]["metadata"],
                    "spec.podTemplate.metadata",
                    &["labels", "annotations"],
                ));
            }
            if spec["networkPolicy"].is_object() {
                found.extend(unknown(
                    &spec["networkPolicy"],
                    "spec.networkPolicy",
                    &["ingress", "egress"],
                ));
            }
            for claim in spec["volumeClaimTemplates"]
                .as_array()
                .into_iter()
                .flatten()
            {
                found.extend(unknown(
                    claim,
                    "spec.volumeClaimTemplates[]",
                    &["metadata", "spec"],
                ));
                found.extend(unknown(
                    &claim["metadata"],
                    "spec.volumeClaimTemplates[].metadata",
                    &["name", "labels", "annotations"],
                ));
            }
            bad.extend(found);
        }
        Some("SandboxWarmPool") => {
            require(spec["replicas"].as_u64().is_some(), "spec.replicas");
            require(
                spec["sandboxTemplateRef"]["name"].is_string(),
                "spec.sandboxTemplateRef.name",
            );
            bad.extend(unknown(
                spec,
                "spec",
                &[
                    "replicas",
                    "ttlSecondsAfterCreated",
                    "sandboxTemplateRef",
                    "updateStrategy",
                ],
            ));
            bad.extend(unknown(
                &spec["sandboxTemplateRef"],
                "spec.sandboxTemplateRef",
                &["name"],
            ));
            if spec["updateStrategy"].is_object() {
                bad.extend(unknown(
                    &spec["updateStrategy"],
                    "spec.updateStrategy",
                    &["type"],
                ));
                if !["Recreate", "OnReplenish"]
                    .contains(&spec["updateStrategy"]["type"].as_str().unwrap_or(""))
                {
                    bad.push("spec.updateStrategy.type".to_owned());
                }
            }
        }
        Some("SandboxClaim") => {
            require(
                spec["sandboxTemplateRef"]["name"].is_string(),
                "spec.sandboxTemplateRef.name",
            );
            bad.extend(unknown(
                spec,
                "spec",
                &[
                    "ttlSecondsAfterCreated",
                    "sandboxTemplateRef",
                    "lifecycle",
                    "warmpool",
                    "additionalPodMetadata",
                    "env",
                ],
            ));
            bad.extend(unknown(
                &spec["sandboxTemplateRef"],
                "spec.sandboxTemplateRef",
                &["name"],
            ));
            let lifecycle = &spec["lifecycle"];
            if lifecycle.is_object() {
                bad.extend(unknown(
                    lifecycle,
                    "spec.lifecycle",
                    &["shutdownTime", "ttlSecondsAfterFinished", "shutdownPolicy"],
                ));
                let policy = lifecycle["shutdownPolicy"].as_str().unwrap_or("Retain");
                if !["Delete", "DeleteForeground", "Retain"].contains(&policy) {
                    bad.push(format!("spec.lifecycle.shutdownPolicy {policy}"));
                }
            }
            for env in spec["env"].as_array().into_iter().flatten() {
                bad.extend(unknown(
                    env,
                    "spec.env[]",
                    &["name", "value", "containerName"],
                ));
            }
        }
        other => bad.push(format!("kind {other:?}")),
    }
    bad
}

#[test]
fn agent_sandbox_objects_use_only_the_documented_api_and_their_references_resolve() {
    let templates = sandbox_docs("SandboxTemplate");
    let pools = sandbox_docs("SandboxWarmPool");
    let claims = sandbox_docs("SandboxClaim");
    assert_eq!(templates.len(), 2, "a gVisor and a Kata template");
    assert_eq!((pools.len(), claims.len()), (1, 1));
    for doc in templates.iter().chain(&pools).chain(&claims) {
        let bad = sandbox_api_violations(doc);
        assert!(bad.is_empty(), "{}: {bad:?}", doc["metadata"]["name"]);
    }
    // The control: a misspelt field and a missing required one are found.
    let mut wrong = pools[0].clone();
    wrong["spec"]["replica"] = json!(2);
    wrong["spec"].as_object_mut().unwrap().remove("replicas");
    let bad = sandbox_api_violations(&wrong);
    assert!(bad.iter().any(|b| b == "spec.replica"), "{bad:?}");
    assert!(
        bad.iter().any(|b| b.starts_with("spec.replicas")),
        "{bad:?}"
    );
    // gVisor and Kata by RuntimeClass; references resolve.
    let classes: BTreeSet<&str> = templates
        .iter()
        .map(|t| {
            t["spec"]["podTemplate"]["spec"]["runtimeClassName"]
                .as_str()
                .expect("runtimeClassName")
        })
        .collect();
    assert_eq!(classes, BTreeSet::from(["gvisor", "kata-qemu"]));
    let names: Vec<&Value> = templates.iter().map(|t| &t["metadata"]["name"]).collect();
    assert!(names.contains(&&pools[0]["spec"]["sandboxTemplateRef"]["name"]));
    assert!(names.contains(&&claims[0]["spec"]["sandboxTemplateRef"]["name"]));
    assert_eq!(claims[0]["spec"]["warmpool"], pools[0]["metadata"]["name"]);
    // The pod runs serve (not --job: a sandbox is a long-lived singleton), with the
    // shipped modes "prefer" (docs/operations.md, "On agent-sandbox").
    for t in &templates {
        let pod = &t["spec"]["podTemplate"]["spec"];
        let serve = &pod["containers"][0];
        assert_eq!(serve["name"], "serve");
        assert_eq!(serve["args"].as_array().unwrap().last().unwrap(), "serve");
        assert_eq!(pod["automountServiceAccountToken"], false);
    }
    let config = document(
        "deploy/kubernetes/agent-sandbox/template-gvisor.yaml",
        "ConfigMap",
    );
    let toml = config["data"]["agent-runner.toml"].as_str().unwrap();
    assert!(toml.contains("[plugins]\nsandbox = \"prefer\""), "{toml}");
    assert!(
        toml.contains("\nsandbox = \"prefer\"\n\n[runtime]"),
        "{toml}"
    );
}

/// `key = N` of a TOML text (the manifests' configs hold it once, unquoted).
fn toml_u64(toml: &str, key: &str) -> u64 {
    toml.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{key} = ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} in\n{toml}"))
}

/// The Job of job.yaml and the CronJob's Job of cronjob.yaml, with their configs.
fn jobs() -> Vec<(&'static str, Value, String)> {
    let job = document("deploy/kubernetes/job.yaml", "Job");
    let cron = document("deploy/kubernetes/cronjob.yaml", "CronJob");
    let config = |file: &str| {
        document(file, "ConfigMap")["data"]["agent-runner.toml"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    vec![
        (
            "job.yaml",
            job["spec"].clone(),
            config("deploy/kubernetes/job.yaml"),
        ),
        (
            "cronjob.yaml",
            cron["spec"]["jobTemplate"]["spec"].clone(),
            config("deploy/kubernetes/cronjob.yaml"),
        ),
    ]
}

#[test]
fn jobs_run_serve_job_within_a_deadline_above_one_run() {
    for (file, spec, toml) in jobs() {
        let pod = &spec["template"]["spec"];
        let serve = &pod["containers"][0];
        assert_eq!(serve["name"], "serve", "{file}");
        let args: Vec<&str> = serve["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(args.ends_with(&["serve", "--job"]), "{file}: {args:?}");
        // podFailurePolicy needs restartPolicy Never; one pod at a time on the tree.
        assert_eq!(pod["restartPolicy"], "Never", "{file}");
        assert_eq!(spec["podReplacementPolicy"], "Failed", "{file}");
        assert!(spec["ttlSecondsAfterFinished"].as_u64().is_some(), "{file}");
        // The monitor is a sidecar, so it never holds the Job open.
        assert_eq!(pod["initContainers"][0]["name"], "monitor", "{file}");
        assert_eq!(
            pod["initContainers"][0]["restartPolicy"], "Always",
            "{file}"
        );
        // The goal that lets --job end 0.
        assert!(toml.contains("stop_when = \"all_satisfied\""), "{file}");
        let deadline = spec["activeDeadlineSeconds"].as_u64().unwrap();
        let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
        let max_duration = toml_u64(&toml, "max_duration_s");
        let budget = toml_u64(&toml, "round_budget_s");
        assert!(
            grace > budget,
            "{file}: the grace period lets a round finish"
        );
        assert!(
            deadline > max_duration + budget + grace,
            "{file}: activeDeadlineSeconds {deadline} <= {max_duration} + {budget} + {grace}"
        );
        // What the policy does with serve's exits (the policy is exit.rs's: the unit tests).
        let policy = &spec["podFailurePolicy"];
        assert_eq!(job_action(policy, "serve", 0, &[]), "Complete");
        assert_eq!(job_action(policy, "serve", 79, &[]), "FailJob");
        assert_eq!(job_action(policy, "serve", 143, &[]), "Ignore");
        assert_eq!(job_action(policy, "serve", 137, &[]), "Count");
        assert_eq!(
            job_action(policy, "serve", 137, &["DisruptionTarget"]),
            "Ignore"
        );
        assert_eq!(
            job_action(policy, "serve", 79, &["DisruptionTarget"]),
            "FailJob"
        );
        assert_eq!(job_action(policy, "monitor", 78, &[]), "Count");
    }
    let cron = document("deploy/kubernetes/cronjob.yaml", "CronJob");
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Forbid");
}

#[test]
fn the_jobs_and_the_cronjobs_pod_templates_are_the_same() {
    let all = jobs();
    let same = |spec: &Value| {
        let mut t = spec["template"].clone();
        t["spec"]["volumes"][2]["configMap"]["name"] = json!("CONFIG");
        t
    };
    assert_eq!(same(&all[0].1), same(&all[1].1));
    assert_eq!(all[0].1["podFailurePolicy"], all[1].1["podFailurePolicy"]);
}

#[test]
fn every_pod_goes_without_a_token_inside_the_network_policy() {
    let policy = document("deploy/kubernetes/project.yaml", "NetworkPolicy");
    let selector = policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap();
    let deployment = document("deploy/kubernetes/agent-runner.yaml", "Deployment");
    let mut templates = vec![("agent-runner.yaml", deployment["spec"]["template"].clone())];
    templates.extend(
        jobs()
            .into_iter()
            .map(|(f, spec, _)| (f, spec["template"].clone())),
    );
    for (file, t) in &templates {
        assert_eq!(t["spec"]["automountServiceAccountToken"], false, "{file}");
        for (k, v) in selector {
            assert_eq!(
                &t["metadata"]["labels"][k], v,
                "{file}: the policy selects its pods"
            );
        }
    }
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    // In: the monitor's port alone.
    assert_eq!(
        policy["spec"]["ingress"],
        json!([{"ports": [{"port": 8765, "protocol": "TCP"}]}])
    );
    let egress = policy["spec"]["egress"].as_array().unwrap();
    let ports = |rule: &Value| -> Vec<(i64, String)> {
        rule["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["port"].as_i64().unwrap(),
                    p["protocol"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    // DNS: the cluster's, by selector, and NodeLocal DNSCache's address.
    assert!(egress
        .iter()
        .any(
            |r| r["to"][0]["podSelector"]["matchLabels"]["k8s-app"] == "kube-dns"
                && ports(r).contains(&(53, "UDP".into()))
        ));
    assert!(egress
        .iter()
        .any(|r| r["to"][0]["ipBlock"]["cidr"] == "169.254.20.10/32"));
    // 443 to public addresses; the private ranges and the metadata range left out.
    let public = egress
        .iter()
        .find(|r| r["to"][0]["ipBlock"]["cidr"] == "0.0.0.0/0")
        .expect("a rule for public addresses");
    assert_eq!(ports(public), vec![(443, "TCP".to_owned())]);
    let except: Vec<&str> = public["to"][0]["ipBlock"]["except"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for private in [
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "127.0.0.0/8",
    ] {
        assert!(except.contains(&private), "{private}: {except:?}");
    }
    assert_eq!(public["to"][1]["ipBlock"]["cidr"], "::/0");
    // The operator's list: a git host with 22, the model gateway, the OTLP collector.
    assert!(egress
        .iter()
        .any(|r| ports(r).contains(&(22, "TCP".into()))));
    assert!(egress
        .iter()
        .any(
            |r| r["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
                == "model-gateway"
        ));
    assert!(egress
        .iter()
        .any(|r| ports(r).contains(&(4317, "TCP".into()))));
    // The sandbox templates carry the same rules.
    for t in sandbox_docs("SandboxTemplate") {
        assert_eq!(
            t["spec"]["networkPolicy"]["ingress"],
            policy["spec"]["ingress"]
        );
        assert_eq!(
            t["spec"]["networkPolicy"]["egress"],
            policy["spec"]["egress"]
        );
    }
}
