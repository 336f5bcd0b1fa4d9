//! The Linux side: Landlock through the `landlock` crate to build the ruleset (in the parent, where
//! allocating is fine) and two raw system calls to apply it (in the child, where it is not).

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetError, Scope,
};

use super::{Sandbox, SandboxError, Support, cover};

/// The newest filesystem rights the crate knows (ABI 5 added device ioctls; later ABIs add no
/// filesystem rights). Older kernels get what they support: the crate's best-effort mode drops rights
/// they cannot handle — never the whole ruleset, which would fail [`prepare`].
const ABI_FS: ABI = ABI::V5;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version instead of creating a ruleset.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

pub fn support() -> Support {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if abi >= 1 {
        return Support::Landlock { abi: abi as i32 };
    }
    let err = std::io::Error::last_os_error();
    Support::Missing(match err.raw_os_error() {
        Some(libc::ENOSYS) => "this kernel has no Landlock (it needs Linux 5.13 or later)".into(),
        Some(libc::EOPNOTSUPP) => "Landlock is built into this kernel but not enabled at boot (lsm=)".into(),
        _ => format!("the kernel refused the Landlock probe: {err}"),
    })
}

pub fn prepare(sandbox: &Sandbox) -> Result<OwnedFd, SandboxError> {
    if let Support::Missing(why) = support() {
        return Err(SandboxError::Unavailable(why));
    }
    let setup = |path: &Path| {
        let path = path.to_path_buf();
        move |e: RulesetError| SandboxError::Setup { path, message: e.to_string() }
    };
    let root = Path::new("/");
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(ABI_FS)).map_err(setup(root))?;
    if sandbox.connect_ports().is_some() {
        // Best effort: a kernel before ABI 4 drops it, and `describe` says so.
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(setup(root))?;
    }
    let mut ruleset = ruleset
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .and_then(|r| r.create())
        .map_err(setup(root))?;
    for path in cover::read_grants(sandbox.hidden()) {
        // An entry that vanished since it was listed, or cannot be opened, is simply not granted.
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        let rights = if meta.is_dir() { read_dir_rights() } else { read_file_rights() };
        if let Ok(rule) = beneath(&path, rights) {
            ruleset = ruleset.add_rule(rule).map_err(setup(&path))?;
        }
    }
    // /dev/null, /dev/tty, a pty: written and ioctl'd by every shell and tool. Writing an existing node
    // creates nothing.
    let dev = Path::new("/dev");
    let dev_rights = AccessFs::from_read(ABI_FS) | AccessFs::WriteFile | AccessFs::IoctlDev;
    ruleset = ruleset.add_rule(beneath(dev, dev_rights)?).map_err(setup(dev))?;
    let granted =
        sandbox.readable.iter().map(|p| (p, false)).chain(sandbox.writable.iter().map(|p| (p, true)));
    for (path, write) in granted {
        let Ok(meta) = std::fs::metadata(path) else {
            continue; // nothing there to reach beneath
        };
        let rights = match (meta.is_dir(), write) {
            (true, true) => AccessFs::from_all(ABI_FS),
            (false, true) => AccessFs::from_file(ABI_FS),
            (true, false) => read_dir_rights(),
            (false, false) => read_file_rights(),
        };
        ruleset = ruleset.add_rule(beneath(path, rights)?).map_err(setup(path))?;
    }
    for &port in sandbox.connect_ports().unwrap_or_default() {
        ruleset = ruleset
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(setup(Path::new(&format!("tcp port {port}"))))?;
    }
    let fd: Option<OwnedFd> = ruleset.into();
    fd.ok_or_else(|| SandboxError::Unavailable("the kernel did not create a Landlock ruleset".into()))
}

fn read_dir_rights() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_read(ABI_FS)
}

/// Reading and executing a file: `ReadDir` is a directory's right only.
fn read_file_rights() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_read(ABI_FS) & AccessFs::from_file(ABI_FS)
}

fn beneath(path: &Path, rights: landlock::BitFlags<AccessFs>) -> Result<PathBeneath<PathFd>, SandboxError> {
    let fd = PathFd::new(path)
        .map_err(|e| SandboxError::Setup { path: path.to_path_buf(), message: e.to_string() })?;
    Ok(PathBeneath::new(fd, rights))
}

/// `PR_SET_NO_NEW_PRIVS` (which Landlock requires of an unprivileged process, and which keeps a
/// set-uid program from escaping) and `landlock_restrict_self`.
///
/// # Safety
/// Between fork and exec: only system calls, no allocation. `fd` must be a ruleset descriptor.
pub unsafe fn restrict_self(fd: i32) -> std::io::Result<()> {
    // SAFETY: system calls with integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
