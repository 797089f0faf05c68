//! The environment as config sees it: a trait, so tests inject variables instead of
//! changing the process environment. Its own file so that the parts that read it
//! (`provider`, `tools`) need not import the `Config` that is built from them.

pub(crate) trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

pub(crate) struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}
