//! What another user may reach, and how the sandbox lets it write where
//! the code must write.
//!
//! When the code runs as another user ([`RunAs`]), that user must be able to
//! reach the working directory and write in it, without the caller handing
//! over ownership of its files. POSIX ACLs do exactly that: one named-user
//! entry on each directory and file (and a default entry on directories, so
//! that files written later by the caller's tools stay writable to the
//! code).
//!
//! The grant lasts as long as a sandbox holds it ([`Granted`]): when the last
//! holder of a tree goes, the entries are taken back (an ACL that is exactly
//! a grant of this module, also one a new file inherited, is removed and the
//! file's group bits restored), so no host file keeps a door open for the
//! code's user. Each process keeps a journal of the trees it holds
//! (`sandbox-grants-<pid>` in the temporary directory, readable by its owner
//! only), for two readers:
//!
//! - another process of the same user about to take a tree back: a tree (or
//!   one around it) that a live process still holds is left granted, so two
//!   agents or two test binaries sharing a directory (a virtualenv cache, the
//!   pip cache) do not pull it from under each other;
//! - the next sandbox, when an agent was killed and could not take its
//!   grants back: it takes them back instead.
//!
//! Grant and take-back walks of one user's processes run one at a time
//! (a lock file beside the journals), so a take-back never interleaves with
//! a grant of the same tree.

use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{self, AtFlags, CWD, FileType, OFlags, Stat};

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

/// How many directory levels below its root a grant (and taking it back)
/// goes: the walk holds one open directory per level. Deeper entries keep
/// their permissions.
pub(crate) const MAX_GRANT_DEPTH: usize = 128;

/// What [`grant_write`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant {
    /// Entries that now carry the user's ACL entry.
    pub(crate) granted: usize,
    /// Entries left alone: they already had an ACL of their own (which is
    /// not rewritten), are symlinks (which carry no ACL) or are neither
    /// files nor directories.
    pub(crate) skipped: usize,
    /// Whether the walk stopped at [`MAX_GRANT_ENTRIES`].
    pub(crate) truncated: bool,
    /// Directories below [`MAX_GRANT_DEPTH`] that were not entered.
    pub(crate) too_deep: usize,
}

/// Write access of one user to one tree, held by a sandbox: dropping the last
/// holder of the same tree and user in this process takes it back.
#[derive(Debug)]
pub(crate) struct Granted {
    root: PathBuf,
    uid: u32,
    grant: Grant,
}

impl Granted {
    /// What the walk did.
    pub(crate) fn grant(&self) -> Grant {
        self.grant
    }
}

/// Trees granted in this process: root, uid, number of holders.
static LIVE: Mutex<Vec<(PathBuf, u32, usize)>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(PathBuf, u32, usize)>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Drop for Granted {
    fn drop(&mut self) {
        // The lock first, the registry second, as everywhere: no thread
        // waits for the lock while it holds the registry.
        let _walks = WalkLock::acquire();
        let others: Vec<PathBuf> = {
            let mut live = live();
            let Some(at) = live
                .iter()
                .position(|(root, uid, _)| *root == self.root && *uid == self.uid)
            else {
                return;
            };
            live[at].2 -= 1;
            if live[at].2 > 0 {
                return;
            }
            live.remove(at);
            journal_rewrite(&live);
            live.iter()
                .filter(|(_, uid, _)| *uid == self.uid)
                .map(|(root, _, _)| root.clone())
                .collect()
        };
        let others = [others, held_elsewhere(self.uid)].concat();
        // A tree another holder still needs (this one, or one around it) keeps
        // its grant; trees inside this one that are still held are skipped.
        if others.iter().any(|o| self.root.starts_with(o)) {
            tracing::debug!(root = %self.root.display(), "still held by another process: kept");
            return;
        }
        let revoked = revoke(&self.root, self.uid, &others);
        tracing::debug!(root = %self.root.display(), uid = self.uid, revoked, "write access taken back");
    }
}

/// Prefix of the lock file that serialises grant and take-back walks among
/// one user's processes (`<prefix><euid>`; not a journal name, which ends
/// in a pid).
const LOCK_PREFIX: &str = "sandbox-grants-lock-";

