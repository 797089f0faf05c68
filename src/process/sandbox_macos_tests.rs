//! Unit tests of `sandbox_macos.rs` (run on macOS only).

use super::*;

#[test]
fn every_sandbox_flag_is_refused_naming_the_platform() {
    let cases = [
        (
            SandboxMode::WorkspaceWrite,
            false,
            "--sandbox workspace-write",
        ),
        (SandboxMode::ReadOnly, false, "--sandbox read-only"),
        (SandboxMode::Off, true, "--no-network"),
    ];
    for (mode, no_network, flag) in cases {
        let spec = SandboxSpec {
            mode,
            writable: Vec::new(),
            no_network,
            egress: None,
        };
        // A kernel override claiming Landlock must not make the flag pass here.
        let err = spec.check_kernel(7).unwrap_err();
        assert!(err.starts_with(flag), "{err}");
        assert!(err.contains(std::env::consts::OS), "{err}");
        let built = Confinement::build(&spec, Path::new("/")).map(|c| c.is_some());
        assert_eq!(built, Err(err));
    }
    let off = SandboxSpec::default();
    assert!(off.check_kernel(0).is_ok());
    assert!(matches!(Confinement::build(&off, Path::new("/")), Ok(None)));
}
