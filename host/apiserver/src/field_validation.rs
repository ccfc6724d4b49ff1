//! `fieldValidation`: what a write does with fields the kind does not have, as
//! kube-apiserver does it. `Strict` refuses the write (400, every unknown field named),
//! `Warn` drops them and says so in `Warning` headers, `Ignore` drops them silently.
//! kubectl sends `Strict` with `apply` and `create` (its `--validate`, default
//! `strict`) once the OpenAPI document says the server takes the parameter, and then
//! validates nothing itself: a typo in a manifest is refused here or nowhere.
//!
//! One difference: without the parameter kube-apiserver warns (`Warn`); this server
//! then checks nothing (`Ignore`), so that the status writes of a node agent, which
//! never send it, cost no second encoding of the pod.

use serde_json::Value;

use crate::excerpt::excerpt;
use crate::response::Body;
use crate::status_body::Failure;

/// Unknown fields named in one error or in warnings at most; a body of a hundred
/// thousand made-up fields is told about the first ones and how many more.
const MAX_NAMED: usize = 20;

/// The `fieldValidation` directive of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Unknown fields are dropped (also: the parameter absent, see the module).
    Ignore,
    /// Unknown fields are dropped, one `Warning` header each.
    Warn,
    /// A write with an unknown field is refused.
    Strict,
}

impl FieldValidation {
    /// The request's directive, its `fieldValidation` parameter; a value kube-apiserver
    /// does not know is a 400 in its words.
    pub fn of(param: Option<&str>) -> Result<Self, Failure> {
        match param {
            None | Some("" | "Ignore") => Ok(Self::Ignore),
            Some("Warn") => Ok(Self::Warn),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(Failure::bad_request(format!(
                "fieldValidation: Unsupported value: \"{}\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                excerpt(other)
            ))),
        }
    }

    /// Whether anything is to be checked.
    pub fn checks(self) -> bool {
        self != Self::Ignore
    }

    /// Judges `given` (a body, or a patched object) against `kept`, what its kind's
    /// type keeps of it: the warnings to send, or the 400 of a strict write of a `kind`.
    pub fn judge(self, given: &Value, kept: &Value, kind: &str) -> Result<Vec<String>, Failure> {
        if !self.checks() {
            return Ok(Vec::new());
        }
        let mut unknown = Vec::new();
        let mut count = 0;
        unknown_fields(given, kept, &mut String::new(), &mut unknown, &mut count);
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut named: Vec<String> = unknown.iter().map(|path| format!("unknown field \"{path}\"")).collect();
        if count > named.len() {
            named.push(format!("and {} more unknown fields", count - named.len()));
        }
        match self {
            Self::Strict => Err(Failure::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: strict decoding error: {}",
                named.join(", ")
            ))),
            _ => Ok(named),
        }
    }
}

/// Appends to `out` (at most [`MAX_NAMED`], all counted in `count`) the paths of the
/// fields `given` has and `kept` lacks, as kube-apiserver writes them
/// (`spec.containers[0].imagee`). A field given as `null` is not one: it says "none".
fn unknown_fields(given: &Value, kept: &Value, path: &mut String, out: &mut Vec<String>, count: &mut usize) {
    match (given, kept) {
        (Value::Object(given), Value::Object(kept)) => {
            for (key, value) in given {
                let at = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&excerpt(key));
                match kept.get(key) {
                    Some(kept) => unknown_fields(value, kept, path, out, count),
                    None if value.is_null() => {}
                    None => {
                        *count += 1;
                        if out.len() < MAX_NAMED {
                            out.push(path.clone());
                        }
                    }
                }
                path.truncate(at);
            }
        }
        (Value::Array(given), Value::Array(kept)) => {
            for (index, (value, kept)) in given.iter().zip(kept).enumerate() {
                let at = path.len();
                path.push_str(&format!("[{index}]"));
                unknown_fields(value, kept, path, out, count);
                path.truncate(at);
            }
        }
        _ => {}
    }
}

/// `response` with one `Warning` header per warning, as kube-apiserver sends them
/// (code 299, the text quoted).
pub(crate) fn warned(mut response: http::Response<Body>, warnings: &[String]) -> http::Response<Body> {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = http::HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;

    fn kept(given: &Value) -> Value {
        let pod: Pod = serde_json::from_value(given.clone()).expect("a pod");
        serde_json::to_value(pod).expect("encodes")
    }

    #[test]
    fn unknown_fields_are_named_by_their_path() {
        let given = json!({
            "metadata": {"name": "web", "labelz": {"a": "b"}, "labels": {"any-key": "is data"}},
            "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "imagee": "i", "ports": null}]},
            "status": {"phase": "Pending"},
            "extra": null
        });
        let warnings = FieldValidation::Warn.judge(&given, &kept(&given), "Pod").expect("warned, not refused");
        assert_eq!(warnings, ["unknown field \"metadata.labelz\"", "unknown field \"spec.containers[1].imagee\""]);
        let refused = FieldValidation::Strict.judge(&given, &kept(&given), "Pod").expect_err("strict refuses");
        assert_eq!(refused.code, 400);
        assert_eq!(
            refused.message,
            "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \
             \"metadata.labelz\", unknown field \"spec.containers[1].imagee\""
        );
        assert_eq!(FieldValidation::Ignore.judge(&given, &kept(&given), "Pod").expect("ignored"), Vec::<String>::new());
        let clean = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a", "emptyDir": null}]}});
        assert!(FieldValidation::Strict.judge(&clean, &kept(&clean), "Pod").is_ok());
    }

    #[test]
    fn a_flood_of_unknown_fields_is_counted_not_listed() {
        let mut metadata = serde_json::Map::new();
        metadata.insert("name".into(), json!("web"));
        for n in 0..1000 {
            metadata.insert(format!("made-up-{n}"), json!(n));
        }
        let given = json!({"metadata": metadata, "spec": {"containers": []}});
        let warnings = FieldValidation::Warn.judge(&given, &kept(&given), "Pod").expect("warned");
        assert_eq!(warnings.len(), MAX_NAMED + 1);
        assert_eq!(warnings[MAX_NAMED], "and 980 more unknown fields");
    }
}