/// Held while a grant or take-back walk runs; released when dropped. Without
/// a lock file (the temporary directory is not writable, or the name is
/// taken by another user) walks are not serialised across processes, which
/// only reopens the race the lock closes.
struct WalkLock {
    _held: Option<std::fs::File>,
}

impl WalkLock {
    fn acquire() -> Self {
        let euid = rustix::process::geteuid().as_raw();
        Self::acquire_at(&std::env::temp_dir().join(format!("{LOCK_PREFIX}{euid}")))
    }

    /// Locks the file at `path`, made if missing; never through a link, and
    /// never a file another user owns (they could hold it forever).
    fn acquire_at(path: &Path) -> Self {
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        let euid = rustix::process::geteuid().as_raw();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .and_then(|file| {
                if file.metadata()?.uid() != euid {
                    return Err(std::io::Error::other("owned by another user"));
                }
                file.lock()?;
                Ok(file)
            });
        match file {
            Ok(file) => Self { _held: Some(file) },
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot lock the grant walks; processes sharing a tree may race");
                Self { _held: None }
            }
        }
    }
}

/// Why `dir` must never be granted whole to the code's user, if it must
/// not: a grant reaches everything below its root, so a root that other
/// programs share (the file system's root, a sticky world-writable
/// directory such as `/tmp`, one holding the temporary directory or the
/// caller's home) would open their files to the code.
pub(crate) fn shared_directory(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if real.parent().is_none() {
        return Some("it is the file system's root".to_owned());
    }
    if std::fs::metadata(&real).is_ok_and(|m| m.mode() & 0o1002 == 0o1002) {
        return Some("it is a shared directory (world-writable and sticky, like /tmp)".to_owned());
    }
    let holds = |inner: PathBuf| {
        let inner = inner.canonicalize().unwrap_or(inner);
        inner.starts_with(&real)
    };
    if holds(std::env::temp_dir()) {
        return Some("it holds the temporary directory, where other programs keep files".into());
    }
    if std::env::var_os("HOME").is_some_and(|home| !home.is_empty() && holds(PathBuf::from(home))) {
        return Some("it holds the caller's home directory".to_owned());
    }
    None
}

/// Gives `identity` read and write access to `root` and everything under
/// it (execute where the owner has it), through POSIX ACLs, until the
/// returned [`Granted`] (and every other holder of the same tree) is
/// dropped. Symlinks are not followed, at any level: each entry is opened
/// from its parent's descriptor, so a directory swapped for a link while
/// the walk runs leads nowhere.
///
/// # Errors
///
/// The first failure on `root` itself (the file system may not support
/// ACLs: `EOPNOTSUPP`); failures below it are counted as skipped.
pub(crate) fn grant_write(root: &Path, identity: RunAs) -> std::io::Result<Granted> {
    // One name for a tree in every process's journal, so that holders are
    // recognised whatever path each was configured with.
    let root = &root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    {
        let mut live = live();
        match live
            .iter_mut()
            .find(|(r, uid, _)| r == root && *uid == identity.uid)
        {
            Some(entry) => entry.2 += 1,
            None => live.push((root.to_path_buf(), identity.uid, 1)),
        }
        journal_rewrite(&live);
    }
    // From here on, dropping `held` releases the registration (and takes back
    // whatever was granted, if it was the only holder).
    let mut held = Granted {
        root: root.to_path_buf(),
        uid: identity.uid,
        grant: Grant::default(),
    };
    let mut grant = Grant::default();
    let walked = {
        // Released before `held` can drop on an error: its drop takes the
        // lock again.
        let _walks = WalkLock::acquire();
        walk_tree(root, &[], |_, fd, stat| {
            grant_one(fd, stat, identity, &mut grant)
        })
    }?;
    grant.skipped += walked.skipped;
    grant.truncated = walked.truncated;
    grant.too_deep = walked.too_deep;
    held.grant = grant;
    Ok(held)
}

/// What [`walk_tree`] saw besides what it visited.
#[derive(Debug, Default)]
struct Walked {
    /// Symlinks, entries that are neither files nor directories, and
    /// entries that could not be opened or whose visit failed.
    skipped: usize,
    truncated: bool,
    too_deep: usize,
}

