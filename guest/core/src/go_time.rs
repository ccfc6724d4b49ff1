//! Go's zero time, which Kubernetes' Go code reads as "unset".

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Seconds from the Unix epoch back to 0001-01-01T00:00:00Z.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Go's zero `metav1.Time` (0001-01-01T00:00:00Z) means "unset".
pub fn is_zero(time: &Time) -> bool {
    time.0.as_second() == GO_ZERO_TIME_SECONDS && time.0.subsec_nanosecond() == 0
}
