//! Kubernetes `Status` bodies: the shape every client expects an error in. kube-rs, for
//! one, cannot read an error that is not a `Status` with `status: "Failure"`, `reason`,
//! `code` and `message`. Built as k8s-openapi's [`Status`], so the shape is the
//! compiler's to check.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Status, StatusCause, StatusDetails};

use crate::excerpt::excerpt;
use podstatus_backends::ApiError;

/// One field-level reason of a 422 (`details.causes[]`), as kube-apiserver's field
/// validation gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, ...
    pub reason: &'static str,
    /// The field's path, e.g. `metadata.name`.
    pub field: String,
    /// The message, as in Kubernetes: `Invalid value: "x": ...`.
    pub message: String,
}

impl Cause {
    /// `field: Invalid value: "value": detail`.
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueInvalid",
            field: field.to_owned(),
            message: format!("Invalid value: \"{}\": {detail}", excerpt(value)),
        }
    }

    /// `field: Required value`.
    pub fn required(field: &str) -> Self {
        Self { reason: "FieldValueRequired", field: field.to_owned(), message: "Required value".into() }
    }

    /// `field: Required value: detail`.
    pub fn required_because(field: &str, detail: &str) -> Self {
        Self { reason: "FieldValueRequired", field: field.to_owned(), message: format!("Required value: {detail}") }
    }

    /// `field: Too long: may not be more than LIMIT bytes`.
    pub fn too_long(field: &str, limit: usize) -> Self {
        Self {
            reason: "FieldValueTooLong",
            field: field.to_owned(),
            message: format!("Too long: may not be more than {limit} bytes"),
        }
    }
}

/// A failed request, as the HTTP status code and the `Status` body to answer with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The HTTP status code, also the body's `code`.
    pub code: u16,
    /// Kubernetes' `reason`, what clients switch on ("NotFound", "Conflict", ...).
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// The pod the failure is about, for `details.name` (boxed: a `Failure` is the
    /// error of every handler, kept small).
    pub name: Option<Box<str>>,
    /// Field-level causes (`details.causes`), for 422 Invalid.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds` and the `Retry-After` header (429).
    pub retry_after_seconds: Option<u16>,
    /// `metadata.continue` (a 410 for an expired continue token).
    pub continue_token: Option<Box<str>>,
    /// `details.kind`: the resource (`pods`) a failure about an object names, or the kind
    /// (`Pod`) of an invalid one; none for a failure of the request itself (a 400, 405,
    /// 413, 415), whose `Status` kube-apiserver gives no details.
    pub kind: Option<&'static str>,
}

