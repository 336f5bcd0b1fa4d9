//! Opening a file an agent made (its replies file, its CLI's session file): the agent controls what is
//! at that path. A symbolic link would have executor read what the agent may not, a FIFO would block the
//! reader forever; so only a regular file is opened, without following a link and without blocking.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `path` opened for reading if it is a regular file; `InvalidInput` if it is anything else.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "it is not a regular file"));
    }
    Ok(file)
}