/// Calls `visit` on `root` and on every file and directory below it, each
/// opened from its parent's descriptor without following a symlink (so no
/// path is resolved twice, and a directory replaced by a link while the
/// walk runs is never entered), except entries under `keep`. At most
/// [`MAX_GRANT_ENTRIES`] entries and [`MAX_GRANT_DEPTH`] levels.
///
/// The root is the caller's (a configured directory), so a link on the way
/// to it is resolved once, first.
fn walk_tree(
    root: &Path,
    keep: &[PathBuf],
    mut visit: impl FnMut(&Path, BorrowedFd<'_>, &Stat) -> std::io::Result<()>,
) -> std::io::Result<Walked> {
    let mut walked = Walked::default();
    let real = root.canonicalize()?;
    let fd = open_entry(CWD, &real)?;
    let stat = fs::fstat(&fd)?;
    visit(root, fd.as_fd(), &stat)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        return Ok(walked);
    }
    let mut stack = vec![(fs::Dir::new(fd)?, root.to_path_buf())];
    let mut visited = 1usize;
    while let Some((dir, path)) = stack.last_mut() {
        let entry = match dir.read() {
            Some(Ok(entry)) => entry,
            Some(Err(_)) => {
                walked.skipped += 1;
                stack.pop();
                continue;
            }
            None => {
                stack.pop();
                continue;
            }
        };
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        visited += 1;
        if visited > MAX_GRANT_ENTRIES {
            walked.truncated = true;
            break;
        }
        let child = path.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
        if keep.iter().any(|k| child.starts_with(k)) {
            continue;
        }
        let Ok(parent) = dir.fd() else {
            walked.skipped += 1;
            continue;
        };
        let kind = match entry.file_type() {
            FileType::Unknown => fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_or(FileType::Unknown, |s| FileType::from_raw_mode(s.st_mode)),
            kind => kind,
        };
        if !matches!(kind, FileType::Directory | FileType::RegularFile) {
            walked.skipped += 1;
            continue;
        }
        // O_NOFOLLOW: a link put in its place since the listing fails here.
        let Ok(fd) = open_entry(parent, name) else {
            walked.skipped += 1;
            continue;
        };
        let Ok(stat) = fs::fstat(&fd) else {
            walked.skipped += 1;
            continue;
        };
        let opened = FileType::from_raw_mode(stat.st_mode);
        if opened != kind || visit(&child, fd.as_fd(), &stat).is_err() {
            walked.skipped += 1;
            continue;
        }
        if opened == FileType::Directory {
            if stack.len() >= MAX_GRANT_DEPTH {
                walked.too_deep += 1;
                continue;
            }
            match fs::Dir::new(fd) {
                Ok(dir) => stack.push((dir, child)),
                Err(_) => walked.skipped += 1,
            }
        }
    }
    Ok(walked)
}

/// Opens one entry for its metadata and ACLs, never through a symlink, never
/// blocking (a FIFO raced in opens and is then skipped by its type).
fn open_entry<P: rustix::path::Arg>(at: impl AsFd, path: P) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    fs::openat(at, path, flags | OFlags::CLOEXEC, fs::Mode::empty()).map_err(std::io::Error::from)
}

/// Takes back what [`grant_write`] gave `uid` under `root`, except below
/// `keep` (trees still held); returns how many entries changed.
pub(crate) fn revoke(root: &Path, uid: u32, keep: &[PathBuf]) -> usize {
    let mut revoked = 0;
    let walked = walk_tree(root, keep, |_, fd, stat| {
        revoked += usize::from(revoke_one(fd, stat, uid));
        Ok(())
    });
    match walked {
        Ok(walked) if walked.truncated || walked.too_deep > 0 => tracing::warn!(
            root = %root.display(),
            "more than {MAX_GRANT_ENTRIES} entries or {MAX_GRANT_DEPTH} levels: the rest keep their ACLs"
        ),
        Ok(_) => {}
        Err(error) => {
            tracing::debug!(root = %root.display(), %error, "nothing to take back");
        }
    }
    revoked
}

