//! A control plane of the tests' own: started per test that needs one (each in a data
//! directory of its own under `target/tmp/`), reached by kubectl as its admin and by
//! `podstatus agent` as a node.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;

use podstatus_upstream::{ControlPlane, ControlPlaneConfig, Release};
use serde_json::{Value, json};

use crate::common;

/// The release under test: `PODSTATUS_KUBE_RELEASE` (`1.37`), else the one logic v4
/// follows.
pub fn release() -> Release {
    let name = std::env::var("PODSTATUS_KUBE_RELEASE").unwrap_or_else(|_| "1.35".into());
    Release::named(&name).unwrap_or_else(|| panic!("PODSTATUS_KUBE_RELEASE={name}: no such release"))
}

/// A running control plane and the scratch directory it lives in.
pub struct Cluster {
    pub plane: ControlPlane,
    dir: PathBuf,
}

impl Cluster {
    /// A new control plane of [`release`] with kubeconfigs for `nodes`, named `name` (its
    /// directory), with `extra` applied to its config.
    pub fn start(name: &str, nodes: &[&str], extra: impl FnOnce(&mut ControlPlaneConfig)) -> Self {
        Self::start_release(release(), name, nodes, extra)
    }

    /// As [`Cluster::start`], of `release`.
    pub fn start_release(
        release: Release,
        name: &str,
        nodes: &[&str],
        extra: impl FnOnce(&mut ControlPlaneConfig),
    ) -> Self {
        let dir = common::workspace().join("target/tmp/kube-apiserver").join(format!(
            "{name}-{}-{}",
            release.minor(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut config = ControlPlaneConfig::new(release, dir.join("data"));
        config.nodes = nodes.iter().map(|n| n.to_string()).collect();
        extra(&mut config);
        let plane = ControlPlane::start(config).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.join("home")).expect("a scratch HOME");
        Cluster { plane, dir }
    }

    /// kubectl as the admin.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_as(self.plane.admin_kubeconfig(), args, None)
    }

    /// kubectl with `kubeconfig`, `stdin` given to it.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        let mut command = Command::new(podstatus_tests_kubectl());
        command
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--request-timeout=30s")
            .args(args)
            .env("HOME", self.dir.join("home"))
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("kubectl runs");
        if let Some(text) = stdin {
            use std::io::Write;
            child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("kubectl reads its input");
        }
        child.wait_with_output().expect("kubectl ends")
    }

    /// kubectl as the admin, which must succeed; its stdout.
    pub fn admin(&self, args: &[&str]) -> String {
        succeeded(args, self.kubectl(args))
    }

    /// `object` created as the admin.
    pub fn create(&self, object: &Value) -> Value {
        let out = self.kubectl_as(
            self.plane.admin_kubeconfig(),
            &["create", "-o", "json", "-f", "-"],
            Some(&object.to_string()),
        );
        serde_json::from_str(&succeeded(&["create", "-f", "-"], out)).expect("kubectl prints JSON")
    }

    /// Waits until `count` Nodes (of those `args` select, as `kubectl get nodes ARGS`)
    /// are Ready.
    pub fn wait_ready_nodes(&self, count: usize, args: &[&str]) {
        common::wait_until(&format!("{count} Nodes Ready"), || {
            let nodes = self.get(&[&["nodes"], args].concat())?;
            let ready = nodes["items"]
                .as_array()?
                .iter()
                .filter(|node| common::condition(node, "Ready").is_some_and(|c| c["status"] == "True"))
                .count();
            (ready == count).then_some(())
        });
    }

    /// `kubectl get ARGS -o json` as the admin; `None` when it is not found.
    pub fn get(&self, args: &[&str]) -> Option<Value> {
        let mut all = vec!["get", "-o", "json"];
        all.extend_from_slice(args);
        let out = self.kubectl(&all);
        if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("NotFound") {
            return None;
        }
        Some(serde_json::from_str(&succeeded(&all, out)).expect("kubectl prints JSON"))
    }

    /// The kubeconfig of `node`'s own credential (`system:node:NODE`).
    pub fn node_kubeconfig(&self, node: &str) -> String {
        let kubeconfig = self.plane.node_kubeconfig(node).unwrap_or_else(|| panic!("no kubeconfig for {node}"));
        kubeconfig.to_string_lossy().into_owned()
    }

    /// `podstatus agent` for `node` with its own credential, and `args` after.
    pub fn agent(&self, node: &str, args: &[&str]) -> Process {
        let kubeconfig = self.node_kubeconfig(node);
        let mut all = vec![
            "agent",
            "--kubeconfig",
            &kubeconfig,
            "--node-name",
            node,
            "--node-lease-duration",
            "6s",
            "--node-status-update-frequency",
            "2s",
            "--sync-period",
            "2s",
        ];
        all.extend_from_slice(args);
        Process::spawn(&all)
    }

    /// Writes `file` (in the cluster's folder): a kubeconfig for ServiceAccount
    /// `account` of `namespace` with a token the server issues, its context in that
    /// namespace, as a pod of it has (what a fleet's own objects are looked for in).
    pub fn service_account_kubeconfig(&self, account: &str, namespace: &str, file: &str) -> std::path::PathBuf {
        let token = self.admin(&["create", "token", account, "-n", namespace, "--duration", "2h"]);
        let admin: Value = serde_json::from_str(&self.admin(&["config", "view", "--raw", "-o", "json"])).expect("JSON");
        let ca = admin.pointer("/clusters/0/cluster/certificate-authority-data").expect("the CA").clone();
        let kubeconfig = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {"server": self.plane.server(), "certificate-authority-data": ca}}],
            "users": [{"name": account, "user": {"token": token.trim()}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": account, "namespace": namespace}}],
            "current-context": "e2e",
        });
        let path = self.dir().join(file);
        std::fs::write(&path, kubeconfig.to_string()).expect("the kubeconfig");
        path
    }

    /// The scratch directory (beside the control plane's data).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.plane.kill();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A `podstatus` process of a test, killed if the test ends (passes or panics) without
/// stopping it: a failed test leaves no agent running behind it.
pub struct Process {
    child: Option<Child>,
    /// Its stderr, line by line.
    pub lines: Receiver<String>,
}

impl Process {
    /// `podstatus ARGS`.
    pub fn spawn(args: &[&str]) -> Self {
        let (child, lines) = common::spawn(args);
        Process { child: Some(child), lines }
    }

    /// Sends it `signal`.
    pub fn signal(&self, signal: libc::c_int) {
        common::signal(self.child.as_ref().expect("running"), signal);
    }

    /// SIGTERM, then its exit code and stderr.
    pub fn stop(mut self) -> (Option<i32>, String) {
        self.signal(libc::SIGTERM);
        self.wait()
    }

    /// Its exit code and stderr, once it exits by itself (within the tests' deadline).
    pub fn wait(&mut self) -> (Option<i32>, String) {
        common::wait(self.child.take().expect("running"), &self.lines)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn podstatus_tests_kubectl() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join("kubectl")).find(|p| p.is_file()))
        .expect("kubectl is not on the PATH: install it (`apt-get install kubernetes-client`, as .ci/run does)")
}

/// stdout of a kubectl run that must have succeeded.
pub fn succeeded(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "kubectl {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A pod for `node` in `namespace`, one container, a label and an annotation (which
/// no status write may take away).
pub fn pod(namespace: &str, name: &str, node: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}, "annotations": {"owner": "e2e"}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx:1.27"}]}
    })
}
