//! The scenario's `[[tmpfs]]` mounts on the host: each a tmpfs with the scenario's `size=` and
//! `huge=`, mounted on a directory of this run in the state directory (journaled first, so a
//! killed run is unmounted by the next start), and the shmem ops on its files as write(2),
//! read(2) and unlink(2).

use crate::settings::{Change, HostGuard};
use anyhow::{bail, Context, Result};
use foliosim::scenario::tmpfs::{ShmemHuge, TmpfsSpec};
use foliosim::scenario::Bytes;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const PAGE_SIZE: usize = 4096;

/// The `huge=` option as mount(8) spells it (Documentation/filesystems/tmpfs.rst).
fn huge_option(huge: ShmemHuge) -> &'static str {
    match huge {
        ShmemHuge::Never => "never",
        ShmemHuge::Always => "always",
        ShmemHuge::WithinSize => "within_size",
        ShmemHuge::Advise => "advise",
    }
}

/// The mount's options: `size=` in bytes (the sim's default, half of machine.memory, when the
/// scenario gives none: the kernel's own default is half of the host's RAM), `huge=`, 0700.
pub fn options(spec: &TmpfsSpec, memory: Bytes) -> String {
    let size = spec.max_pages(memory) * PAGE_SIZE as u64;
    format!("size={size},huge={},mode=0700", huge_option(spec.huge))
}

/// Mount every `[[tmpfs]]` on `<state dir>/tmpfs-<pid>-<index>`; the directories, in the
/// mounts' order.
pub fn mount_all(
    guard: &mut HostGuard,
    mounts: &[TmpfsSpec],
    memory: Bytes,
    applied: &mut Vec<String>,
) -> Result<Vec<PathBuf>> {
    let mut dirs = vec![];
    for (i, spec) in mounts.iter().enumerate() {
        let dir = guard
            .dir()
            .join(format!("tmpfs-{}-{i}", std::process::id()));
        let opts = options(spec, memory);
        mount(guard, &dir, &opts)
            .with_context(|| format!("mounting tmpfs[{i}] `{}`", spec.name))?;
        applied.push(format!("tmpfs {} ({}, {opts})", dir.display(), spec.name));
        dirs.push(dir);
    }
    Ok(dirs)
}

/// mkdir (ours alone: it must not exist) and mount a tmpfs with `opts` on it, journaled first.
pub fn mount(guard: &mut HostGuard, dir: &Path, opts: &str) -> Result<()> {
    let path = dir.display().to_string();
    let change = Change::Tmpfs { path: path.clone() };
    guard.record(change.clone())?;
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(dir) {
        guard.unrecord(&change)?;
        return Err(e).with_context(|| format!("creating {path} (refused: it must not exist yet)"));
    }
    let target = std::ffi::CString::new(path.as_str())?;
    let fs = std::ffi::CString::new("tmpfs")?;
    let data = std::ffi::CString::new(opts)?;
    // SAFETY: mount(2) with valid C strings on a directory we created.
    let rc = unsafe {
        libc::mount(
            fs.as_ptr(),
            target.as_ptr(),
            fs.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            data.as_ptr().cast(),
        )
    };
    if rc != 0 {
        bail!(
            "mount -t tmpfs -o {opts} {path}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Where tmpfs file `file` of a run lives on mount directory `dir`.
pub fn path(dir: &Path, file: u32) -> PathBuf {
    dir.join(format!("shmem{file}"))
}

/// The file `file` on whichever mount holds it (ShmemRead and ShmemUnlink name no mount: a
/// file id is the workload's, unique across mounts).
pub fn find(dirs: &[PathBuf], file: u32) -> Result<PathBuf> {
    dirs.iter()
        .map(|d| path(d, file))
        .find(|p| p.exists())
        .with_context(|| format!("no tmpfs file {file} on the run's mounts"))
}

/// write(2) of pages [first, first + nr) of `path` (created at its first write), 1 MiB at a
/// time, each page's words distinct and nonzero as `touch` stores them.
pub fn write(path: &Path, first: u32, nr: u32) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    const CHUNK_PAGES: u32 = 256;
    let words = PAGE_SIZE / 8;
    // Sized to the write and filled whole (see interp::read_file).
    let mut buf = vec![0u8; CHUNK_PAGES.min(nr) as usize * PAGE_SIZE];
    let mut page = first;
    while page < first + nr {
        let n = CHUNK_PAGES.min(first + nr - page) as usize;
        for (i, word) in buf[..n * PAGE_SIZE].chunks_exact_mut(8).enumerate() {
            let value = ((page as usize * words + i) as u64) | 1 << 40;
            word.copy_from_slice(&value.to_le_bytes());
        }
        f.write_all_at(&buf[..n * PAGE_SIZE], page as u64 * PAGE_SIZE as u64)
            .with_context(|| format!("writing {}", path.display()))?;
        page += n as u32;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_options_carry_size_and_huge() {
        let spec = TmpfsSpec {
            name: "build".into(),
            size: Some(Bytes(512 << 20)),
            huge: ShmemHuge::WithinSize,
        };
        assert_eq!(
            options(&spec, Bytes(1 << 30)),
            "size=536870912,huge=within_size,mode=0700"
        );
        let default = TmpfsSpec {
            size: None,
            huge: ShmemHuge::Never,
            ..spec
        };
        assert_eq!(
            options(&default, Bytes(1 << 30)),
            "size=536870912,huge=never,mode=0700"
        );
    }

    #[test]
    fn writes_land_at_their_pages_and_reads_find_the_file() {
        let dir = std::env::temp_dir().join(format!("foliosim-tmpfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write(&path(&dir, 3), 2, 3).unwrap();
        assert_eq!(std::fs::metadata(path(&dir, 3)).unwrap().len(), 5 * 4096);
        let dirs = vec![dir.join("none"), dir.clone()];
        assert_eq!(find(&dirs, 3).unwrap(), path(&dir, 3));
        let e = find(&dirs, 4).unwrap_err().to_string();
        assert!(e.contains("tmpfs file 4"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