/// Removes the ACLs of the entry open at `fd` when they are exactly a grant
/// to `uid` (this module's, or one inherited from its default entry),
/// restoring the group bits the mask had replaced. Anything else is left as
/// it is.
fn revoke_one(fd: BorrowedFd<'_>, stat: &Stat, uid: u32) -> bool {
    let mut changed = false;
    if let Some(group) = read_acl_fd(fd, ACCESS_ACL).and_then(|e| granted_group(&e, uid)) {
        let removed = fs::fremovexattr(fd, ACCESS_ACL).is_ok();
        let mode = stat.st_mode & 0o7777;
        let restored = (mode & !0o070) | (u32::from(group) << 3);
        let chmod = fs::fchmod(fd, fs::Mode::from_raw_mode(restored));
        changed |= removed && chmod.is_ok();
    }
    if FileType::from_raw_mode(stat.st_mode) == FileType::Directory
        && read_acl_fd(fd, DEFAULT_ACL).is_some_and(|e| granted_group(&e, uid).is_some())
    {
        changed |= fs::fremovexattr(fd, DEFAULT_ACL).is_ok();
    }
    changed
}

/// The group-owner permissions of an ACL that is exactly owner, one named
/// entry for `uid`, group, mask and other: the shape of a grant.
fn granted_group(entries: &[AclEntry], uid: u32) -> Option<u16> {
    match entries {
        [owner, named, group, mask, other]
            if owner.tag == TAG_USER_OBJ
                && named.tag == TAG_USER
                && named.id == uid
                && group.tag == TAG_GROUP_OBJ
                && mask.tag == TAG_MASK
                && other.tag == TAG_OTHER =>
        {
            Some(group.perms)
        }
        _ => None,
    }
}

#[cfg(test)]
fn read_acl(path: &Path, name: &str) -> Option<Vec<AclEntry>> {
    let mut buf = vec![0u8; 1024];
    let len = rustix::fs::lgetxattr(path, name, &mut buf).ok()?;
    decode(buf.get(..len)?)
}

/// Prefix of the journal of grants this process holds.
const JOURNAL_PREFIX: &str = "sandbox-grants-";

fn journal_path(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("{JOURNAL_PREFIX}{pid}"))
}

/// Writes the journal of live grants (`uid<TAB>path` lines) whole, or
/// removes it when nothing is held. A path with a newline is not journaled
/// (it could not be read back) and says so.
fn journal_rewrite(live: &[(PathBuf, u32, usize)]) {
    let path = journal_path(std::process::id());
    if live.is_empty() {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let mut text: Vec<u8> = Vec::new();
    for (root, uid, _) in live {
        let bytes = root.as_os_str().as_bytes();
        if bytes.contains(&b'\n') {
            tracing::warn!(root = %root.display(), "not journaled: the path holds a newline");
            continue;
        }
        text.extend_from_slice(format!("{uid}\t").as_bytes());
        text.extend_from_slice(bytes);
        text.push(b'\n');
    }
    let written = (|| -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)?;
        file.write_all(&text)?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(error) = written {
        tracing::warn!(path = %path.display(), %error, "cannot journal the grants; a killed agent would leave them");
    }
}

/// Another process's journal: where it is, whether its process still runs
/// (by its pid, the name's suffix), and the trees it holds (uid, root).
struct Journal {
    path: PathBuf,
    alive: bool,
    trees: Vec<(u32, PathBuf)>,
}

/// The journals of this user's other processes. Only journals owned by this
/// process's user are trusted.
fn other_journals() -> Vec<Journal> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    let euid = rustix::process::geteuid().as_raw();
    let own = std::process::id();
    let mut journals = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(JOURNAL_PREFIX))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let trusted = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.uid() == euid && m.mode() & 0o022 == 0);
        if pid == own || !trusted {
            continue;
        }
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        let text = std::fs::read(&path).unwrap_or_default();
        let trees = text
            .split(|b| *b == b'\n')
            .filter_map(|line| {
                let tab = line.iter().position(|b| *b == b'\t')?;
                let uid = std::str::from_utf8(&line[..tab])
                    .ok()?
                    .parse::<u32>()
                    .ok()?;
                let root = PathBuf::from(std::ffi::OsStr::from_bytes(&line[tab + 1..]));
                root.is_absolute().then_some((uid, root))
            })
            .collect();
        journals.push(Journal { path, alive, trees });
    }
    journals
}

