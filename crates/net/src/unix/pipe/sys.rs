//! The OS calls the pipe ends need that neither std nor mio expose: the access mode a
//! descriptor was opened with. Nothing else in `pipe` calls libc.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The directions a descriptor was opened for (its `O_ACCMODE` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AccessMode {
    /// Opened `O_RDONLY` or `O_RDWR`.
    pub(super) read: bool,
    /// Opened `O_WRONLY` or `O_RDWR`.
    pub(super) write: bool,
}

/// The access mode of `fd`, from its file status flags (`fcntl(F_GETFL)`).
pub(super) fn access_mode(fd: BorrowedFd<'_>) -> io::Result<AccessMode> {
    // SAFETY: `fd` is borrowed, so it stays open for the call; F_GETFL only reads the
    // descriptor's status flags and takes no pointer.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let mode = flags & libc::O_ACCMODE;
    Ok(AccessMode {
        read: mode == libc::O_RDONLY || mode == libc::O_RDWR,
        write: mode == libc::O_WRONLY || mode == libc::O_RDWR,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn the_ends_of_a_pipe_have_one_direction_each() {
        let (rx, tx) = std::io::pipe().unwrap();
        let read = access_mode(rx.as_fd()).unwrap();
        let write = access_mode(tx.as_fd()).unwrap();
        assert_eq!((read.read, read.write), (true, false));
        assert_eq!((write.read, write.write), (false, true));
    }
}