impl Failure {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            name: None,
            causes: Vec::new(),
            retry_after_seconds: None,
            continue_token: None,
            kind: None,
        }
    }

    /// Names the object a failure about one is about when it did not say (a conflict
    /// from the store knows no name): `details.name`, as kube-apiserver gives it.
    pub fn about(mut self, name: &str) -> Self {
        if self.name.is_none() && self.kind.is_some() {
            self.name = Some(excerpt(name).into());
        }
        self
    }

    /// 400: the request cannot be understood (unparsable body, bad selector, ...).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 404 for a path this server does not serve, worded as Kubernetes words it.
    pub fn no_such_path() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
    }

    /// 405: the path exists but not with this method (kube-apiserver's words; the
    /// method is left out as it leaves it out).
    pub fn method_not_allowed(_method: &http::Method) -> Self {
        Self::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    }

    /// 415: a body (POST, PUT) of a media type this server does not read, in
    /// kube-apiserver's words.
    pub fn unsupported_media_type(_content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf",
        )
    }

    /// 406: none of the media types the request accepts is one this path is served in
    /// (kube-apiserver's OpenAPI handler answers so, with no body of its own).
    pub fn not_acceptable() -> Self {
        Self::new(406, "NotAcceptable", "the server cannot answer in any media type the request accepts")
    }

    /// 415: a PATCH of a type this server does not apply (kube-apiserver's words for it).
    pub fn unsupported_patch_type() -> Self {
        Self::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
    }

    /// 410: a watch asked to resume from a resourceVersion whose events are gone; the
    /// client must list again.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(410, "Expired", format!("too old resource version: {requested} ({oldest})"))
    }

    /// 410 for a list continued from a snapshot the server no longer keeps (kube-apiserver's
    /// words for a token older than etcd's compaction). As kube-apiserver, it gives in
    /// `metadata.continue` a token (`inconsistent`) that goes on from the same key in the
    /// list as it is now: the client lists again, or takes the rest inconsistently.
    pub fn continue_expired(inconsistent: String) -> Self {
        let mut failure = Self::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new \
             list without the continue parameter, or use the continue token in this response to retrieve the \
             remainder of the results. Continuing with the provided token results in an inconsistent list - objects \
             that were created, modified, or deleted between the time the first chunk was returned and now may show \
             up in the list.",
        );
        failure.continue_token = Some(inconsistent.into_boxed_str());
        failure
    }

    /// 410 for a watcher cut off because it fell behind: it must list again.
    pub fn fell_behind() -> Self {
        Self::new(410, "Expired", "the watch fell behind the writes and was closed; list again")
    }

    /// 413: a request body over the limit (kube-apiserver's words).
    pub fn too_large(limit: usize) -> Self {
        Self::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    /// 413: a write that would store an object over the size etcd accepts.
    pub fn object_too_large(name: &str, size: usize, limit: usize) -> Self {
        let mut failure = Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: pods \"{name}\" would be {size} bytes, over the limit of {limit}"),
        );
        failure.name = Some(name.into());
        failure.kind = Some("pods");
        failure
    }

    /// 404 for an object of `resource` (a plural: `nodes`) that does not exist.
    pub fn not_found(resource: &'static str, name: &str) -> Self {
        Self::about_object(404, "NotFound", format!("{resource} \"{}\" not found", excerpt(name)), resource, name)
    }

    /// 409 `AlreadyExists`: a create of a name taken.
    pub fn already_exists(resource: &'static str, name: &str) -> Self {
        let message = format!("{resource} \"{}\" already exists", excerpt(name));
        Self::about_object(409, "AlreadyExists", message, resource, name)
    }

    /// 409 `Conflict`: a resourceVersion or UID precondition that does not hold.
    pub fn conflict(resource: &'static str, name: &str) -> Self {
        Self::conflict_because(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 `Conflict` about `kind` (`pods`; `Pod` for a DELETE's preconditions, as
    /// kube-apiserver names it there), saying why.
    pub fn conflict_because(kind: &'static str, name: &str, why: &str) -> Self {
        let message = format!("Operation cannot be fulfilled on {kind} \"{}\": {why}", excerpt(name));
        Self::about_object(409, "Conflict", message, kind, name)
    }

    /// 403 `Forbidden` past the server's object cap, worded as a ResourceQuota refusal.
    pub fn quota_exceeded(resource: &'static str, limit: usize) -> Self {
        let mut failure = Self::new(
            403,
            "Forbidden",
            format!("{resource} is forbidden: exceeded quota: the server holds at most {limit} objects"),
        );
        failure.kind = Some(resource);
        failure
    }

    fn about_object(code: u16, reason: &'static str, message: String, resource: &'static str, name: &str) -> Self {
        let mut failure = Self::new(code, reason, message);
        failure.kind = Some(resource);
        failure.name = Some(excerpt(name).into());
        failure
    }

    /// 429: no room now (connections, request bodies); try again in a second.
    pub fn too_many_requests() -> Self {
        let mut failure = Self::new(429, "TooManyRequests", "Too many requests, please try again later.");
        failure.retry_after_seconds = Some(1);
        failure
    }

    /// 504: the request did not arrive in time (kube-apiserver's request timeout).
    pub fn timeout() -> Self {
        Self::new(504, "Timeout", "Timeout: request did not complete within the allotted timeout")
    }

    /// 422 `Invalid` with its causes: `Pod "name" is invalid: cause, cause`, as
    /// kube-apiserver words it.
    pub fn invalid(name: &str, causes: Vec<Cause>) -> Self {
        Self::invalid_kind("Pod", name, causes)
    }

    /// [`Failure::invalid`] for an object of another kind (`Node "x" is invalid: ...`).
    pub fn invalid_kind(kind: &'static str, name: &str, causes: Vec<Cause>) -> Self {
        let listed: Vec<String> = causes.iter().map(|cause| format!("{}: {}", cause.field, cause.message)).collect();
        let listed = match listed.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let mut failure = Self::new(422, "Invalid", format!("{kind} \"{}\" is invalid: {listed}", excerpt(name)));
        // kube-apiserver names the kind here (`Pod`), not the resource, and no name
        // when the object has none.
        failure.name = (!name.is_empty()).then(|| excerpt(name).into());
        failure.kind = Some(kind);
        failure.causes = causes;
        failure
    }

    /// 422 `Invalid` without causes: a JSON patch whose `test` operation failed, in
    /// kube-apiserver's words.
    pub fn rejected_patch() -> Self {
        Self::new(422, "Invalid", "the server rejected our request due to an error in our request")
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Status {
        let causes = (!self.causes.is_empty()).then(|| {
            self.causes
                .iter()
                .map(|cause| StatusCause {
                    reason: Some(cause.reason.to_owned()),
                    field: Some(cause.field.clone()),
                    message: Some(cause.message.clone()),
                })
                .collect()
        });
        let details = StatusDetails {
            kind: self.kind.map(str::to_owned),
            name: self.name.as_deref().map(str::to_owned),
            causes,
            retry_after_seconds: self.retry_after_seconds.map(i32::from),
            ..StatusDetails::default()
        };
        Status {
            code: Some(i32::from(self.code)),
            details: (details != StatusDetails::default()).then_some(details),
            message: Some(self.message.clone()),
            metadata: ListMeta { continue_: self.continue_token.as_deref().map(str::to_owned), ..ListMeta::default() },
            reason: Some(self.reason.to_owned()),
            status: Some("Failure".into()),
        }
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        let name = match &error {
            ApiError::NotFound { name, .. } | ApiError::AlreadyExists { name, .. } => Some(name.clone()),
            _ => None,
        };
        // About a pod (the name of a conflict is added by the handler, which knows it).
        let kind =
            matches!(error, ApiError::NotFound { .. } | ApiError::AlreadyExists { .. } | ApiError::Conflict { .. })
                .then_some("pods");
        let mut failure = Self::new(error.code(), error.reason(), error.to_string());
        failure.name = name.map(String::into_boxed_str);
        failure.kind = kind;
        failure
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn api_errors_become_kubernetes_statuses() {
        let status = Failure::from(ApiError::NotFound { namespace: "ns".into(), name: "a".into() }).to_status();
        assert_eq!(
            serde_json::to_value(status).expect("JSON"),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "pods \"a\" not found", "reason": "NotFound",
                   "details": {"kind": "pods", "name": "a"}, "code": 404})
        );
        let conflict = Failure::from(ApiError::modified("a"));
        assert_eq!((conflict.code, conflict.reason), (409, "Conflict"));
    }

    #[test]
    fn invalid_lists_its_causes() {
        let failure = Failure::invalid(
            "A",
            vec![Cause::invalid("metadata.name", "A", "must be lowercase"), Cause::required("spec.containers")],
        );
        assert_eq!(
            failure.message,
            "Pod \"A\" is invalid: [metadata.name: Invalid value: \"A\": must be lowercase, spec.containers: Required value]"
        );
        let status = serde_json::to_value(failure.to_status()).expect("JSON");
        assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueInvalid");
        assert_eq!(status["details"]["causes"][1]["field"], "spec.containers");
        assert_eq!(status["code"], 422);
    }
}
