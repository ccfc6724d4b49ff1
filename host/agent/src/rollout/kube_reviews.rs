//! The control endpoint's reviewer in a cluster ([`KubernetesReviewer`]): a TokenReview
//! says who a bearer token is, a SubjectAccessReview whether that user may act on the
//! rollout, both asked of the fleet's own API server with the fleet's own identity
//! (which needs `create` on `tokenreviews` and `subjectaccessreviews`: the
//! `system:auth-delegator` ClusterRole, bound in `host/deploy/`).
//!
//! Nothing is cached: a control request is an operator's, seconds apart at most, and a
//! revoked token or binding then takes effect at the next request. The endpoint's
//! connection and request limits bound what a flood of requests can ask of the API
//! server.

use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};

use super::control_access::{Access, AccessReviewer, AuthenticatedBy, ControlAction, Identity, ReviewError};
use super::resource::{ROLLOUT_GROUP, ROLLOUT_RESOURCE, ROLLOUT_VERSION};

/// How long a review may take before the request is refused (503).
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// Reviews through the Kubernetes API; see the module documentation.
#[derive(Clone)]
pub struct KubernetesReviewer {
    client: kube::Client,
    namespace: Option<String>,
    timeout: Duration,
}

impl KubernetesReviewer {
    /// Reviews through `client`, asking about rollouts in `namespace` (the fleet's; all
    /// namespaces when `None`).
    pub fn new(client: kube::Client, namespace: Option<String>) -> KubernetesReviewer {
        KubernetesReviewer { client, namespace, timeout: REVIEW_TIMEOUT }
    }

    /// Reviews through `client`, asking about rollouts in its default namespace: a
    /// pod's own, or its kubeconfig context's.
    pub fn in_default_namespace(client: &kube::Client) -> KubernetesReviewer {
        KubernetesReviewer::new(client.clone(), Some(client.default_namespace().to_owned()))
    }

    async fn token(&self, token: &str) -> Result<Option<Identity>, ReviewError> {
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let review = TokenReview {
            spec: TokenReviewSpec { token: Some(token.to_owned()), audiences: None },
            ..TokenReview::default()
        };
        let answer = tokio::time::timeout(self.timeout, api.create(&PostParams::default(), &review))
            .await
            .map_err(|_| ReviewError::Timeout(self.timeout))?
            .map_err(|e| ReviewError::Api(Box::new(e)))?;
        let status = answer.status.ok_or(ReviewError::NoStatus)?;
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        let user = status.user.unwrap_or_default();
        Ok(Some(Identity {
            user: user.username.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
            uid: user.uid,
            extra: user.extra.unwrap_or_default(),
            by: AuthenticatedBy::Kubernetes,
        }))
    }

    async fn access(&self, identity: &Identity, action: &ControlAction) -> Result<Access, ReviewError> {
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(identity.user.clone()),
                groups: Some(identity.groups.clone()),
                uid: identity.uid.clone(),
                extra: (!identity.extra.is_empty()).then(|| identity.extra.clone()),
                resource_attributes: Some(ResourceAttributes {
                    group: Some(ROLLOUT_GROUP.into()),
                    version: Some(ROLLOUT_VERSION.into()),
                    resource: Some(ROLLOUT_RESOURCE.into()),
                    verb: Some(action.verb.into()),
                    namespace: self.namespace.clone(),
                    name: action.name.clone(),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = tokio::time::timeout(self.timeout, api.create(&PostParams::default(), &review))
            .await
            .map_err(|_| ReviewError::Timeout(self.timeout))?
            .map_err(|e| ReviewError::Api(Box::new(e)))?;
        let status = answer.status.ok_or(ReviewError::NoStatus)?;
        // `denied` is an explicit no that no later authorizer can overturn; `allowed`
        // alone is the answer otherwise.
        if status.allowed && status.denied != Some(true) {
            Ok(Access::Allowed)
        } else {
            Ok(Access::Denied { reason: status.reason.unwrap_or_default().chars().take(256).collect() })
        }
    }
}

impl AccessReviewer for KubernetesReviewer {
    fn review_token<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<Identity>, ReviewError>> {
        Box::pin(self.token(token))
    }

    fn review_access<'a>(
        &'a self,
        identity: &'a Identity,
        action: &'a ControlAction,
    ) -> BoxFuture<'a, Result<Access, ReviewError>> {
        Box::pin(self.access(identity, action))
    }
}
