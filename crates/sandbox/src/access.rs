//! What another user may reach, and how the sandbox lets it write where
//! the code must write.
//!
//! When the code runs as another user ([`RunAs`]), that user must be able to
//! reach the working directory and write in it, without the caller handing
//! over ownership of its files. POSIX ACLs do exactly that: one named-user
//! entry on each directory and file (and a default entry on directories, so
//! that files written later by the caller's tools stay writable to the
//! code). The grant is left in place after the sandbox ends so the files
//! the code created stay usable by both; `getfacl` shows it.

use std::path::{Path, PathBuf};

use crate::config::RunAs;

/// Whether `identity` may traverse every directory down to `path` (by its
/// permission bits and a named-user ACL entry this module granted; other
/// ACL entries are not consulted).
pub(crate) fn reachable_by(path: &Path, identity: RunAs) -> bool {
    use std::os::unix::fs::MetadataExt;
    if identity.uid == 0 {
        return true;
    }
    path.ancestors().all(|dir| {
        let Ok(meta) = dir.metadata() else {
            return false;
        };
        if !meta.is_dir() {
            return true;
        }
        let mode = meta.mode();
        let bit = if meta.uid() == identity.uid {
            0o100
        } else if meta.gid() == identity.gid {
            0o010
        } else {
            0o001
        };
        mode & bit != 0 || acl_grants(dir, identity.uid, 0o1)
    })
}

/// The first directory on the way to `path` that `identity` cannot
/// traverse, for error messages.
pub(crate) fn first_closed_ancestor(path: &Path, identity: RunAs) -> Option<PathBuf> {
    let mut ancestors: Vec<&Path> = path.ancestors().collect();
    ancestors.reverse();
    ancestors
        .into_iter()
        .find(|dir| !reachable_by(dir, identity))
        .map(Path::to_path_buf)
}

/// How many entries [`grant_write`] visits at most: a working directory is
/// a repository copy, not a file system.
pub(crate) const MAX_GRANT_ENTRIES: usize = 500_000;

/// What [`grant_write`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant {
    /// Entries that now carry the user's ACL entry.
    pub(crate) granted: usize,
    /// Entries left alone: they already had an ACL of their own (which is
    /// not rewritten), or are symlinks (which carry no ACL).
    pub(crate) skipped: usize,
    /// Whether the walk stopped at [`MAX_GRANT_ENTRIES`].
    pub(crate) truncated: bool,
}

/// Gives `identity` read and write access to `root` and everything under
/// it (execute where the owner has it), through POSIX ACLs. Symlinks are
/// not followed.
///
/// # Errors
///
/// The first failure on `root` itself (the file system may not support
/// ACLs: `EOPNOTSUPP`); failures below it are counted as skipped.
pub(crate) fn grant_write(root: &Path, identity: RunAs) -> std::io::Result<Grant> {
    let mut grant = Grant::default();
    grant_one(root, identity, &mut grant)?;
    let mut stack = vec![root.to_path_buf()];
    let mut visited = 1usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > MAX_GRANT_ENTRIES {
                grant.truncated = true;
                return Ok(grant);
            }
            let path = entry.path();
            if grant_one(&path, identity, &mut grant).is_err() {
                grant.skipped += 1;
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    Ok(grant)
}

const ACCESS_ACL: &str = "system.posix_acl_access";
const DEFAULT_ACL: &str = "system.posix_acl_default";

fn grant_one(path: &Path, identity: RunAs, grant: &mut Grant) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        grant.skipped += 1;
        return Ok(());
    }
    if has_acl(path, ACCESS_ACL) {
        grant.skipped += 1;
        return Ok(());
    }
    let mode = meta.permissions().mode();
    let owner_x = ((mode >> 6) & 0o1) as u16;
    let user_perms = if meta.is_dir() { 0o7 } else { 0o6 | owner_x };
    let acl = AclBuilder::from_mode(mode, identity.uid, user_perms);
    set_acl(path, ACCESS_ACL, &acl.encode())?;
    if meta.is_dir() && !has_acl(path, DEFAULT_ACL) {
        // Default entries give new files the user's access too; `rwx` here
        // is masked by each new file's own creation mode.
        let default = AclBuilder::from_mode(mode, identity.uid, 0o7);
        set_acl(path, DEFAULT_ACL, &default.encode())?;
    }
    grant.granted += 1;
    Ok(())
}

fn has_acl(path: &Path, name: &str) -> bool {
    rustix::fs::lgetxattr_query(path, name).is_ok_and(|len| len > 0)
}

fn set_acl(path: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
    rustix::fs::lsetxattr(path, name, value, rustix::fs::XattrFlags::empty())
        .map_err(|e| std::io::Error::from_raw_os_error(e.raw_os_error()))
}

