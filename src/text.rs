//! Small text helpers shared by the adapters' parsers.

/// The last `max` bytes of `s`, cut forward to a character boundary (a command's output tail).
pub fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_is_char_boundary_safe() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("a✓b", 2), "b");
        assert_eq!(tail("a✓b", 4), "✓b");
        assert_eq!(tail("🎉🎉", 5), "🎉");
    }
}