/// The trees granted to `uid` that other live processes of this user hold.
fn held_elsewhere(uid: u32) -> Vec<PathBuf> {
    other_journals()
        .into_iter()
        .filter(|j| j.alive)
        .flat_map(|j| j.trees)
        .filter(|(u, _)| *u == uid)
        .map(|(_, root)| root)
        .collect()
}

/// Takes back the grants of agents that were killed, from their journals,
/// except trees that this process or another live one holds; returns how
/// many trees.
pub(crate) fn revoke_stale() -> usize {
    let _walks = WalkLock::acquire();
    let journals = other_journals();
    let own: Vec<(u32, PathBuf)> = live()
        .iter()
        .map(|(root, uid, _)| (*uid, root.clone()))
        .collect();
    let held: Vec<(u32, PathBuf)> = journals
        .iter()
        .filter(|j| j.alive)
        .flat_map(|j| j.trees.iter().cloned())
        .chain(own)
        .collect();
    let mut trees = 0;
    for journal in journals.iter().filter(|j| !j.alive) {
        for (uid, root) in &journal.trees {
            let keep: Vec<PathBuf> = held
                .iter()
                .filter(|(u, _)| u == uid)
                .map(|(_, r)| r.clone())
                .collect();
            if !keep.iter().any(|k| root.starts_with(k)) {
                revoke(root, *uid, &keep);
            }
            trees += 1;
        }
        let _ = std::fs::remove_file(&journal.path);
    }
    trees
}

const ACCESS_ACL: &str = "system.posix_acl_access";
const DEFAULT_ACL: &str = "system.posix_acl_default";

fn grant_one(
    fd: BorrowedFd<'_>,
    stat: &Stat,
    identity: RunAs,
    grant: &mut Grant,
) -> std::io::Result<()> {
    if fs::fgetxattr_query(fd, ACCESS_ACL).is_ok_and(|len| len > 0) {
        grant.skipped += 1;
        return Ok(());
    }
    let mode = stat.st_mode;
    let is_dir = FileType::from_raw_mode(mode) == FileType::Directory;
    let owner_x = ((mode >> 6) & 0o1) as u16;
    let user_perms = if is_dir { 0o7 } else { 0o6 | owner_x };
    let acl = AclBuilder::from_mode(mode, identity.uid, user_perms);
    fs::fsetxattr(fd, ACCESS_ACL, &acl.encode(), fs::XattrFlags::empty())?;
    if is_dir && !fs::fgetxattr_query(fd, DEFAULT_ACL).is_ok_and(|len| len > 0) {
        // Default entries give new files the user's access too; `rwx` here
        // is masked by each new file's own creation mode.
        let default = AclBuilder::from_mode(mode, identity.uid, 0o7);
        fs::fsetxattr(fd, DEFAULT_ACL, &default.encode(), fs::XattrFlags::empty())?;
    }
    grant.granted += 1;
    Ok(())
}

fn read_acl_fd(fd: BorrowedFd<'_>, name: &str) -> Option<Vec<AclEntry>> {
    let mut buf = vec![0u8; 1024];
    let len = fs::fgetxattr(fd, name, &mut buf).ok()?;
    decode(buf.get(..len)?)
}

