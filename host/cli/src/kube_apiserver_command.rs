//! `podstatus kube-apiserver`: a real Kubernetes control plane (etcd and kube-apiserver
//! of a release, from `upstream/cmd/controlplane`) to run the agent or a fleet against,
//! as the end-to-end tests do. Built with Go on first use (cached under `target/`), then
//! run in this process's place, so signals and output are the program's own.

use std::path::PathBuf;
use std::process::ExitCode;

use podstatus_upstream::{ControlPlaneConfig, Program, Release, build_program};

/// `podstatus kube-apiserver`'s options.
#[derive(clap::Args, Debug)]
pub struct KubeApiserverArgs {
    /// The Kubernetes release: `1.35` (what logic v4 follows), `1.36` or `1.37` (the
    /// newest served).
    #[arg(long, default_value = "1.35", value_parser = release)]
    kubernetes: Release,
    /// Where etcd's data, the certificates, the ports and the kubeconfigs live; the same
    /// directory starts the same cluster again.
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// Write a kubeconfig for node NAME (`system:node:NAME` in `system:nodes`: what
    /// `podstatus agent --kubeconfig` runs as). Repeatable.
    #[arg(long = "node", value_name = "NAME")]
    nodes: Vec<String>,
    /// Write a kubeconfig for user NAME in these groups (`NAME=GROUP,GROUP`). Repeatable.
    #[arg(long = "user", value_name = "NAME[=GROUPS]")]
    users: Vec<String>,
    /// Plain in-flight limits of N (429 with Retry-After past them) instead of priority
    /// and fairness.
    #[arg(long, value_name = "N")]
    max_requests_inflight: Option<u32>,
    /// One more kube-apiserver flag (`--apiserver-arg=--watch-cache=false`). Repeatable.
    #[arg(long = "apiserver-arg", value_name = "FLAG", allow_hyphen_values = true)]
    apiserver_args: Vec<String>,
}

/// `NAME=GROUP,GROUP` (or `NAME`) as a name and its groups.
fn user_and_groups(user: &str) -> (String, Vec<String>) {
    let (name, groups) = user.split_once('=').unwrap_or((user, ""));
    (name.to_owned(), groups.split(',').filter(|g| !g.is_empty()).map(str::to_owned).collect())
}

fn release(name: &str) -> Result<Release, String> {
    let served: Vec<String> =
        podstatus_upstream::RELEASES.iter().filter(|r| r.control_plane).map(|r| r.minor().to_owned()).collect();
    Release::named(name)
        .filter(|release| release.control_plane)
        .ok_or_else(|| format!("no control plane for {name}; one of {}", served.join(", ")))
}

pub fn run(args: &KubeApiserverArgs) -> ExitCode {
    eprintln!(
        "podstatus kube-apiserver: building the control plane of Kubernetes {} (Go; cached)",
        args.kubernetes.version
    );
    let program = match build_program(Program::ControlPlane, args.kubernetes) {
        Ok(program) => program,
        Err(e) => return crate::failure::fail("kube-apiserver", &e.into()),
    };
    let config = ControlPlaneConfig {
        nodes: args.nodes.clone(),
        users: args.users.iter().map(|user| user_and_groups(user)).collect(),
        max_requests_inflight: args.max_requests_inflight,
        apiserver_args: args.apiserver_args.clone(),
        ..ControlPlaneConfig::new(args.kubernetes, &args.data_dir)
    };
    // Run in this process's place: stdin stays the user's, so no --exit-with-stdin.
    let mut command = std::process::Command::new(&program);
    command.args(config.args(false));
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    crate::failure::fail("kube-apiserver", &anyhow::Error::new(error).context(format!("running {}", program.display())))
}
