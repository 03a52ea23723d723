//! Swap devices the live backend creates: a zram device (hot_added, so we never touch one
//! someone else uses), a swap file in the state directory, or a loop device over one; mkswap,
//! swapon, swapoff.

use crate::settings::{read_knob, write_knob, Change, HostGuard};
use anyhow::{bail, Context, Result};
use foliosim::scenario::{SwapDeviceKind, SwapDeviceSpec};
use std::ffi::CString;
use std::fs;
use std::path::Path;
use std::process::Command;

const ZRAM_CONTROL: &str = "/sys/class/zram-control";
/// Every path we create carries this prefix, so a human can tell what it is.
pub const PREFIX: &str = "foliosim-";

/// A swap area this run turned on.
#[derive(Debug, Clone)]
pub struct SwapArea {
    pub kind: SwapDeviceKind,
    /// What swapon was given: /dev/zramN, /dev/loopN or the swap file.
    pub path: String,
    pub zram_id: Option<u32>,
}

/// The kinds the live backend can create, for error messages.
pub const LIVE_KINDS: &str = "zram, file, loop, ssd (a swap file on the host's disk)";

pub fn check_supported(i: usize, spec: &SwapDeviceSpec) -> Result<()> {
    match spec.kind {
        SwapDeviceKind::Zram | SwapDeviceKind::File | SwapDeviceKind::Loop => Ok(()),
        SwapDeviceKind::Ssd => Ok(()),
        other => bail!(
            "scenario field `machine.swap[{i}].kind`: found {}; allowed live: {LIVE_KINDS}",
            format!("{other:?}").to_lowercase()
        ),
    }
}

/// Create and swapon one device; every step is journaled before it is made.
pub fn create(
    guard: &mut HostGuard,
    i: usize,
    spec: &SwapDeviceSpec,
    comp_algorithm: &str,
) -> Result<SwapArea> {
    check_supported(i, spec)?;
    let (path, zram_id) = match spec.kind {
        SwapDeviceKind::Zram => {
            let id = zram_add(guard)?;
            let dir = format!("/sys/block/zram{id}");
            write_knob(&format!("{dir}/comp_algorithm"), comp_algorithm).with_context(|| {
                format!("zram{id} does not offer compressor `{comp_algorithm}` (sysfs.zram.comp_algorithm)")
            })?;
            write_knob(&format!("{dir}/disksize"), &spec.size.0.to_string())?;
            (format!("/dev/zram{id}"), Some(id))
        }
        SwapDeviceKind::File | SwapDeviceKind::Ssd => (swap_file(guard, i, spec.size.0)?, None),
        SwapDeviceKind::Loop => {
            let file = swap_file(guard, i, spec.size.0)?;
            guard.record(Change::Loop {
                backing_file: file.clone(),
            })?;
            let out = run("losetup", &["--find", "--show", &file])?;
            (out.trim().to_string(), None)
        }
        _ => unreachable!("checked above"),
    };
    wait_for_node(&path)?;
    run("mkswap", &["-L", &format!("{PREFIX}swap{i}"), &path])?;
    guard.record(Change::Swapon { path: path.clone() })?;
    swapon(&path, spec.priority)?;
    Ok(SwapArea {
        kind: spec.kind,
        path,
        zram_id,
    })
}

/// A new zram device, hot_added: a device we did not add may be someone else's (an idle one
/// still belongs to whoever set it up), so without zram-control we refuse.
fn zram_add(guard: &mut HostGuard) -> Result<u32> {
    zram_add_via(guard, Path::new(ZRAM_CONTROL))
}

/// As `zram_add`, with zram-control at `control` (a test points it at a missing directory).
#[doc(hidden)]
pub fn zram_add_via(guard: &mut HostGuard, control: &Path) -> Result<u32> {
    if !control.exists() {
        bail!("this kernel's zram has no {}/hot_add, and the live backend never takes a zram device it did not add (load zram with hot-add support: modprobe zram, kernel 4.2+)", control.display());
    }
    let existing = zram_ids();
    let expected = lowest_free_id(&existing);
    guard.record(Change::ZramHotAdd {
        existing,
        expected: Some(expected),
    })?;
    // Reading hot_add creates a device and returns its id.
    let id: u32 = read_knob(&format!("{}/hot_add", control.display()))?
        .parse()
        .context("zram hot_add returned no id")?;
    guard.record(Change::Zram {
        id,
        hot_added: true,
    })?;
    Ok(id)
}

/// The id hot_add gives next: the lowest not in use (idr_alloc from 0 in zram_add).
pub fn lowest_free_id(existing: &[u32]) -> u32 {
    (0..).find(|id| !existing.contains(id)).unwrap_or(u32::MAX)
}

/// Reset a zram device we configured and remove it if we added it.
pub fn zram_release(id: u32, hot_added: bool) -> Result<()> {
    let dir = format!("/sys/block/zram{id}");
    if !Path::new(&dir).exists() {
        return Ok(());
    }
    swapoff_if_active(&format!("/dev/zram{id}"))?;
    write_knob(&format!("{dir}/reset"), "1")?;
    if hot_added {
        write_knob(&format!("{ZRAM_CONTROL}/hot_remove"), &id.to_string())?;
    }
    Ok(())
}

