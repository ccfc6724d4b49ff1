//! Kubernetes `Status` bodies: the shape every client expects an error in. kube-rs, for
//! one, cannot read an error that is not a `Status` with `status: "Failure"`, `reason`,
//! `code` and `message`.

use serde_json::{Value, json};

use podstatus_backends::ApiError;

/// A failed request, as the HTTP status code and the `Status` body to answer with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The HTTP status code, also the body's `code`.
    pub code: u16,
    /// Kubernetes' `reason`, what clients switch on ("NotFound", "Conflict", ...).
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// The pod the failure is about, for `details.name`.
    pub name: Option<String>,
}

impl Failure {
    /// 400: the request cannot be understood (unparsable body, bad selector, ...).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { code: 400, reason: "BadRequest", message: message.into(), name: None }
    }

    /// 404 for a path this server does not serve, worded as Kubernetes words it.
    pub fn no_such_path() -> Self {
        Self {
            code: 404,
            reason: "NotFound",
            message: "the server could not find the requested resource".into(),
            name: None,
        }
    }

    /// 405: the path exists but not with this method.
    pub fn method_not_allowed(method: &http::Method) -> Self {
        Self {
            code: 405,
            reason: "MethodNotAllowed",
            message: format!("the server does not allow this method on the requested resource ({method})"),
            name: None,
        }
    }

    /// 415: a PATCH of a kind this server does not apply.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self {
            code: 415,
            reason: "UnsupportedMediaType",
            message: format!("the body of the request was in an unknown format: {content_type}"),
            name: None,
        }
    }

    /// 410: a watch asked to resume from a resourceVersion whose events are gone; the
    /// client must list again.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self {
            code: 410,
            reason: "Expired",
            message: format!("too old resource version: {requested} ({oldest})"),
            name: None,
        }
    }

    /// 410 for a watcher cut off because it fell behind: it must list again.
    pub fn fell_behind() -> Self {
        Self {
            code: 410,
            reason: "Expired",
            message: "the watch fell behind the writes and was closed; list again".into(),
            name: None,
        }
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut details = json!({ "kind": "pods" });
        if let Some(name) = &self.name {
            details["name"] = json!(name);
        }
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": details,
            "code": self.code,
        })
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        let name = match &error {
            ApiError::NotFound { name, .. } | ApiError::AlreadyExists { name, .. } => Some(name.clone()),
            _ => None,
        };
        Self { code: error.code(), reason: error.reason(), message: error.to_string(), name }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_become_kubernetes_statuses() {
        let status = Failure::from(ApiError::NotFound { namespace: "ns".into(), name: "a".into() }).to_status();
        assert_eq!(
            status,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "pods \"a\" not found", "reason": "NotFound",
                   "details": {"kind": "pods", "name": "a"}, "code": 404})
        );
        let conflict = Failure::from(ApiError::modified("a"));
        assert_eq!((conflict.code, conflict.reason), (409, "Conflict"));
    }
}
