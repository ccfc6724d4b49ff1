//! What the server makes up for an object it creates: a UID, and the random suffix of a
//! name from `generateName`.

/// A random (version 4) UUID for an object created (a pod, a node, a lease), as
/// kube-apiserver gives.
pub(crate) fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Five characters for `generateName`, from Kubernetes' alphabet (no vowels, no
/// look-alikes).
pub(crate) fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    // The UUID's low half: random but for its two variant bits, at the top.
    let (_, mut word) = uuid::Uuid::new_v4().as_u64_pair();
    (0..5)
        .map(|_| {
            let index = (word % ALPHABET.len() as u64) as usize;
            word /= ALPHABET.len() as u64;
            char::from(ALPHABET[index])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_look_like_v4_uuids_and_differ() {
        let (a, b) = (new_uid(), new_uid());
        assert_ne!(a, b);
        let parts: Vec<_> = a.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
        assert_eq!(a.as_bytes()[14], b'4');
        assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{a}");
        assert_eq!(random_suffix().len(), 5);
    }
}
