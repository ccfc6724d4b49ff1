//! Client text quoted in messages, cut short.

/// At most the first 64 characters of a client's text, for a message.
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}