#[cfg(test)]
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
        let held = grant_write(&closed, USER).expect("ACLs on the temporary directory");
        let grant = held.grant();
        assert_eq!(grant.granted, 2, "{grant:?}");
        assert!(reachable_by(&inner, USER));
        assert!(acl_grants(&inner, USER.uid, 0o7));
        // A second grant leaves the existing ACLs alone.
        let again = grant_write(&closed, USER).unwrap();
        assert_eq!((again.grant().granted, again.grant().skipped), (0, 2));
        drop(again);
        // One holder remains: the grant stays.
        assert!(acl_grants(&inner, USER.uid, 0o7));
        drop(held);
        assert!(
            !reachable_by(&inner, USER),
            "taken back with the last holder"
        );
    }

    #[test]
    fn symlinks_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let held = grant_write(dir.path(), USER).expect("ACLs on the temporary directory");
        assert_eq!(held.grant().skipped, 1, "{:?}", held.grant());
        assert!(!acl_grants(outside.path(), USER.uid, 0o1));
    }

    #[test]
    fn a_tree_deeper_than_the_walk_is_granted_to_its_depth_and_taken_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().to_path_buf();
        for _ in 0..MAX_GRANT_DEPTH + 40 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        let held = grant_write(dir.path(), USER).unwrap();
        let grant = held.grant();
        assert_eq!(grant.too_deep, 1, "{grant:?}");
        assert_eq!(grant.granted, MAX_GRANT_DEPTH + 1, "{grant:?}");
        assert!(
            !acl_grants(&deep, USER.uid, 0o1),
            "past the depth: untouched"
        );
        drop(held);
        let mut level = dir.path().to_path_buf();
        for _ in 0..MAX_GRANT_DEPTH {
            level.push("d");
            assert!(
                read_acl(&level, ACCESS_ACL).is_none(),
                "{}",
                level.display()
            );
        }
    }

    #[test]
    fn shared_directories_are_named_and_a_private_one_is_not() {
        assert!(shared_directory(Path::new("/")).is_some());
        let parent = std::env::temp_dir();
        assert!(
            shared_directory(&parent).is_some(),
            "the temporary directory"
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(shared_directory(dir.path()), None);
        let sticky = dir.path().join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let reason = shared_directory(&sticky).unwrap();
        assert!(reason.contains("sticky"), "{reason}");
    }

    #[test]
    fn taking_back_restores_modes_and_cleans_files_made_under_the_grant() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::set_permissions(root.join("a.txt"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
        // A file with an ACL of its own is not the grant's to take back.
        let foreign = root.join("foreign.txt");
        std::fs::write(&foreign, "f").unwrap();
        let foreign_acl = AclBuilder::from_mode(0o600, 4242, 0o4).encode();
        set_acl(&foreign, ACCESS_ACL, &foreign_acl).unwrap();

        let held = grant_write(&root, USER).unwrap();
        assert_ne!(
            std::fs::metadata(root.join("a.txt")).unwrap().mode() & 0o070,
            0o040,
            "the mask widened the group bits"
        );
        // What the code (or a tool) writes later inherits the default entry.
        std::fs::write(root.join("later.txt"), "l").unwrap();
        assert!(read_acl(&root.join("later.txt"), ACCESS_ACL).is_some());
        drop(held);

        assert_eq!(std::fs::metadata(&root).unwrap().mode() & 0o777, 0o750);
        assert_eq!(
            std::fs::metadata(root.join("a.txt")).unwrap().mode() & 0o777,
            0o640
        );
        for path in [&root, &root.join("a.txt"), &root.join("later.txt")] {
            assert!(read_acl(path, ACCESS_ACL).is_none(), "{}", path.display());
        }
        assert!(read_acl(&root, DEFAULT_ACL).is_none());
        let kept = read_acl(&foreign, ACCESS_ACL).unwrap();
        assert!(kept.iter().any(|e| e.tag == TAG_USER && e.id == 4242));
    }

    /// Set when [`a_tree_another_process_holds_is_not_taken_back_under_it`]
    /// runs as its own second process: the directory to hold.
    const HOLD_ENV: &str = "SANDBOX_ACCESS_TEST_HOLD";

    /// Waits (at most a minute) for `path` to exist; whether it does.
    fn appears(path: &Path) -> bool {
        for _ in 0..6000 {
            if path.exists() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        path.exists()
    }

    /// Two test binaries (or two agents) sharing a cache directory: the one
    /// that finishes first used to take the grant back while the other's
    /// code was still writing there (CI: "Permission denied" creating a
    /// virtualenv in the shared cache). The test runs itself again as the
    /// other process, which holds the grant until told to let go.
    #[test]
    fn a_tree_another_process_holds_is_not_taken_back_under_it() {
        if let Some(root) = std::env::var_os(HOLD_ENV).map(PathBuf::from) {
            let held = grant_write(&root, USER).unwrap();
            let parent = root.parent().unwrap();
            std::fs::write(parent.join("ready"), "").unwrap();
            assert!(appears(&parent.join("release")), "never released");
            drop(held);
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        std::fs::create_dir(&root).unwrap();
        let mut other = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "access::tests::a_tree_another_process_holds_is_not_taken_back_under_it",
                "--exact",
                "--test-threads=1",
            ])
            .env(HOLD_ENV, &root)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        assert!(
            appears(&dir.path().join("ready")),
            "the other process never held its grant"
        );
        let mine = grant_write(&root, USER).unwrap();
        drop(mine);
        assert!(
            acl_grants(&root, USER.uid, 0o7),
            "taken back while another process held it"
        );
        // A sandbox starting now must not take it back as stale either.
        revoke_stale();
        assert!(acl_grants(&root, USER.uid, 0o7));
        std::fs::write(dir.path().join("release"), "").unwrap();
        assert!(other.wait().unwrap().success());
        assert!(
            !acl_grants(&root, USER.uid, 0o1),
            "the last holder, in the other process, took it back"
        );
    }

    /// Writes the journal of a process holding `root` for [`USER`].
    fn write_journal(journal: &Path, root: &Path) {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut text = format!("{}\t", USER.uid).into_bytes();
        text.extend_from_slice(root.as_os_str().as_bytes());
        text.push(b'\n');
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(journal)
            .unwrap();
        file.write_all(&text).unwrap();
    }

    #[test]
    fn a_stale_journal_does_not_take_back_what_a_live_process_holds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("shared");
        std::fs::create_dir(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let held = grant_write(&root, USER).unwrap();
        // A killed agent had the same tree.
        let journal = journal_path(4_000_000_001);
        write_journal(&journal, &root);
        // Another test's call may have taken it already: the journal's
        // fate is what counts, not this call's count.
        revoke_stale();
        assert!(!journal.exists());
        assert!(acl_grants(&root, USER.uid, 0o7), "still held here");
        drop(held);
        assert!(!acl_grants(&root, USER.uid, 0o1));
    }

    #[test]
    fn a_journal_left_by_a_dead_agent_is_taken_back_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("left");
        std::fs::create_dir(&root).unwrap();
        // The grant of an agent that was killed: made here, then forgotten.
        let root = root.canonicalize().unwrap();
        let held = grant_write(&root, USER).unwrap();
        std::mem::forget(held);
        {
            let mut live = live();
            live.retain(|(r, _, _)| *r != root);
            journal_rewrite(&live);
        }
        assert!(acl_grants(&root, USER.uid, 0o7));
        // 4,000,000,000 is above any Linux pid_max, so no process has it.
        let journal = journal_path(4_000_000_000);
        write_journal(&journal, &root);
        // Another test's call may have taken it already: the journal's
        // fate is what counts, not this call's count.
        revoke_stale();
        assert!(!journal.exists());
        assert!(!acl_grants(&root, USER.uid, 0o1));
    }

    #[test]
    fn the_walk_lock_is_exclusive_and_refuses_links_and_other_users_files() {
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = WalkLock::acquire_at(&path);
        assert!(first._held.is_some());
        // A second holder (another open file, as another process's would
        // be) waits until the first lets go.
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let second = WalkLock::acquire_at(&path);
                tx.send(second._held.is_some()).unwrap();
            })
        };
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "locked twice at once"
        );
        drop(first);
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
        waiter.join().unwrap();
        // A link in its place is not followed, and nothing is made where it points.
        let target = dir.path().join("elsewhere");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(WalkLock::acquire_at(&link)._held.is_none());
        assert!(!target.exists());
        // A file another user planted is refused: they could hold it
        // forever. Only root can plant one here (CI runs as root).
        if rustix::process::geteuid().is_root() {
            let planted = dir.path().join("planted");
            std::fs::write(&planted, "").unwrap();
            std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
            assert!(WalkLock::acquire_at(&planted)._held.is_none());
        }
    }
}
