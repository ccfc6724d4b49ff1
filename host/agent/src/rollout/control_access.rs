//! Who may use a fleet's control endpoint, and how the endpoint is reached
//! ([`ControlAccess`]). The endpoint swaps the plugin of every node, so a request is
//! authenticated and authorized before its body is read:
//!
//! - **a bearer token from a file** ([`ControlToken`], `--control-token-file`): its
//!   holder is the fleet's operator and may do everything; compared in constant time;
//! - **the Kubernetes way** (an [`AccessReviewer`], `--control-auth kubernetes`): the
//!   API server says who a bearer token is (a TokenReview) and whether that user may
//!   act on the rollout (a SubjectAccessReview of a verb on `pluginrollouts`), as the
//!   kubelet's own endpoint asks with `--authentication-token-webhook` and
//!   `--authorization-mode=Webhook`;
//! - **TLS** ([`ControlTls`]) for the connection.
//!
//! An endpoint with no authenticator takes every request, as it did before: it may
//! only listen on loopback ([`ControlAccess::check_listen`]). Beyond loopback it needs an
//! authenticator and TLS both: a bearer token sent in clear over a network is anyone's.
//!
//! [`ControlTls`]: super::ControlTls

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::control_tls::ControlTls;

/// The largest token file read (a service account's JWT is 1 to 2 KiB).
pub const MAX_TOKEN_FILE_BYTES: u64 = 4096;
/// The longest bearer token a client may present. Longer ones are refused (401) without
/// being hashed or sent to the API server for review.
pub const MAX_BEARER_BYTES: usize = 8192;
/// The name a token file's holder acts under (in logs and decisions).
pub const TOKEN_FILE_USER: &str = "podstatus:control-token";

/// The operator's token, read from a file; only its SHA-256 is kept, and a presented
/// token is hashed and compared in constant time, so neither the comparison's time nor
/// the token's length tells a client how close it came.
#[derive(Clone)]
pub struct ControlToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for ControlToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControlToken(..)")
    }
}

/// Why a token file was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ControlTokenError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than a token.
    #[error("{}: larger than {limit} bytes: not a token file", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// [`MAX_TOKEN_FILE_BYTES`].
        limit: u64,
    },
    /// Nothing but white space: every client would present the same "token".
    #[error("{}: empty: a token file holds one token", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Not one token of visible ASCII (a header value could not carry it).
    #[error("{}: not one token of visible ASCII characters (RFC 6750)", path.display())]
    NotAToken {
        /// The file.
        path: PathBuf,
    },
}

impl ControlToken {
    /// The token in `path`: one token of visible ASCII, white space around it ignored
    /// (a trailing newline is what editors and `kubectl create secret` leave).
    pub fn from_file(path: &Path) -> Result<ControlToken, ControlTokenError> {
        use std::io::Read;
        let read = |source| ControlTokenError::Read { path: path.to_owned(), source };
        let file = std::fs::File::open(path).map_err(read)?;
        let mut bytes = Vec::new();
        file.take(MAX_TOKEN_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(read)?;
        if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
            return Err(ControlTokenError::TooLarge { path: path.to_owned(), limit: MAX_TOKEN_FILE_BYTES });
        }
        let token = bytes.trim_ascii();
        if token.is_empty() {
            return Err(ControlTokenError::Empty { path: path.to_owned() });
        }
        if !token.iter().all(u8::is_ascii_graphic) {
            return Err(ControlTokenError::NotAToken { path: path.to_owned() });
        }
        Ok(ControlToken::new(token))
    }

    /// A token given as bytes.
    pub fn new(token: &[u8]) -> ControlToken {
        ControlToken { digest: Sha256::digest(token).into() }
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn matches(&self, presented: &[u8]) -> bool {
        let presented: [u8; 32] = Sha256::digest(presented).into();
        self.digest.ct_eq(&presented).into()
    }
}

/// Who sent a request, as the endpoint's authenticator found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The user name (`system:serviceaccount:NS:NAME`, an operator's name).
    pub user: String,
    /// The user's groups.
    pub groups: Vec<String>,
    /// The user's UID, when the authenticator gives one.
    pub uid: Option<String>,
    /// What else the authenticator says of the user (passed on to the access review).
    pub extra: BTreeMap<String, Vec<String>>,
    /// How the user was found.
    pub by: AuthenticatedBy,
}