/// Whether `dir` carries a named-user ACL entry for `uid` with all of `perms`.
fn acl_grants(dir: &Path, uid: u32, perms: u16) -> bool {
    let mut buf = vec![0u8; 1024];
    let Ok(len) = rustix::fs::lgetxattr(dir, ACCESS_ACL, &mut buf) else {
        return false;
    };
    decode(&buf[..len]).is_some_and(|entries| {
        let mask = entries
            .iter()
            .find(|e| e.tag == TAG_MASK)
            .map_or(0o7, |e| e.perms);
        entries
            .iter()
            .any(|e| e.tag == TAG_USER && e.id == uid && e.perms & mask & perms == perms)
    })
}

// The kernel's `posix_acl_xattr` layout: a little-endian version (2), then
// 8-byte entries of tag, permissions and id.
const ACL_VERSION: u32 = 2;
const TAG_USER_OBJ: u16 = 0x01;
const TAG_USER: u16 = 0x02;
const TAG_GROUP_OBJ: u16 = 0x04;
const TAG_MASK: u16 = 0x10;
const TAG_OTHER: u16 = 0x20;
const NO_ID: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AclEntry {
    tag: u16,
    perms: u16,
    id: u32,
}

/// The minimal ACL equal to a mode, plus one named user.
struct AclBuilder {
    entries: [AclEntry; 5],
}

impl AclBuilder {
    fn from_mode(mode: u32, uid: u32, user_perms: u16) -> Self {
        let bits = |shift: u32| ((mode >> shift) & 0o7) as u16;
        let group = bits(3);
        let entry = |tag, perms, id| AclEntry { tag, perms, id };
        Self {
            // Sorted by tag, as the kernel requires.
            entries: [
                entry(TAG_USER_OBJ, bits(6), NO_ID),
                entry(TAG_USER, user_perms, uid),
                entry(TAG_GROUP_OBJ, group, NO_ID),
                // The mask bounds named entries and becomes the group bits
                // `ls` shows; the union keeps both effective.
                entry(TAG_MASK, group | user_perms, NO_ID),
                entry(TAG_OTHER, bits(0), NO_ID),
            ],
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 8 * self.entries.len());
        out.extend_from_slice(&ACL_VERSION.to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&e.tag.to_le_bytes());
            out.extend_from_slice(&e.perms.to_le_bytes());
            out.extend_from_slice(&e.id.to_le_bytes());
        }
        out
    }
}

fn decode(bytes: &[u8]) -> Option<Vec<AclEntry>> {
    let (version, rest) = bytes.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != ACL_VERSION || rest.len() % 8 != 0 {
        return None;
    }
    Some(
        rest.chunks_exact(8)
            .map(|c| AclEntry {
                tag: u16::from_le_bytes([c[0], c[1]]),
                perms: u16::from_le_bytes([c[2], c[3]]),
                id: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const USER: RunAs = RunAs {
        uid: 54321,
        gid: 54321,
    };

    #[test]
    fn acl_encoding_round_trips() {
        let acl = AclBuilder::from_mode(0o750, 7, 0o6);
        let entries = decode(&acl.encode()).unwrap();
        assert_eq!(entries.len(), 5);
        assert_eq!(
            entries[1],
            AclEntry {
                tag: TAG_USER,
                perms: 0o6,
                id: 7
            }
        );
        assert_eq!(entries[3].perms, 0o7, "mask is the union of group and user");
        assert!(decode(&[1, 0, 0, 0]).is_none(), "wrong version");
        assert!(decode(&[2, 0, 0, 0, 1]).is_none(), "torn entry");
    }

    #[test]
    fn a_closed_directory_is_not_reachable_until_granted() {
        let dir = tempfile::tempdir().unwrap();
        let closed = dir.path().join("closed");
        let inner = closed.join("work");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!reachable_by(&inner, USER));
        assert_eq!(first_closed_ancestor(&inner, USER), Some(closed.clone()));
        match grant_write(&closed, USER) {
            Ok(grant) => {
                assert_eq!(grant.granted, 2, "{grant:?}");
                assert!(reachable_by(&inner, USER));
                assert!(acl_grants(&inner, USER.uid, 0o7));
                // A second grant leaves the existing ACLs alone.
                let again = grant_write(&closed, USER).unwrap();
                assert_eq!((again.granted, again.skipped), (0, 2));
            }
            Err(e) => eprintln!("no ACL support on this file system: {e}"),
        }
    }

    #[test]
    fn symlinks_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        if let Ok(grant) = grant_write(dir.path(), USER) {
            assert_eq!(grant.skipped, 1, "{grant:?}");
            assert!(!acl_grants(outside.path(), USER.uid, 0o1));
        }
    }
}
