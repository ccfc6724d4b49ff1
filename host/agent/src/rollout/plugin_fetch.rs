//! A rollout's plugin bytes, had from where its `PluginRollout` says (a file in a
//! mounted volume, or a URL fetched over HTTP/1.1, TLS with the system's roots) and
//! checked against the digest it names before anything compiles them
//! ([`fetch_verified`]). Bytes that do not match are refused, whoever served them: the
//! digest, not the source, says which plugin this is.
//!
//! Bounded as a plugin file is: no more than the runtime's component limit is read,
//! from a URL within [`FETCH_TIMEOUT`], and only a 200 answer is taken (no redirect is
//! followed: a URL names the bytes, not a place to look for them).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use podstatus_rollout_api::PluginSource;
use podstatus_runtime::PluginRuntime;
use sha2::{Digest, Sha256};

/// How long fetching a plugin by URL may take, connection to last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a rollout's plugin was refused.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The file could not be read.
    #[error("reading the plugin {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The URL could not be fetched.
    #[error("fetching the plugin {url}: {message}")]
    Url {
        /// The URL.
        url: String,
        /// Why.
        message: String,
    },
    /// The bytes are more than a plugin may be.
    #[error("the plugin is over the limit of {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The bytes are not the ones the rollout names.
    #[error("the plugin's bytes have sha256 {got}, not the {want} the rollout names: refused")]
    Digest {
        /// Their digest.
        got: String,
        /// The rollout's.
        want: String,
    },
}

/// The plugin `source` names, its digest checked, read within `plugins`' size limit.
pub fn fetch_verified(
    source: &PluginSource,
    plugins: &PluginRuntime,
    runtime: &tokio::runtime::Handle,
) -> Result<Vec<u8>, FetchError> {
    let limit = plugins.limits().max_component_bytes;
    let bytes = match (&source.file, &source.url) {
        (Some(path), _) => plugins
            .read_file(Path::new(path))
            .map_err(|e| FetchError::File { path: path.clone(), message: e.to_string() })?,
        (None, Some(url)) => runtime
            .block_on(async { tokio::time::timeout(FETCH_TIMEOUT, fetch_url(url, limit)).await })
            .unwrap_or_else(|_| Err(format!("no answer within {FETCH_TIMEOUT:?}")))
            .map_err(|message| FetchError::Url { url: url.clone(), message })?,
        (None, None) => return Err(FetchError::File { path: String::new(), message: "no file and no URL".into() }),
    };
    if bytes.len() as u64 > limit {
        return Err(FetchError::TooLarge { limit });
    }
    let got = hex(&Sha256::digest(&bytes));
    if got != source.sha256 {
        return Err(FetchError::Digest { got, want: source.sha256.clone() });
    }
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// GET `url`'s body: one more byte than `limit` at most (for the caller to refuse).
async fn fetch_url(url: &str, limit: u64) -> Result<Vec<u8>, String> {
    let uri: http::Uri = url.parse().map_err(|e: http::uri::InvalidUri| e.to_string())?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err("not an http:// or https:// URL".into()),
    };
    let host = uri.host().ok_or("no host")?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await.map_err(|e| e.to_string())?;
    let path = uri.path_and_query().map_or("/", |pq| pq.as_str()).to_owned();
    let authority = uri.authority().map_or_else(|| host.clone(), |a| a.to_string());
    if https {
        let name = rustls::pki_types::ServerName::try_from(host).map_err(|e| e.to_string())?;
        let stream = tls_connector()?.connect(name, tcp).await.map_err(|e| e.to_string())?;
        get(TokioIo::new(stream), &authority, &path, limit).await
    } else {
        get(TokioIo::new(tcp), &authority, &path, limit).await
    }
}

/// A TLS client trusting the system's roots, on ring.
fn tls_connector() -> Result<tokio_rustls::TlsConnector, String> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err("no trusted root certificates on this system".into());
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

async fn get<I>(io: I, authority: &str, path: &str, limit: u64) -> Result<Vec<u8>, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.map_err(|e| e.to_string())?;
    let connection = tokio::spawn(connection);
    let request = http::Request::get(path)
        .header(http::header::HOST, authority)
        .header(http::header::USER_AGENT, "podstatus-fleet")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    if response.status() != http::StatusCode::OK {
        connection.abort();
        return Err(format!("answered {}", response.status()));
    }
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        if let Ok(data) = frame.into_data() {
            bytes.extend_from_slice(&data);
            if bytes.len() as u64 > limit {
                break;
            }
        }
    }
    connection.abort();
    Ok(bytes)
}