/// How a request's user was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthenticatedBy {
    /// Not at all: the endpoint authenticates no one (loopback only).
    Nobody,
    /// The token of `--control-token-file`.
    TokenFile,
    /// A TokenReview of the API server.
    Kubernetes,
}

impl Identity {
    /// Whoever reaches an endpoint that authenticates no one.
    pub fn anonymous() -> Identity {
        Identity {
            user: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            uid: None,
            extra: BTreeMap::new(),
            by: AuthenticatedBy::Nobody,
        }
    }

    fn token_file() -> Identity {
        Identity {
            user: TOKEN_FILE_USER.into(),
            groups: vec!["system:authenticated".into()],
            uid: None,
            extra: BTreeMap::new(),
            by: AuthenticatedBy::TokenFile,
        }
    }
}

/// What a request would do to the rollout, as an access review asks it: a verb on the
/// `pluginrollouts` resource, in the fleet's namespace, of one rollout or any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlAction {
    /// `get` (read where the rollout stands), `create` (start a canary) or `update`
    /// (promote or roll back).
    pub verb: &'static str,
    /// The rollout acted on, when the fleet follows one by name.
    pub name: Option<String>,
}

/// What an access review answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// The user may.
    Allowed,
    /// The user may not, with the authorizer's reason (often empty).
    Denied {
        /// Why, as the authorizer said it.
        reason: String,
    },
}

/// Why a review could not be made (the request is then refused: 503, nothing done).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The API server refused or failed the review.
    #[error("the API server's review failed: {0}")]
    Api(#[source] Box<kube::Error>),
    /// The API server did not answer in time.
    #[error("the API server did not answer the review within {0:?}")]
    Timeout(Duration),
    /// The API server answered without a status.
    #[error("the API server answered the review without a status")]
    NoStatus,
}

/// Asks someone who knows (the API server) who a token is and what its user may do.
/// [`super::KubernetesReviewer`] asks Kubernetes; tests give fakes.
pub trait AccessReviewer: Send + Sync {
    /// Who `token` is; `None` when it is no one's (unknown, expired, revoked).
    fn review_token<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<Identity>, ReviewError>>;
    /// Whether `identity` may do `action`.
    fn review_access<'a>(
        &'a self,
        identity: &'a Identity,
        action: &'a ControlAction,
    ) -> BoxFuture<'a, Result<Access, ReviewError>>;
}

/// Why a request was refused before it reached the fleet.
#[derive(Debug, thiserror::Error)]
pub enum AccessDenied {
    /// No credential, a wrong one, or one no authenticator knows (401).
    #[error("unauthenticated: {0}")]
    Unauthenticated(&'static str),
    /// The user may not do this (403).
    #[error("forbidden: {user} may not {verb} {resource}{reason}", resource = super::ROLLOUT_RESOURCE)]
    Forbidden {
        /// Who asked.
        user: String,
        /// The verb asked for.
        verb: &'static str,
        /// `: ` and the authorizer's reason, or nothing.
        reason: String,
    },
    /// The API server could not say (503).
    #[error("{0}")]
    Review(#[from] ReviewError),
}

/// The endpoint refuses to listen here as it is guarded.
#[derive(Debug, thiserror::Error)]
pub enum UnguardedListen {
    /// Beyond loopback with no authenticator.
    #[error(
        "{0} is beyond loopback: the control endpoint swaps every node's plugin, so it needs \
         --control-token-file or --control-auth kubernetes there"
    )]
    NoAuthentication(SocketAddr),
    /// Beyond loopback without TLS.
    #[error(
        "{0} is beyond loopback: bearer tokens are not sent in clear over a network, so it needs \
         --control-tls-cert-file and --control-tls-private-key-file there"
    )]
    NoTls(SocketAddr),
}

impl UnguardedListen {
    /// Refuses `addr` beyond loopback for an endpoint that does not authenticate or
    /// does not serve TLS (for a caller that checks before its access is complete).
    pub fn check(addr: SocketAddr, authenticates: bool, tls: bool) -> Result<(), UnguardedListen> {
        if addr.ip().is_loopback() {
            Ok(())
        } else if !authenticates {
            Err(UnguardedListen::NoAuthentication(addr))
        } else if !tls {
            Err(UnguardedListen::NoTls(addr))
        } else {
            Ok(())
        }
    }
}