/// The ids of the zram devices present.
pub fn zram_ids() -> Vec<u32> {
    let mut ids: Vec<u32> = fs::read_dir("/sys/block")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("zram")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

/// Undo a hot_add whose id was never journaled: remove the device it would have made,
/// `expected`, if it is new (not in `existing`) and unconfigured; any other new device is
/// someone else's. Old journals without `expected` remove nothing.
pub fn zram_remove_unconfigured(existing: &[u32], expected: Option<u32>) -> Result<()> {
    let Some(id) = expected.filter(|id| !existing.contains(id)) else {
        return Ok(());
    };
    if !Path::new(ZRAM_CONTROL).exists() || !zram_ids().contains(&id) {
        return Ok(());
    }
    if read_knob(&format!("/sys/block/zram{id}/initstate")).is_ok_and(|v| v == "0") {
        write_knob(&format!("{ZRAM_CONTROL}/hot_remove"), &id.to_string())?;
    }
    Ok(())
}

/// A swap file of this run in the state directory, beside the journal: a restore after a
/// reboot still finds and removes it. Never an existing file: created exclusively (O_EXCL,
/// no symlink followed), and a name already taken is refused, not adopted.
fn swap_file(guard: &mut HostGuard, i: usize, size_bytes: u64) -> Result<String> {
    let path = swap_file_path(guard.dir(), i);
    let change = Change::File { path: path.clone() };
    guard.record(change.clone())?;
    let file = match create_exclusive(Path::new(&path)) {
        Ok(f) => f,
        Err(e) => {
            guard.unrecord(&change)?;
            return Err(e).with_context(|| {
                format!("creating swap file {path} (refused: it must not exist yet)")
            });
        }
    };
    // Swap files must have no holes: allocate every block.
    use std::os::unix::io::AsRawFd;
    // SAFETY: fallocate on an fd we own.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size_bytes as libc::off_t) };
    if rc != 0 {
        bail!(
            "allocating {size_bytes} bytes for {path}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(path)
}

/// Where swap device `i` of this process goes as a file.
pub fn swap_file_path(state_dir: &Path, i: usize) -> String {
    state_dir
        .join(format!("{PREFIX}swap-{}-{i}", std::process::id()))
        .display()
        .to_string()
}

/// A new file, mode 0600: fails if the path exists (a symlink included).
pub fn create_exclusive(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// The loop devices whose backing file is `file`.
pub fn loops_over(file: &str) -> Vec<String> {
    let Ok(dir) = fs::read_dir("/sys/block") else {
        return vec![];
    };
    let mut out: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let backing = fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            // The kernel appends " (deleted)" once the file is unlinked.
            let backing = backing.trim().trim_end_matches(" (deleted)");
            (name.starts_with("loop") && backing == file).then(|| format!("/dev/{name}"))
        })
        .collect();
    out.sort();
    out
}

/// Detach every loop device over `file` (swapoff first).
pub fn loop_detach_file(file: &str) -> Result<()> {
    for device in loops_over(file) {
        loop_detach(&device)?;
    }
    Ok(())
}

pub fn loop_detach(device: &str) -> Result<()> {
    if !Path::new(device).exists() {
        return Ok(());
    }
    swapoff_if_active(device)?;
    // Detaching a device that is no longer attached fails harmlessly; check first.
    let name = device.trim_start_matches("/dev/");
    if !Path::new(&format!("/sys/block/{name}/loop")).exists() {
        return Ok(());
    }
    run("losetup", &["-d", device]).map(|_| ())
}

fn wait_for_node(path: &str) -> Result<()> {
    // devtmpfs creates the node asynchronously after hot_add / losetup.
    for _ in 0..200 {
        if Path::new(path).exists() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    bail!("{path} did not appear")
}

// include/linux/swap.h
const SWAP_FLAG_PREFER: i32 = 0x8000;
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

fn swapon(path: &str, priority: i32) -> Result<()> {
    let c = CString::new(path)?;
    // A negative priority means "let the kernel assign one" (as swapon without -p).
    let flags = if priority >= 0 {
        SWAP_FLAG_PREFER | (priority & SWAP_FLAG_PRIO_MASK)
    } else {
        0
    };
    // SAFETY: swapon(2) with a valid C string.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        bail!("swapon {path}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Paths in /proc/swaps.
pub fn active_swaps() -> Result<Vec<String>> {
    let text = fs::read_to_string("/proc/swaps").context("reading /proc/swaps")?;
    Ok(parse_proc_swaps(&text))
}

pub fn parse_proc_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        // /proc/swaps escapes spaces etc. in paths as \040; our paths have none.
        .map(|p| p.to_string())
        .collect()
}

pub fn swapoff_if_active(path: &str) -> Result<()> {
    let canonical = fs::canonicalize(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string());
    if !active_swaps()?.iter().any(|p| p == path || *p == canonical) {
        return Ok(());
    }
    let c = CString::new(path)?;
    // swapoff brings every swapped page back in; it can take a while and can be interrupted.
    loop {
        // SAFETY: swapoff(2) with a valid C string.
        if unsafe { libc::swapoff(c.as_ptr()) } == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            bail!("swapoff {path}: {err}");
        }
    }
}

fn run(cmd: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .with_context(|| format!("running {cmd}"))?;
    if !out.status.success() {
        bail!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn proc_swaps_paths() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/zram1                              partition\t524284\t\t0\t\t-2\n\
                    /var/tmp/foliosim-swap-1-0              file\t\t1048572\t\t0\t\t5\n";
        assert_eq!(
            super::parse_proc_swaps(text),
            vec!["/dev/zram1", "/var/tmp/foliosim-swap-1-0"]
        );
    }
}
