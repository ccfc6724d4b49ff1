//! Media ranges of an `Accept` header, as the discovery and table answers read them
//! (`application/json;as=Table;g=meta.k8s.io;v=v1`).

/// The `key=value` parameters of one media range, trimmed.
pub(crate) fn params(media: &str) -> Vec<(&str, &str)> {
    media.split(';').skip(1).filter_map(|param| param.split_once('=')).map(|(k, v)| (k.trim(), v.trim())).collect()
}
