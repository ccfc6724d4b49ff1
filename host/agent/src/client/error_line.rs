//! An error and its causes as one line, for logs and for the command's last word: the
//! client's errors nest (kube's "ServiceError: client error (Connect)" hides "tcp connect
//! error: Connection refused" two sources down), and many messages repeat their source.

/// The longest line made, in characters: a message quoting a whole file or a server's
/// answer is cut, not printed as a page.
pub const MAX_ERROR_LINE: usize = 600;

/// `error` and its causes as one line: each one's first line, joined by `: `, a cause
/// the line already holds left out (a message that repeats its source is not followed
/// by it again), cut at [`MAX_ERROR_LINE`] characters.
pub fn error_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(error);
    while let Some(error) = cause {
        let text = error.to_string();
        let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
        if !first.is_empty() && !line.contains(first) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(first);
        }
        cause = error.source();
    }
    if line.chars().count() > MAX_ERROR_LINE {
        line = line.chars().take(MAX_ERROR_LINE).collect::<String>() + " ...";
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot listen on {addr}: {source}")]
    struct Listen {
        addr: &'static str,
        #[source]
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("starting the embedded API server")]
    struct Starting(#[source] Listen);

    #[derive(Debug, thiserror::Error)]
    #[error("failed to parse YAML: line 1 column 6\n --> <input>:1:6\n  |\n1 | not: [")]
    struct Yaml;

    #[test]
    fn a_cause_the_line_already_holds_is_not_said_again() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use (os error 98)");
        let error = Starting(Listen { addr: "127.0.0.1:8080", source: io });
        assert_eq!(
            error_line(&error),
            "starting the embedded API server: cannot listen on 127.0.0.1:8080: Address already in use (os error 98)"
        );
    }

    #[test]
    fn a_message_of_many_lines_gives_its_first_and_a_long_one_is_cut() {
        assert_eq!(error_line(&Yaml), "failed to parse YAML: line 1 column 6");
        let long = std::io::Error::other("x".repeat(5_000));
        assert_eq!(error_line(&long).chars().count(), MAX_ERROR_LINE + 4);
    }
}
