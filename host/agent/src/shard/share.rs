//! Which nodes of a sharded fleet are a shard's: node `n` of the whole fleet belongs to
//! the member at position `n mod m` among the `m` live members sorted by ordinal. When
//! the members are a StatefulSet's pods `0 .. COUNT-1` that is `n mod COUNT = ORDINAL`:
//! every shard gets the same number of nodes, give or take one, and the same nodes
//! every time, whichever shard computes it.

/// A shard's place: its ordinal and, when fixed, the number of shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardPlace {
    /// The shard's ordinal (a StatefulSet pod's).
    pub ordinal: u32,
    /// The number of shards when fixed (`--shard 2/4`); `None`: the live members say.
    pub count: Option<u32>,
}

/// The most shards a fleet has: a fleet's nodes number 10,000 at most, and a shard of
/// no node is no use.
pub const MAX_SHARDS: u32 = 1000;

/// Why a shard's place was not understood.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardPlaceError {
    /// Not `ORDINAL`, `ORDINAL/COUNT`, `pod` or `pod/COUNT`.
    #[error("{0:?}: expected ORDINAL, ORDINAL/COUNT, pod or pod/COUNT (ORDINAL below COUNT, COUNT 1 to 1000)")]
    Syntax(String),
    /// `pod` was asked for and the pod's name is not known or ends in no ordinal.
    #[error("the pod's name {0:?} ends in no ordinal (-N, as a StatefulSet's pods are named); set POD_NAME")]
    PodName(String),
}

impl ShardPlace {
    /// `ORDINAL`, `ORDINAL/COUNT`, or `pod` (`pod/COUNT`): the ordinal that ends the
    /// pod's name, `pod_name` (a StatefulSet's pod `NAME-ORDINAL`).
    pub fn parse(text: &str, pod_name: Option<&str>) -> Result<ShardPlace, ShardPlaceError> {
        let syntax = || ShardPlaceError::Syntax(text.chars().take(64).collect());
        let (ordinal, count) = match text.split_once('/') {
            Some((ordinal, count)) => (ordinal, Some(count)),
            None => (text, None),
        };
        let count = match count {
            Some(count) => match count.parse::<u32>() {
                Ok(count) if (1..=MAX_SHARDS).contains(&count) => Some(count),
                _ => return Err(syntax()),
            },
            None => None,
        };
        let ordinal = if ordinal == "pod" {
            let name = pod_name.unwrap_or_default();
            name.rsplit_once('-')
                .and_then(|(_, ordinal)| ordinal_of(ordinal))
                .ok_or_else(|| ShardPlaceError::PodName(name.chars().take(253).collect()))?
        } else {
            ordinal_of(ordinal).ok_or_else(syntax)?
        };
        if count.is_some_and(|count| ordinal >= count) || ordinal >= MAX_SHARDS {
            return Err(syntax());
        }
        Ok(ShardPlace { ordinal, count })
    }
}

/// A decimal ordinal without sign or leading zeros (`07` is no pod's).
fn ordinal_of(text: &str) -> Option<u32> {
    let plain = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    plain.then(|| text.parse().ok()).flatten()
}

/// The nodes (numbers below `total`) of the shard `ordinal` when `members` are the live
/// shards (any order; `ordinal` counts as one whether listed or not).
pub fn share(total: usize, ordinal: u32, members: &[u32]) -> Vec<usize> {
    let mut members = members.to_vec();
    members.push(ordinal);
    members.sort_unstable();
    members.dedup();
    let position = members.iter().position(|&m| m == ordinal).unwrap_or(0);
    (0..total).filter(|n| n % members.len() == position).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_an_ordinal_maybe_of_a_count_maybe_from_the_pods_name() {
        let place = |ordinal, count| Ok(ShardPlace { ordinal, count });
        assert_eq!(ShardPlace::parse("2/4", None), place(2, Some(4)));
        assert_eq!(ShardPlace::parse("0", None), place(0, None));
        assert_eq!(ShardPlace::parse("pod", Some("podstatus-fleet-3")), place(3, None));
        assert_eq!(ShardPlace::parse("pod/8", Some("web-fleet-7")), place(7, Some(8)));
        for bad in ["4/4", "1/0", "-1", "+1", "01", "a/4", "2/", "/4", "", "1/1001", "1000"] {
            assert!(matches!(ShardPlace::parse(bad, None), Err(ShardPlaceError::Syntax(_))), "{bad}");
        }
        for name in [None, Some("fleet"), Some("fleet-"), Some("fleet-x"), Some("fleet-01")] {
            assert!(matches!(ShardPlace::parse("pod", name), Err(ShardPlaceError::PodName(_))), "{name:?}");
        }
        assert!(ShardPlace::parse("pod/2", Some("fleet-2")).is_err(), "the pod's ordinal is below the count");
    }

    #[test]
    fn every_node_is_one_shards_and_the_shares_are_even() {
        let members = [0, 1, 2, 3];
        let shares: Vec<Vec<usize>> = members.iter().map(|&o| share(1000, o, &members)).collect();
        assert!(shares.iter().all(|s| s.len() == 250));
        let mut all: Vec<usize> = shares.concat();
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>(), "each node exactly once");
        assert_eq!(share(10, 1, &members), [1, 5, 9]);
        // Shard 3 gone: the three left share everything, whoever computes it.
        assert_eq!(share(10, 2, &[2, 0, 1]), [2, 5, 8]);
        assert_eq!(share(10, 0, &[1, 2]), [0, 3, 6, 9], "a shard counts itself");
        // Gaps: positions among the live members, not the ordinals.
        assert_eq!(share(6, 5, &[0, 5]), [1, 3, 5]);
    }
}
