#!/usr/bin/env python3
"""Derives a seccomp profile (OCI/containers JSON: podman, CRI-O, containerd, Docker) from a
container runtime's default profile, changing only what user namespaces need
(docs/operations.md "Running a fleet", "Confinement in a container").

  userns.py allow DEFAULT.json OUT.json   unshare(2) and clone(2)/clone3(2) allowed with
                                          any flags: hosts get their own user, PID and
                                          mount namespaces (all confinement layers)
  userns.py deny  DEFAULT.json OUT.json   unshare(2) fails with EPERM, clone(2) is
                                          allowed only without namespace flags (else the
                                          profile's default action), clone3(2) fails with
                                          ENOSYS: what
                                          containerd's and Docker's default profiles do
                                          without CAP_SYS_ADMIN (Kubernetes RuntimeDefault
                                          on most clusters); used by tests/tests/suite/confinement/container.rs

Every other rule of DEFAULT.json is kept as it is. Standard library only.
"""
import json
import sys

NAMESPACE_CALLS = ("unshare", "clone", "clone3")
# CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID
# | CLONE_NEWNET: any of them makes clone(2) create a namespace.
CLONE_NAMESPACE_FLAGS = 0x7E020000
EPERM = 1
ENOSYS = 38


def without_namespace_calls(rules):
    """The rules with unshare, clone and clone3 taken out (rules left empty dropped)."""
    out = []
    for rule in rules:
        names = [n for n in rule.get("names", []) if n not in NAMESPACE_CALLS]
        if names:
            out.append(dict(rule, names=names))
    return out


def allow(profile):
    profile["syscalls"] = without_namespace_calls(profile.get("syscalls", [])) + [
        {"names": list(NAMESPACE_CALLS), "action": "SCMP_ACT_ALLOW"}
    ]
    return profile


def deny(profile):
    profile["syscalls"] = without_namespace_calls(profile.get("syscalls", [])) + [
        {"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM},
        {
            "names": ["clone"],
            "action": "SCMP_ACT_ALLOW",
            "args": [
                {"index": 0, "value": CLONE_NAMESPACE_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}
            ],
        },
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS},
    ]
    return profile


def main(argv):
    if len(argv) != 4 or argv[1] not in ("allow", "deny"):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[2], encoding="utf-8") as f:
        profile = json.load(f)
    profile = allow(profile) if argv[1] == "allow" else deny(profile)
    with open(argv[3], "w", encoding="utf-8") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
