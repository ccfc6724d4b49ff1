//! The Kubernetes releases whose status manager the oracle runs.

use std::fmt;

/// A release of `k8s.io/kubernetes` the oracle can build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Release {
    /// The module version, `v1.35.4`.
    pub version: &'static str,
    /// The overlay files of `upstream/_reach/` this release is reached through: its own
    /// spelling of what differs (`before-1.37/`, `since-1.37/`), beside the family's (`since-1.35/`,
    /// or `1.27/` alone).
    pub reach: &'static [&'static str],
    /// Go build tags for the oracle's own release-specific files.
    pub tags: &'static str,
    /// Whether `upstream/cmd/controlplane` builds against it (etcd 3.6 and later's
    /// embed API, and kube-apiserver's signal context made with its command: not 1.27).
    pub control_plane: bool,
}

impl Release {
    /// `1.35` of `v1.35.4`.
    pub fn minor(&self) -> &'static str {
        let v = self.version.trim_start_matches('v');
        let end = v.match_indices('.').nth(1).map_or(v.len(), |(i, _)| i);
        &v[..end]
    }

    /// The release named `upstream-1.35`, `1.35` or `v1.35.4`.
    pub fn named(name: &str) -> Option<Release> {
        let name = name.strip_prefix("upstream-").unwrap_or(name);
        RELEASES.iter().copied().find(|r| r.version == name || r.minor() == name)
    }

    /// The modfile of `upstream/` that requires this release (`go.mod` for the
    /// default).
    pub fn modfile(&self) -> String {
        if *self == RELEASES[DEFAULT] { "go.mod".to_string() } else { format!("releases/{}.mod", self.version) }
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "upstream-{}", self.minor())
    }
}

/// Every release the oracle builds: 1.27 (logic v2 and v3 follow it), 1.35 (logic v4),
/// and each newer one the Go module proxy served when it was added
/// (`upstream/releases/add-release.sh`).
pub const RELEASES: [Release; 4] = [
    Release { version: "v1.27.16", reach: &["all", "1.27"], tags: "podstatus_k8s_1_27", control_plane: false },
    Release { version: "v1.35.4", reach: &["all", "since-1.35", "before-1.37"], tags: "", control_plane: true },
    Release { version: "v1.36.3", reach: &["all", "since-1.35", "before-1.37"], tags: "", control_plane: true },
    Release { version: "v1.37.2", reach: &["all", "since-1.35", "since-1.37"], tags: "", control_plane: true },
];

/// `upstream/go.mod`'s release.
const DEFAULT: usize = 1;

/// The names `--against` takes for the releases, for help and errors.
pub fn names() -> String {
    RELEASES.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_named_by_minor_or_version() {
        assert_eq!(Release::named("upstream-1.35").map(|r| r.version), Some("v1.35.4"));
        assert_eq!(Release::named("1.27").map(|r| r.version), Some("v1.27.16"));
        assert_eq!(Release::named("v1.37.2").map(|r| r.minor()), Some("1.37"));
        assert_eq!(Release::named("upstream-1.3"), None);
        assert_eq!(RELEASES[DEFAULT].modfile(), "go.mod");
        assert_eq!(RELEASES[0].modfile(), "releases/v1.27.16.mod");
        assert_eq!(names(), "upstream-1.27, upstream-1.35, upstream-1.36, upstream-1.37");
    }
}
