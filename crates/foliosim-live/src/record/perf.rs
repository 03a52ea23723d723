//! The kernel's tracepoints through perf_event_open(2), as `perf record -e ... -- CMD` uses
//! them, without the perf tool: on every CPU one event per tracepoint, following the command
//! and everything it forks (inherit), enabled at its exec, sharing one ring buffer per CPU
//! (PERF_EVENT_IOC_SET_OUTPUT); the first also reports forks, exits, execs, exec-time mappings
//! and context switches (side-band records). Timestamps are CLOCK_MONOTONIC in ns.
//!
//! Tracepoints: exceptions:page_fault_user and exceptions:page_fault_kernel (address and
//! error code of every fault, arch/x86/include/asm/trace/exceptions.h), raw_syscalls:sys_enter
//! and sys_exit filtered to the memory-map syscalls. Sampling every event (period 1) is never
//! throttled for tracepoints (perf_swevent_overflow only throttles the 2nd overflow of one
//! event); a full ring buffer loses records, which PERF_RECORD_LOST counts.

use crate::settings::{Change, HostGuard};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

/// The tracepoints' ids and field offsets, read from tracefs (events/*/*/{id,format}).
#[derive(Debug, Clone)]
pub struct Tracepoints {
    pub fault_user: u16,
    pub fault_kernel: u16,
    pub sys_enter: u16,
    pub sys_exit: u16,
    /// Offsets in the raw record of the fault's address and error_code.
    pub fault_address: usize,
    pub fault_error_code: usize,
    pub sys_id: usize,
    pub sys_args: usize,
    pub sys_ret: usize,
}

const TRACEPOINTS: [&str; 4] = [
    "exceptions/page_fault_user",
    "exceptions/page_fault_kernel",
    "raw_syscalls/sys_enter",
    "raw_syscalls/sys_exit",
];

/// A field's offset from a tracepoint `format` file (`field:... NAME;\toffset:N;`).
fn field_offset(format: &str, name: &str) -> Option<usize> {
    format.lines().find_map(|l| {
        let decl = l.trim().strip_prefix("field:")?.split(';').next()?;
        let field = decl.split_whitespace().last()?;
        let field = field.split('[').next()?;
        if field != name {
            return None;
        }
        l.split("offset:").nth(1)?.split(';').next()?.parse().ok()
    })
}

fn mounted_tracefs() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let (_, dir, kind) = (w.next()?, w.next()?, w.next()?);
        (kind == "tracefs").then(|| PathBuf::from(dir))
    })
}

/// Read the tracepoints from a mounted tracefs, or mount one on a directory of our own for the
/// moment it takes (journaled: unmounted again even if we are killed).
pub fn tracepoints(guard: &mut HostGuard) -> Result<Tracepoints> {
    if let Some(dir) = mounted_tracefs() {
        return read_tracepoints(&dir);
    }
    let dir = mount_tracefs(guard)?;
    let ids = read_tracepoints(&dir);
    unmount_tracefs(&dir);
    ids
}

