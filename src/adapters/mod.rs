//! One folder per agent CLI. Each implements [`crate::adapter::Adapter`] and is listed once in
//! [`crate::adapter::registry`].

pub mod claude;
pub mod codex;
