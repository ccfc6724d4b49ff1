//! `podstatus kube-apiserver`: a real Kubernetes control plane (etcd and kube-apiserver
//! of a release, from `upstream/cmd/controlplane`) to run the agent or a fleet against,
//! as the end-to-end tests do. Built with Go on first use (cached under `target/`), then
//! run in this process's place, so signals and output are the program's own.

use std::path::PathBuf;
use std::process::ExitCode;

use podstatus_upstream::{Program, Release, build_program};

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
        Err(e) => {
            eprintln!("podstatus kube-apiserver: {e}");
            return ExitCode::from(2);
        }
    };
    let mut command = std::process::Command::new(&program);
    command.arg("--data-dir").arg(&args.data_dir);
    for node in &args.nodes {
        command.args(["--node", node]);
    }
    for user in &args.users {
        command.args(["--user", user]);
    }
    if let Some(n) = args.max_requests_inflight {
        command.args(["--max-requests-inflight", &n.to_string()]);
    }
    for arg in &args.apiserver_args {
        command.args(["--apiserver-arg", arg]);
    }
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    eprintln!("podstatus kube-apiserver: running {}: {error}", program.display());
    ExitCode::from(2)
}
