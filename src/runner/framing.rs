//! Framing of the CLI's output streams.
//!
//! stdout becomes bounded lines: `LinesCodec` buffers across chunk boundaries (so a multi-byte
//! UTF-8 character split between reads is decoded whole), yields a final line without a newline
//! at EOF, and refuses a line past [`MAX_LINE_BYTES`]. stderr is kept as a bounded tail for
//! diagnostics, and also split into lines for adapters that recognise markers in it.
//!
//! ## Why the line cap is 8 MiB
//! The cap must sit above the longest line a CLI legitimately prints, or a good run dies as
//! `malformed-stream`; it must also bound memory (one line is buffered whole). The longest
//! legitimate line comes from Codex 0.171.0: a `command_execution` item carries up to 1 MiB
//! (1,048,576 bytes) of the command's output in `aggregated_output`, and JSON escaping grows a
//! byte by at most 6× (a control byte becomes `\u0000`; an invalid UTF-8 byte becomes U+FFFD, 3
//! bytes; `"`, `\\` and newlines 2). So the output field is at most 6 MiB; measured with the real
//! binary, `head -c 3000000 /dev/zero` printed a 6,291,676-byte line, 3 MB of text a
//! 1,059,329-byte one. The remaining 2 MiB cover the rest of the event (the command line, ids).
//! Characters never outnumber bytes, so one byte cap bounds both.

use std::collections::VecDeque;

use tokio_util::codec::{LinesCodec, LinesCodecError};

/// The most output a CLI keeps in one event, in bytes (Codex 0.171.0: `aggregated_output`).
pub const ITEM_OUTPUT_BYTES: usize = 1 << 20;
/// The worst growth of one raw output byte once escaped into a JSON string (`\u0000`).
pub const JSON_ESCAPE_FACTOR: usize = 6;
/// Room for the rest of the event around the output field.
const ENVELOPE_BYTES: usize = 2 << 20;
/// The longest stdout line accepted, in bytes (8 MiB). A longer one is a malformed stream.
pub const MAX_LINE_BYTES: usize = ITEM_OUTPUT_BYTES * JSON_ESCAPE_FACTOR + ENVELOPE_BYTES;
/// How much of stderr is kept.
pub const STDERR_TAIL_BYTES: usize = 256 * 1024;
/// The longest stderr line handed to the adapter; the tail keeps everything regardless.
const MAX_STDERR_LINE: usize = 64 * 1024;

/// The stdout line codec.
pub fn stdout_codec() -> LinesCodec {
    LinesCodec::new_with_max_length(MAX_LINE_BYTES)
}

/// Why a stdout line could not be framed.
pub fn framing_error(e: &LinesCodecError) -> String {
    match e {
        LinesCodecError::MaxLineLengthExceeded => {
            format!("a stdout line exceeded {MAX_LINE_BYTES} bytes")
        }
        LinesCodecError::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            format!("stdout is not valid UTF-8: {e}")
        }
        LinesCodecError::Io(e) => format!("reading stdout failed: {e}"),
    }
}

/// Hold a framed line to the cap. The codec already refuses a longer line while reading; this
/// keeps the same bound for a line that reached the parser by any other way.
pub fn check_line(line: &str) -> Result<(), String> {
    if line.len() > MAX_LINE_BYTES {
        return Err(format!("a stdout line exceeded {MAX_LINE_BYTES} bytes"));
    }
    Ok(())
}

/// A bounded tail of stderr plus a line splitter over it.
#[derive(Debug, Default)]
pub struct StderrTail {
    tail: VecDeque<u8>,
    dropped: u64,
    partial: Vec<u8>,
    partial_overflowed: bool,
}

impl StderrTail {
    /// Take a chunk; returns the complete lines it finished (lossily decoded).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.tail.extend(chunk);
        let over = self.tail.len().saturating_sub(STDERR_TAIL_BYTES);
        if over > 0 {
            self.tail.drain(..over);
            self.dropped += over as u64;
        }
        let mut lines = Vec::new();
        for &b in chunk {
            if b == b'\n' {
                if !self.partial_overflowed {
                    lines.push(String::from_utf8_lossy(&self.partial).into_owned());
                }
                self.partial.clear();
                self.partial_overflowed = false;
            } else if self.partial.len() < MAX_STDERR_LINE {
                self.partial.push(b);
            } else {
                self.partial_overflowed = true;
            }
        }
        lines
    }

    /// A last line without a newline, at EOF.
    pub fn finish(&mut self) -> Option<String> {
        let line = (!self.partial.is_empty() && !self.partial_overflowed)
            .then(|| String::from_utf8_lossy(&self.partial).into_owned());
        self.partial.clear();
        line
    }

    /// The kept text, with a marker saying how much was dropped before it.
    pub fn text(&self) -> String {
        let (a, b) = self.tail.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        let mut start = 0;
        if self.dropped > 0 {
            // Do not start in the middle of a UTF-8 character.
            while start < bytes.len() && (bytes[start] & 0xC0) == 0x80 {
                start += 1;
            }
        }
        let body = String::from_utf8_lossy(&bytes[start..]);
        if self.dropped > 0 {
            format!(
                "[stderr truncated: {} earlier bytes dropped]\n{body}",
                self.dropped + start as u64
            )
        } else {
            body.into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_cap_is_the_derived_figure_and_holds_codex_worst_case() {
        assert_eq!(MAX_LINE_BYTES, 8 * 1024 * 1024);
        // The measured worst case (1 MiB of NUL bytes, each `\u0000`) fits.
        const { assert!(6_291_676 < MAX_LINE_BYTES) };
        assert!(check_line(&"x".repeat(6_291_676)).is_ok());
        assert!(check_line(&"x".repeat(MAX_LINE_BYTES + 1)).is_err());
    }

    #[tokio::test]
    async fn codec_refuses_a_line_over_the_cap_and_keeps_framing_bounded() {
        use futures::StreamExt;
        use tokio_util::codec::FramedRead;
        let mut data = vec![b'a'; MAX_LINE_BYTES + 10];
        data.extend_from_slice(b"\nok\n");
        let mut framed = FramedRead::new(&data[..], stdout_codec());
        let first = framed.next().await.unwrap();
        assert!(matches!(first, Err(LinesCodecError::MaxLineLengthExceeded)));
        assert!(framing_error(&first.unwrap_err()).contains("8388608 bytes"));
    }

    #[test]
    fn stderr_tail_is_bounded_and_marked() {
        let mut t = StderrTail::default();
        let line = vec![b'x'; 1023];
        for _ in 0..1024 {
            t.push(&line);
            t.push(b"\n");
        }
        let text = t.text();
        assert!(text.starts_with("[stderr truncated: "), "{}", &text[..80]);
        assert!(text.len() <= STDERR_TAIL_BYTES + 100);
    }

    #[test]
    fn stderr_lines_survive_split_utf8() {
        let mut t = StderrTail::default();
        let s = "warn ✓\n".as_bytes();
        let mut lines = Vec::new();
        for b in s {
            lines.extend(t.push(&[*b]));
        }
        assert_eq!(lines, ["warn ✓"]);
        assert_eq!(t.text(), "warn ✓\n");
    }

    #[test]
    fn tail_never_starts_mid_character() {
        let mut t = StderrTail::default();
        t.push("é".repeat(STDERR_TAIL_BYTES).as_bytes());
        let text = t.text();
        assert!(!text.contains('\u{FFFD}'));
    }
}