/// Mount tracefs on a directory of ours in the state dir (journaled first).
pub fn mount_tracefs(guard: &mut HostGuard) -> Result<PathBuf> {
    let dir = guard.dir().join(format!("tracefs-{}", std::process::id()));
    let path = dir.display().to_string();
    let change = Change::Mount { path: path.clone() };
    guard.record(change.clone())?;
    if let Err(e) = std::fs::create_dir(&dir) {
        guard.unrecord(&change)?;
        return Err(e).with_context(|| format!("creating {path} (refused: it must not exist yet)"));
    }
    let c = std::ffi::CString::new(path.as_str())?;
    let fs = std::ffi::CString::new("tracefs")?;
    // SAFETY: mount(2) with valid C strings on a directory we created.
    let rc = unsafe {
        libc::mount(
            fs.as_ptr(),
            c.as_ptr(),
            fs.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        bail!(
            "mounting tracefs on {path} (to read the tracepoints' ids): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(dir)
}

/// Unmount what `mount_tracefs` mounted and remove its directory.
pub fn unmount_tracefs(dir: &Path) {
    if let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) {
        // SAFETY: unmounting what we mounted.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
    let _ = std::fs::remove_dir(dir);
}

fn read_tracepoints(dir: &Path) -> Result<Tracepoints> {
    let mut ids = [0u16; 4];
    let mut formats = vec![];
    for (i, tp) in TRACEPOINTS.iter().enumerate() {
        let base = dir.join("events").join(tp);
        let id = std::fs::read_to_string(base.join("id")).with_context(|| {
            format!(
                "tracepoint {tp} not found in {} (a kernel with CONFIG_TRACEPOINTS, x86 page-fault tracepoints and syscall tracepoints is needed)",
                dir.display()
            )
        })?;
        ids[i] = id.trim().parse().context("tracepoint id")?;
        formats.push(std::fs::read_to_string(base.join("format"))?);
    }
    let off = |i: usize, name: &str| {
        field_offset(&formats[i], name)
            .with_context(|| format!("field `{name}` of tracepoint {}", TRACEPOINTS[i]))
    };
    Ok(Tracepoints {
        fault_user: ids[0],
        fault_kernel: ids[1],
        sys_enter: ids[2],
        sys_exit: ids[3],
        fault_address: off(0, "address")?,
        fault_error_code: off(0, "error_code")?,
        sys_id: off(2, "id")?,
        sys_args: off(2, "args")?,
        sys_ret: off(3, "ret")?,
    })
}

/// struct perf_event_attr up to PERF_ATTR_SIZE_VER5 (include/uapi/linux/perf_event.h).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_RAW: u64 = 1 << 10;
// perf_event_attr flag bits, in declaration order.
const F_DISABLED: u64 = 1 << 0;
const F_INHERIT: u64 = 1 << 1;
const F_MMAP: u64 = 1 << 8;
const F_COMM: u64 = 1 << 9;
const F_ENABLE_ON_EXEC: u64 = 1 << 12;
const F_TASK: u64 = 1 << 13;
const F_MMAP_DATA: u64 = 1 << 17;
const F_SAMPLE_ID_ALL: u64 = 1 << 18;
const F_MMAP2: u64 = 1 << 23;
const F_COMM_EXEC: u64 = 1 << 24;
const F_USE_CLOCKID: u64 = 1 << 25;
const F_CONTEXT_SWITCH: u64 = 1 << 26;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
const IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32, what: &str) -> Result<OwnedFd> {
    // SAFETY: the syscall reads `attr` (of the size it states) and returns a new fd.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        bail!(
            "perf_event_open({what}, cpu {cpu}): {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: a fresh fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn ioctl(fd: &OwnedFd, req: libc::c_ulong, arg: libc::c_ulong, what: &str) -> Result<()> {
    // SAFETY: a perf ioctl on our own fd; `arg` is an fd or a pointer to a C string.
    if unsafe { libc::ioctl(fd.as_raw_fd(), req, arg) } != 0 {
        bail!("perf ioctl {what}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// One CPU's ring buffer and what was copied out of it so far.
struct CpuBuffer {
    cpu: u32,
    leader: OwnedFd,
    _others: Vec<OwnedFd>,
    map: *mut u8,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
    tail: u64,
    bytes: Vec<u8>,
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        // SAFETY: our own mapping.
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

pub struct Session {
    buffers: Vec<CpuBuffer>,
}

/// The CPUs that are online (`/sys/devices/system/cpu/online`: `0-3,5`).
fn online_cpus() -> Result<Vec<u32>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    let mut cpus = vec![];
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>()?..=b.parse::<u32>()?),
            None => cpus.push(part.parse()?),
        }
    }
    Ok(cpus)
}

/// One CPU's events: the user page-fault tracepoint leads (with the side-band records) and
/// the kernel-fault and syscall tracepoints write into its ring buffer, mapped here.
fn open_cpu(
    cpu: u32,
    pid: i32,
    tp: &Tracepoints,
    filter_ids: &str,
    buffer_pages: usize,
) -> Result<CpuBuffer> {
    let attr = |config: u16, extra: u64| PerfEventAttr {
        kind: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: config as u64,
        sample_period: 1,
        sample_type: SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_RAW,
        flags: F_DISABLED | F_INHERIT | F_ENABLE_ON_EXEC | F_SAMPLE_ID_ALL | F_USE_CLOCKID | extra,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    let side_band =
        F_MMAP | F_MMAP2 | F_MMAP_DATA | F_COMM | F_COMM_EXEC | F_TASK | F_CONTEXT_SWITCH;
    let c = cpu as i32;
    let leader = perf_event_open(&attr(tp.fault_user, side_band), pid, c, "page_fault_user")?;
    let mut others = vec![];
    for (id, what, filter) in [
        (
            tp.fault_kernel,
            "page_fault_kernel",
            // Kernel-mode faults on user addresses (copy_to_user into a new buffer).
            "address < 0x800000000000".to_string(),
        ),
        (tp.sys_enter, "sys_enter", filter_ids.to_string()),
        (tp.sys_exit, "sys_exit", filter_ids.to_string()),
    ] {
        let fd = perf_event_open(&attr(id, 0), pid, c, what)?;
        let f = std::ffi::CString::new(filter)?;
        ioctl(
            &fd,
            IOC_SET_FILTER,
            f.as_ptr() as libc::c_ulong,
            "SET_FILTER",
        )?;
        others.push(fd);
    }
    let (map, map_len, data_offset, data_size) = map_ring(&leader, cpu, buffer_pages)?;
    for fd in &others {
        ioctl(
            fd,
            IOC_SET_OUTPUT,
            leader.as_raw_fd() as libc::c_ulong,
            "SET_OUTPUT",
        )?;
    }
    Ok(CpuBuffer {
        cpu,
        leader,
        _others: others,
        map,
        map_len,
        data_offset,
        data_size,
        tail: 0,
        bytes: Vec::new(),
    })
}

/// mmap of the leader's ring buffer (a control page and `buffer_pages` of data): the map,
/// its length, and where its data area lies.
fn map_ring(
    leader: &OwnedFd,
    cpu: u32,
    buffer_pages: usize,
) -> Result<(*mut u8, usize, usize, usize)> {
    let page = 4096usize;
    let map_len = (1 + buffer_pages) * page;
    // SAFETY: mapping the perf ring buffer of our own fd.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            leader.as_raw_fd(),
            0,
        )
    };
    if map == libc::MAP_FAILED {
        bail!(
            "mmap of the perf ring buffer ({} KiB, cpu {cpu}): {}",
            map_len / 1024,
            std::io::Error::last_os_error()
        );
    }
    let map = map as *mut u8;
    // SAFETY: perf_event_mmap_page: data_offset at 1040, data_size at 1048.
    let (data_offset, data_size) = unsafe {
        (
            std::ptr::read_volatile(map.add(1040) as *const u64) as usize,
            std::ptr::read_volatile(map.add(1048) as *const u64) as usize,
        )
    };
    if data_size == 0 {
        return Ok((map, map_len, page, buffer_pages * page));
    }
    Ok((map, map_len, data_offset, data_size))
}

impl Session {
    /// Events for process `pid` (not yet exec'd: they start counting at its exec) and all it
    /// forks; `buffer_pages` (a power of two) of ring buffer per CPU. `syscalls`: the ids kept.
    pub fn open(
        pid: i32,
        tp: &Tracepoints,
        syscalls: &[i64],
        buffer_pages: usize,
    ) -> Result<Session> {
        let filter_ids = syscalls
            .iter()
            .map(|n| format!("id == {n}"))
            .collect::<Vec<_>>()
            .join(" || ");
        let mut buffers = vec![];
        for cpu in online_cpus()? {
            buffers.push(open_cpu(cpu, pid, tp, &filter_ids, buffer_pages)?);
        }
        Ok(Session { buffers })
    }

    /// Copy what the kernel wrote since the last call; returns the bytes copied.
    pub fn drain(&mut self) -> usize {
        let mut total = 0;
        for b in &mut self.buffers {
            // SAFETY: data_head at 1024 of the control page; the kernel writes it.
            let head = unsafe { std::ptr::read_volatile(b.map.add(1024) as *const u64) };
            fence(Ordering::Acquire);
            let mut at = b.tail;
            while at < head {
                let off = (at % b.data_size as u64) as usize;
                let n = ((head - at) as usize).min(b.data_size - off);
                // SAFETY: within the data area of our mapping.
                let src = unsafe { std::slice::from_raw_parts(b.map.add(b.data_offset + off), n) };
                b.bytes.extend_from_slice(src);
                at += n as u64;
            }
            total += (head - b.tail) as usize;
            fence(Ordering::SeqCst);
            // SAFETY: data_tail at 1032: we tell the kernel what we have read.
            unsafe { std::ptr::write_volatile(b.map.add(1032) as *mut u64, head) };
            b.tail = head;
        }
        total
    }

    /// Stop the events, take the last records, and return each CPU's record stream.
    pub fn finish(mut self) -> Vec<(u32, Vec<u8>)> {
        for b in &self.buffers {
            let _ = ioctl(&b.leader, IOC_DISABLE, 0, "DISABLE");
        }
        self.drain();
        self.buffers
            .iter_mut()
            .map(|b| (b.cpu, std::mem::take(&mut b.bytes)))
            .collect()
    }
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq)]
pub struct RawEvent {
    pub time: u64,
    pub pid: u32,
    pub tid: u32,
    pub kind: RawKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RawKind {
    Fault {
        addr: u64,
        write: bool,
    },
    SysEnter {
        nr: i64,
        args: [u64; 6],
    },
    SysExit {
        nr: i64,
        ret: i64,
    },
    /// pid/tid: the new task's.
    Fork {
        ppid: u32,
        ptid: u32,
    },
    Exit,
    Exec {
        comm: String,
    },
    Mmap {
        addr: u64,
        len: u64,
        flags: u32,
        name: String,
    },
    SwitchIn,
    SwitchOut,
}

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_MMAP2: u32 = 10;
const RECORD_LOST_SAMPLES: u32 = 13;
const RECORD_SWITCH: u32 = 14;
const MISC_COMM_EXEC: u16 = 1 << 13;
const MISC_SWITCH_OUT: u16 = 1 << 13;
/// sample_id of a side-band record with TID | TIME | CPU: pid, tid, time, cpu, reserved.
const SAMPLE_ID_LEN: usize = 24;

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Decode one CPU's record stream; returns (events, records lost).
pub fn decode(stream: &[u8], tp: &Tracepoints) -> (Vec<RawEvent>, u64) {
    let mut out = vec![];
    let mut lost = 0;
    let mut at = 0;
    while at + 8 <= stream.len() {
        let kind = u32_at(stream, at).unwrap_or(0);
        let misc = u16::from_le_bytes([stream[at + 4], stream[at + 5]]);
        let size = u16::from_le_bytes([stream[at + 6], stream[at + 7]]) as usize;
        if size < 8 || at + size > stream.len() {
            break;
        }
        let rec = &stream[at..at + size];
        let body = &rec[8..];
        at += size;
        let ev = match kind {
            RECORD_SAMPLE => decode_sample(body, tp),
            RECORD_LOST => {
                lost += u64_at(body, 8).unwrap_or(0);
                None
            }
            RECORD_LOST_SAMPLES => {
                lost += u64_at(body, 0).unwrap_or(0);
                None
            }
            _ => decode_side_band(kind, misc, rec),
        };
        out.extend(ev);
    }
    (out, lost)
}

/// A side-band record (fork, exit, exec, mmap, context switch), its time from the
/// sample_id trailer; None for any other record.
fn decode_side_band(kind: u32, misc: u16, rec: &[u8]) -> Option<RawEvent> {
    let body = &rec[8..];
    let t = rec.len().checked_sub(SAMPLE_ID_LEN)?;
    let (trailer_pid, trailer_tid) = (u32_at(rec, t)?, u32_at(rec, t + 4)?);
    let time = u64_at(rec, t + 8)?;
    let (pid, tid, kind) = match kind {
        RECORD_FORK | RECORD_EXIT => {
            let (pid, ppid, tid, ptid) = (
                u32_at(body, 0)?,
                u32_at(body, 4)?,
                u32_at(body, 8)?,
                u32_at(body, 12)?,
            );
            let kind = if kind == RECORD_FORK {
                RawKind::Fork { ppid, ptid }
            } else {
                RawKind::Exit
            };
            (pid, tid, kind)
        }
        RECORD_COMM if misc & MISC_COMM_EXEC != 0 => {
            let (pid, tid) = (u32_at(body, 0)?, u32_at(body, 4)?);
            let comm = cstr(body.get(8..)?);
            (pid, tid, RawKind::Exec { comm })
        }
        RECORD_MMAP2 => {
            let (pid, tid) = (u32_at(body, 0)?, u32_at(body, 4)?);
            let (addr, len) = (u64_at(body, 8)?, u64_at(body, 16)?);
            let flags = u32_at(body, 60)?;
            let name = cstr(body.get(64..)?);
            let kind = RawKind::Mmap {
                addr,
                len,
                flags,
                name,
            };
            (pid, tid, kind)
        }
        RECORD_SWITCH if misc & MISC_SWITCH_OUT != 0 => {
            (trailer_pid, trailer_tid, RawKind::SwitchOut)
        }
        RECORD_SWITCH => (trailer_pid, trailer_tid, RawKind::SwitchIn),
        _ => return None,
    };
    Some(RawEvent {
        time,
        pid,
        tid,
        kind,
    })
}

/// A sample: pid, tid, time, cpu, reserved, raw size, raw data (the tracepoint's fields).
fn decode_sample(body: &[u8], tp: &Tracepoints) -> Option<RawEvent> {
    let (pid, tid, time) = (u32_at(body, 0)?, u32_at(body, 4)?, u64_at(body, 8)?);
    let raw_len = u32_at(body, 24)? as usize;
    let raw = body.get(28..28 + raw_len)?;
    let id = u16::from_le_bytes(raw.get(0..2)?.try_into().ok()?);
    let kind = if id == tp.fault_user || id == tp.fault_kernel {
        let error_code = u64_at(raw, tp.fault_error_code)?;
        RawKind::Fault {
            addr: u64_at(raw, tp.fault_address)?,
            // X86_PF_WRITE
            write: error_code & 2 != 0,
        }
    } else if id == tp.sys_enter {
        let mut args = [0u64; 6];
        for (i, a) in args.iter_mut().enumerate() {
            *a = u64_at(raw, tp.sys_args + 8 * i)?;
        }
        RawKind::SysEnter {
            nr: u64_at(raw, tp.sys_id)? as i64,
            args,
        }
    } else if id == tp.sys_exit {
        RawKind::SysExit {
            nr: u64_at(raw, tp.sys_id)? as i64,
            ret: u64_at(raw, tp.sys_ret)? as i64,
        }
    } else {
        return None;
    };
    Some(RawEvent {
        time,
        pid,
        tid,
        kind,
    })
}

/// Every CPU's events in time order (ties: CPU, then stream order).
pub fn merge(streams: &[(u32, Vec<u8>)], tp: &Tracepoints) -> (Vec<RawEvent>, u64) {
    let mut all: Vec<(u64, u32, usize, RawEvent)> = vec![];
    let mut lost = 0;
    for (cpu, bytes) in streams {
        let (events, l) = decode(bytes, tp);
        lost += l;
        all.extend(
            events
                .into_iter()
                .enumerate()
                .map(|(i, e)| (e.time, *cpu, i, e)),
        );
    }
    all.sort_by_key(|(t, c, i, _)| (*t, *c, *i));
    (all.into_iter().map(|(_, _, _, e)| e).collect(), lost)
}

/// Count records by kind in a stream (for progress): (faults and syscalls, side band).
pub fn count(stream: &[u8], from: &mut usize) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    while *from + 8 <= stream.len() {
        let kind = u32_at(stream, *from).unwrap_or(0);
        let size = u16::from_le_bytes([stream[*from + 6], stream[*from + 7]]) as usize;
        if size < 8 || *from + size > stream.len() {
            break;
        }
        *from += size;
        *counts
            .entry(if kind == RECORD_SAMPLE {
                "samples"
            } else {
                "other"
            })
            .or_default() += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_offsets_come_from_the_format_file() {
        let f = "name: sys_enter\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n";
        assert_eq!(field_offset(f, "id"), Some(8));
        assert_eq!(field_offset(f, "args"), Some(16));
        assert_eq!(field_offset(f, "ret"), None);
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);
    }

