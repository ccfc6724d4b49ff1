//! TLS for the control endpoint: a certificate chain and its private key from PEM
//! files (`--control-tls-cert-file`, `--control-tls-private-key-file`, as the kubelet's
//! `--tls-cert-file` and `--tls-private-key-file`), served by rustls on ring, the
//! provider the kube client already links (no second crypto library).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The largest PEM file read: a chain of a few certificates is a few KiB.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// A TLS server configuration for the endpoint (cheap to clone).
#[derive(Clone)]
pub struct ControlTls {
    config: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for ControlTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControlTls(..)")
    }
}

/// Why the TLS files were not taken.
#[derive(Debug, thiserror::Error)]
pub enum ControlTlsError {
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A file is larger than a PEM file of a few certificates.
    #[error("{}: larger than {limit} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// [`MAX_PEM_BYTES`].
        limit: u64,
    },
    /// The certificate file holds no PEM certificate.
    #[error("{}: no PEM certificate in it", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no PEM private key.
    #[error("{}: no PEM private key in it ({why})", path.display())]
    NoKey {
        /// The file.
        path: PathBuf,
        /// What the PEM reader said.
        why: String,
    },
    /// rustls refused the pair (the key is not the certificate's, or of an unsupported
    /// kind).
    #[error("the certificate and key: {0}")]
    Config(#[source] rustls::Error),
}

impl ControlTls {
    /// The certificate chain in `cert` (the server's certificate first) and the private
    /// key in `key`, both PEM.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<ControlTls, ControlTlsError> {
        let cert_pem = read_bounded(cert)?;
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(&cert_pem).filter_map(Result::ok).collect();
        if chain.is_empty() {
            return Err(ControlTlsError::NoCertificate { path: cert.to_owned() });
        }
        let key_pem = read_bounded(key)?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|e| ControlTlsError::NoKey { path: key.to_owned(), why: e.to_string() })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(ControlTlsError::Config)?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)
            .map_err(ControlTlsError::Config)?;
        // The endpoint speaks HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ControlTls { config: Arc::new(config) })
    }

    /// The acceptor of a connection's handshake.
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.config))
    }
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, ControlTlsError> {
    use std::io::Read;
    let read = |source| ControlTlsError::Read { path: path.to_owned(), source };
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(read)?.take(MAX_PEM_BYTES + 1).read_to_end(&mut bytes).map_err(read)?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(ControlTlsError::TooLarge { path: path.to_owned(), limit: MAX_PEM_BYTES });
    }
    Ok(bytes)
}