/// How the control endpoint is guarded; see the module documentation.
#[derive(Clone, Default)]
pub struct ControlAccess {
    token: Option<ControlToken>,
    reviewer: Option<Arc<dyn AccessReviewer>>,
    tls: Option<ControlTls>,
    rollout: Option<String>,
}

impl ControlAccess {
    /// Open to whoever reaches it: for loopback only.
    pub fn open() -> ControlAccess {
        ControlAccess::default()
    }

    /// Also authenticates the holder of `token` (who may do everything).
    pub fn with_token(self, token: ControlToken) -> ControlAccess {
        ControlAccess { token: Some(token), ..self }
    }

    /// Also authenticates and authorizes through `reviewer`.
    pub fn with_reviewer(self, reviewer: Arc<dyn AccessReviewer>) -> ControlAccess {
        ControlAccess { reviewer: Some(reviewer), ..self }
    }

    /// Serves over TLS.
    pub fn with_tls(self, tls: ControlTls) -> ControlAccess {
        ControlAccess { tls: Some(tls), ..self }
    }

    /// Names the rollout in every access review (`resourceAttributes.name`), so that
    /// RBAC can grant one rollout and not another.
    pub fn with_rollout_name(self, name: String) -> ControlAccess {
        ControlAccess { rollout: Some(name), ..self }
    }

    /// Whether requests must carry a credential.
    pub fn authenticates(&self) -> bool {
        self.token.is_some() || self.reviewer.is_some()
    }

    /// The TLS the endpoint serves with, if any.
    pub fn tls(&self) -> Option<&ControlTls> {
        self.tls.as_ref()
    }

    /// Refuses an address beyond loopback unless requests are authenticated and the
    /// connection is TLS.
    pub fn check_listen(&self, addr: SocketAddr) -> Result<(), UnguardedListen> {
        UnguardedListen::check(addr, self.authenticates(), self.tls.is_some())
    }

    /// Who sent a request with these headers: its bearer token checked against the
    /// token file, then reviewed by the API server.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Identity, AccessDenied> {
        if !self.authenticates() {
            return Ok(Identity::anonymous());
        }
        let token = bearer_token(headers)?;
        if let Some(expected) = &self.token
            && expected.matches(token.as_bytes())
        {
            return Ok(Identity::token_file());
        }
        let Some(reviewer) = &self.reviewer else {
            return Err(AccessDenied::Unauthenticated("the bearer token is not the control token"));
        };
        match reviewer.review_token(token).await? {
            Some(identity) if !identity.user.is_empty() => Ok(identity),
            _ => Err(AccessDenied::Unauthenticated("the API server does not know the bearer token")),
        }
    }

    /// Whether `identity` may `verb` the rollout: the token file's holder and an open
    /// endpoint's anyone may; a Kubernetes user as a SubjectAccessReview says.
    pub async fn authorize(&self, identity: &Identity, verb: &'static str) -> Result<(), AccessDenied> {
        match (identity.by, &self.reviewer) {
            (AuthenticatedBy::Nobody | AuthenticatedBy::TokenFile, _) => Ok(()),
            (AuthenticatedBy::Kubernetes, None) => {
                Err(AccessDenied::Forbidden { user: identity.user.clone(), verb, reason: ": no authorizer".into() })
            }
            (AuthenticatedBy::Kubernetes, Some(reviewer)) => {
                let action = ControlAction { verb, name: self.rollout.clone() };
                match reviewer.review_access(identity, &action).await? {
                    Access::Allowed => Ok(()),
                    Access::Denied { reason } => Err(AccessDenied::Forbidden {
                        user: identity.user.clone(),
                        verb,
                        reason: if reason.is_empty() { String::new() } else { format!(": {reason}") },
                    }),
                }
            }
        }
    }
}