    #[test]
    fn decodes_samples_and_side_band_records() {
        let tp = Tracepoints {
            fault_user: 190,
            fault_kernel: 189,
            sys_enter: 443,
            sys_exit: 442,
            fault_address: 8,
            fault_error_code: 24,
            sys_id: 8,
            sys_args: 16,
            sys_ret: 16,
        };
        let mut s = vec![];
        // A fault sample: header, pid, tid, time, cpu, res, raw size, raw (padded to 8).
        let mut raw = vec![0u8; 32];
        raw[0..2].copy_from_slice(&190u16.to_le_bytes());
        raw[8..16].copy_from_slice(&0x7f00_0000_1000u64.to_le_bytes());
        raw[24..32].copy_from_slice(&6u64.to_le_bytes());
        let size = 8 + 28 + raw.len() + 4;
        s.extend(RECORD_SAMPLE.to_le_bytes());
        s.extend(0u16.to_le_bytes());
        s.extend((size as u16).to_le_bytes());
        s.extend(10u32.to_le_bytes());
        s.extend(11u32.to_le_bytes());
        s.extend(5000u64.to_le_bytes());
        s.extend(0u64.to_le_bytes());
        s.extend((raw.len() as u32).to_le_bytes());
        s.extend(&raw);
        s.extend([0u8; 4]);
        // A fork record with its sample_id.
        s.extend(RECORD_FORK.to_le_bytes());
        s.extend(0u16.to_le_bytes());
        s.extend((8u16 + 24 + 24).to_le_bytes());
        for v in [12u32, 10, 12, 11] {
            s.extend(v.to_le_bytes());
        }
        s.extend(4000u64.to_le_bytes());
        s.extend(10u32.to_le_bytes());
        s.extend(11u32.to_le_bytes());
        s.extend(4000u64.to_le_bytes());
        s.extend(0u64.to_le_bytes());
        let (events, lost) = merge(&[(0, s)], &tp);
        assert_eq!(lost, 0);
        assert_eq!(
            events,
            [
                RawEvent {
                    time: 4000,
                    pid: 12,
                    tid: 12,
                    kind: RawKind::Fork { ppid: 10, ptid: 11 }
                },
                RawEvent {
                    time: 5000,
                    pid: 10,
                    tid: 11,
                    kind: RawKind::Fault {
                        addr: 0x7f00_0000_1000,
                        write: true
                    }
                }
            ]
        );
    }
}
