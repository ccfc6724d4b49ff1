//! How the host quotes a string the plugin chose (a UID, a pod name, a state key) in its
//! errors and logs: the plugin chose it, and it may be megabytes long.

/// How many bytes of a plugin-chosen string a message quotes at most.
pub(crate) const MAX_SHOWN_BYTES: usize = 64;

/// At most [`MAX_SHOWN_BYTES`] of `text`, cut at a character boundary.
pub(crate) fn shown(text: &str) -> &str {
    let mut cut = text.len().min(MAX_SHOWN_BYTES);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_long_strings_at_a_character_boundary() {
        assert_eq!(shown("short"), "short");
        assert_eq!(shown(&"x".repeat(100)).len(), 64);
        let wide = format!("{}é", "x".repeat(63));
        assert_eq!(shown(&wide), "x".repeat(63), "é would straddle byte 64");
    }
}