/// The request's one `Authorization: Bearer TOKEN`, within [`MAX_BEARER_BYTES`].
fn bearer_token(headers: &HeaderMap) -> Result<&str, AccessDenied> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let value = values.next().ok_or(AccessDenied::Unauthenticated("no bearer token (Authorization: Bearer TOKEN)"))?;
    if values.next().is_some() {
        return Err(AccessDenied::Unauthenticated("more than one Authorization header"));
    }
    if value.len() > MAX_BEARER_BYTES + "Bearer ".len() {
        return Err(AccessDenied::Unauthenticated("the bearer token is over the limit of 8192 bytes"));
    }
    let value = value.to_str().map_err(|_| AccessDenied::Unauthenticated("the Authorization header is not ASCII"))?;
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AccessDenied::Unauthenticated("only bearer tokens are taken (Authorization: Bearer TOKEN)"));
    }
    let token = token.trim_matches(' ');
    if token.is_empty() {
        return Err(AccessDenied::Unauthenticated("an empty bearer token"));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(http::header::AUTHORIZATION, HeaderValue::from_str(value).expect("a header value"));
        }
        headers
    }

    #[test]
    fn a_token_matches_itself_only() {
        let token = ControlToken::new(b"s3cret");
        assert!(token.matches(b"s3cret"));
        for other in [&b"s3cre"[..], b"s3cret ", b"S3cret", b""] {
            assert!(!token.matches(other), "{other:?}");
        }
        assert_eq!(format!("{token:?}"), "ControlToken(..)", "the digest is not printed either");
    }

    #[test]
    fn token_files_hold_one_visible_token_within_the_limit() {
        let dir = std::env::temp_dir().join(format!("podstatus-control-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).expect("written");
            path
        };
        let token = ControlToken::from_file(&write("ok", b"  abc.DEF-123\n")).expect("a token");
        assert!(token.matches(b"abc.DEF-123"), "white space around it is not part of it");
        let too_large = vec![b'a'; MAX_TOKEN_FILE_BYTES as usize + 1];
        let cases: [(&str, &[u8], &str); 4] = [
            ("empty", b" \n\t", "empty"),
            ("spaced", b"two tokens", "visible ASCII"),
            ("binary", b"tok\x00en", "visible ASCII"),
            ("large", &too_large, "larger than 4096 bytes"),
        ];
        for (name, bytes, says) in cases {
            let error = ControlToken::from_file(&write(name, bytes)).expect_err(name);
            assert!(error.to_string().contains(says), "{name}: {error}");
        }
        let exactly = vec![b'a'; MAX_TOKEN_FILE_BYTES as usize];
        assert!(ControlToken::from_file(&write("exact", &exactly)).is_ok(), "the limit itself is taken");
        let missing = ControlToken::from_file(&dir.join("missing")).expect_err("no file");
        assert!(matches!(missing, ControlTokenError::Read { .. }), "{missing}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bearer_token_is_the_one_authorization_header_within_the_limit() {
        assert_eq!(bearer_token(&headers(&["Bearer abc"])).ok(), Some("abc"));
        assert_eq!(bearer_token(&headers(&["bearer  abc "])).ok(), Some("abc"), "the scheme in any case");
        for (sent, says) in [
            (vec![], "no bearer token"),
            (vec!["Basic YWxhZGRpbjpvcGVu"], "only bearer tokens"),
            (vec!["Bearer"], "an empty bearer token"),
            (vec!["Bearer a", "Bearer b"], "more than one"),
        ] {
            let error = bearer_token(&headers(&sent)).expect_err(says);
            assert!(error.to_string().contains(says), "{sent:?}: {error}");
        }
        let long = format!("Bearer {}", "t".repeat(MAX_BEARER_BYTES + 1));
        let error = bearer_token(&headers(&[&long])).expect_err("too long");
        assert!(error.to_string().contains("over the limit of 8192 bytes"), "{error}");
        let at_limit = format!("Bearer {}", "t".repeat(MAX_BEARER_BYTES));
        assert!(bearer_token(&headers(&[&at_limit])).is_ok(), "the limit itself is taken");
    }

    #[test]
    fn beyond_loopback_the_endpoint_needs_an_authenticator_and_tls() {
        let loopback: SocketAddr = "127.0.0.1:10350".parse().expect("addr");
        let wide: SocketAddr = "0.0.0.0:10350".parse().expect("addr");
        assert!(ControlAccess::open().check_listen(loopback).is_ok());
        assert!(ControlAccess::open().check_listen("[::1]:10350".parse().expect("addr")).is_ok());
        let open = ControlAccess::open().check_listen(wide).expect_err("open beyond loopback");
        assert!(matches!(open, UnguardedListen::NoAuthentication(_)), "{open}");
        let token = ControlAccess::open().with_token(ControlToken::new(b"t"));
        let clear = token.check_listen(wide).expect_err("a token in clear");
        assert!(matches!(clear, UnguardedListen::NoTls(_)), "{clear}");
    }
}
