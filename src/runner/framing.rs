//! Framing of the CLI's output streams.
//!
//! stdout becomes bounded lines: `LinesCodec` buffers across chunk boundaries (so a multi-byte
//! UTF-8 character split between reads is decoded whole), yields a final line without a newline
//! at EOF, and refuses a line past the byte cap. On top of that the line is held to
//! [`MAX_LINE_CHARS`]. stderr is kept as a bounded tail for diagnostics, and also split into
//! lines for adapters that recognise markers in it.

use std::collections::VecDeque;

use tokio_util::codec::{LinesCodec, LinesCodecError};

/// The longest stdout line accepted, in characters. A longer one is a malformed stream.
pub const MAX_LINE_CHARS: usize = 1_000_000;
/// The byte cap that enforces it while framing (a char is at most 4 bytes of UTF-8).
pub const MAX_LINE_BYTES: usize = 4 * MAX_LINE_CHARS;
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
            format!("a stdout line exceeded {MAX_LINE_CHARS} characters")
        }
        LinesCodecError::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            format!("stdout is not valid UTF-8: {e}")
        }
        LinesCodecError::Io(e) => format!("reading stdout failed: {e}"),
    }
}

/// Check the character cap on a framed line.
pub fn check_line(line: &str) -> Result<(), String> {
    // Cheap path: fewer bytes than the cap means fewer chars too.
    if line.len() > MAX_LINE_CHARS && line.chars().count() > MAX_LINE_CHARS {
        return Err(format!(
            "a stdout line exceeded {MAX_LINE_CHARS} characters"
        ));
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
