//! Where the API server client's configuration comes from, like every Kubernetes tool:
//! an explicit kubeconfig (`--kubeconfig`), `KUBECONFIG` / `~/.kube/config` / the
//! in-cluster service account (kube's `Config::infer`), or a plain server URL (the
//! embedded server on a loopback port, which needs no credentials).

use std::path::PathBuf;

use kube::config::{InferConfigError, KubeConfigOptions, Kubeconfig, KubeconfigError};

/// Where to find the API server and the credentials for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientSource {
    /// This kubeconfig file (`--kubeconfig PATH`), at `context` or its current context
    /// (`--context NAME`).
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// The context to use instead of the file's current one.
        context: Option<String>,
    },
    /// `KUBECONFIG`, else `~/.kube/config`, else the in-cluster service account; with a
    /// context, that context of the kubeconfig (in-cluster has none).
    Infer {
        /// The context to use instead of the current one.
        context: Option<String>,
    },
    /// A server URL, `http://` or `https://`, without credentials (`--server URL`).
    Url(String),
}

/// Why no client could be configured.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig file could not be read or used.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file given.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: KubeconfigError,
    },
    /// The default kubeconfig has no usable context of the name given.
    #[error("kubeconfig (KUBECONFIG or ~/.kube/config): {0}")]
    Context(#[source] KubeconfigError),
    /// Neither a kubeconfig nor an in-cluster configuration was found.
    #[error("no Kubernetes configuration found (KUBECONFIG, ~/.kube/config, in-cluster): {0}")]
    Infer(#[source] InferConfigError),
    /// The server URL does not parse.
    #[error("API server URL {url:?}: {source}")]
    Url {
        /// The URL given.
        url: String,
        /// The parse error.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// The server URL lacks an `http://` or `https://` scheme or a host.
    #[error("API server URL {url:?}: expected http://HOST[:PORT] or https://HOST[:PORT]")]
    UrlShape {
        /// The URL given.
        url: String,
    },
    /// kube-rs could not build a client from the configuration (TLS, auth, proxy).
    #[error("building the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

/// The kube-rs configuration `source` names, with kube's own retries of 429/503/504
/// turned off: [`super::KubeApiServer`] calls under the plugin lock, where
/// retries would wait uncounted by the rate limit; the status manager retries from its
/// batch sync instead. Reads files (and may run nothing else): async only because kube's
/// loaders are.
pub async fn load_config(source: &ClientSource) -> Result<kube::Config, ConnectError> {
    let mut config = match source {
        ClientSource::Kubeconfig { path, context } => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|source| ConnectError::Kubeconfig { path: path.clone(), source })?;
            let options = KubeConfigOptions { context: context.clone(), ..KubeConfigOptions::default() };
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|source| ConnectError::Kubeconfig { path: path.clone(), source })?
        }
        ClientSource::Infer { context: None } => kube::Config::infer().await.map_err(ConnectError::Infer)?,
        ClientSource::Infer { context: Some(context) } => {
            let options = KubeConfigOptions { context: Some(context.clone()), ..KubeConfigOptions::default() };
            kube::Config::from_kubeconfig(&options).await.map_err(ConnectError::Context)?
        }
        ClientSource::Url(url) => {
            let uri: http::Uri = url.parse().map_err(|source| ConnectError::Url { url: url.clone(), source })?;
            let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
            if !scheme_ok || uri.host().is_none() {
                return Err(ConnectError::UrlShape { url: url.clone() });
            }
            kube::Config::new(uri)
        }
    };
    config.default_retry = false;
    Ok(config)
}

/// A kube-rs client for `source` (see `load_config`). Must run inside the tokio
/// runtime that will carry the requests (kube spawns its connection pool's tasks
/// there): from a plain thread, `handle.block_on(connect(&source))`.
pub async fn connect(source: &ClientSource) -> Result<kube::Client, ConnectError> {
    let config = load_config(source).await?;
    kube::Client::try_from(config).map_err(ConnectError::Client)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    #[test]
    fn a_plain_url_configures_a_client_without_credentials() {
        let runtime = runtime();
        let config = runtime.block_on(load_config(&ClientSource::Url("http://127.0.0.1:8080".into()))).unwrap();
        assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:8080/");
        assert!(!config.default_retry);
        runtime.block_on(connect(&ClientSource::Url("https://example.invalid:6443".into()))).unwrap();
    }

    #[test]
    fn a_url_without_scheme_or_host_is_refused() {
        let runtime = runtime();
        for url in ["127.0.0.1:8080", "ftp://host", "/api"] {
            let error = runtime.block_on(load_config(&ClientSource::Url(url.into()))).unwrap_err();
            assert!(matches!(error, ConnectError::UrlShape { .. }), "{url}: {error}");
        }
        let error = runtime.block_on(load_config(&ClientSource::Url("http://a b".into()))).unwrap_err();
        assert!(matches!(error, ConnectError::Url { .. }), "{error}");
    }

    #[test]
    fn a_kubeconfig_file_gives_its_current_context() {
        let dir = std::env::temp_dir().join(format!("podstatus-kubeconfig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: dev\n\
             clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:6443\n\
             - name: p\n  cluster:\n    server: http://127.0.0.2:6443\n\
             contexts:\n- name: dev\n  context:\n    cluster: c\n    user: u\n    namespace: team\n\
             - name: prod\n  context:\n    cluster: p\n    user: u\n\
             users:\n- name: u\n  user:\n    token: secret\n",
        )
        .unwrap();
        let runtime = runtime();
        let file =
            |context: Option<&str>| ClientSource::Kubeconfig { path: path.clone(), context: context.map(Into::into) };
        let config = runtime.block_on(load_config(&file(None))).unwrap();
        assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:6443/");
        assert_eq!(config.default_namespace, "team");
        assert!(!config.default_retry);
        let other = runtime.block_on(load_config(&file(Some("prod")))).unwrap();
        assert_eq!(other.cluster_url.to_string(), "http://127.0.0.2:6443/", "--context picks its cluster");
        let error = runtime.block_on(load_config(&file(Some("nope")))).unwrap_err();
        assert!(matches!(error, ConnectError::Kubeconfig { .. }), "{error}");

        let missing = dir.join("missing");
        let error = runtime
            .block_on(load_config(&ClientSource::Kubeconfig { path: missing.clone(), context: None }))
            .unwrap_err();
        assert!(matches!(&error, ConnectError::Kubeconfig { path, .. } if *path == missing), "{error}");
        std::fs::write(&path, "not: [a kubeconfig").unwrap();
        let error = runtime.block_on(load_config(&file(None))).unwrap_err();
        assert!(matches!(error, ConnectError::Kubeconfig { .. }), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
