//! Job ids: 128 random bits from the OS, as 32 lowercase hex digits. Unguessable, so a job can
//! only be named by someone who was told its id; and a strict shape, so an id is never a path.

use std::fmt;

use crate::contract::{Failure, FailureKind};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(String);

impl JobId {
    /// A fresh id from the OS's random source.
    pub fn new() -> std::io::Result<Self> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// Accept exactly the shape [`JobId::new`] makes; anything else is an `invalid-request`.
    pub fn parse(s: &str) -> Result<Self, Failure> {
        if s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Self(s.to_owned()))
        } else {
            Err(Failure::new(
                FailureKind::InvalidRequest,
                format!("{s:?} is not a job id (32 hex digits, as `run --background` printed it)"),
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_parse_and_differ() {
        let a = JobId::new().unwrap();
        let b = JobId::new().unwrap();
        assert_ne!(a, b);
        assert_eq!(JobId::parse(a.as_str()).unwrap(), a);
    }

    #[test]
    fn paths_and_other_shapes_are_refused() {
        for bad in [
            "",
            "../x",
            "ABCDEF0123456789abcdef0123456789",
            &"a".repeat(31),
            &"a".repeat(33),
        ] {
            assert!(JobId::parse(bad).is_err(), "{bad}");
        }
    }
}
