//! docs/extending.md's worked example of a workload: `nproc` processes each map `size` of
//! anonymous memory and store to one page in every `stride_pages`, `passes` times (a sparse
//! writer, such as a hash table filled at random strides). With mTHP, the first store into a
//! folio-sized range faults in the whole folio, so the memory it takes depends on the folio
//! size and not only on the pages it writes. Registered only in test builds (mod.rs).

use super::{throughput_report, Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::mm::mmap::ThpAdvice;
use crate::scenario::Bytes;
use serde::Deserialize;

/// The registry's row: `kind = "registered"`, `name = "strided_write"`, `[workload.params]`.
pub const ENTRY: super::WorkloadEntry = super::WorkloadEntry {
    name: "strided_write",
    doc: "example (test builds only): store to one page in every stride_pages of size",
    tasks,
    report,
};

/// `[workload.params]`: its own fields, checked by serde and `check`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    nproc: u32,
    size: Bytes,
    stride_pages: u32,
    #[serde(default = "one")]
    passes: u32,
}

fn one() -> u32 {
    1
}

impl Params {
    fn parse(params: &toml::Table) -> Result<Params, String> {
        let p: Params = params.clone().try_into().map_err(|e| format!("params: {e}"))?;
        let pages = p.size.pages();
        for (name, v, lo, hi) in [
            ("nproc", p.nproc as u64, 1, 4096),
            ("size (pages)", pages, 1, 1 << 26),
            ("stride_pages", p.stride_pages as u64, 1, pages.max(1)),
            ("passes", p.passes as u64, 1, 1000),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(format!("params.{name} = {v}: allowed {lo} ..= {hi}"));
            }
        }
        Ok(p)
    }

    /// Pages stored to per pass.
    fn touched_pages(&self) -> u64 {
        self.size.pages().div_ceil(self.stride_pages as u64)
    }
}

fn tasks(params: &toml::Table, memcg: Option<&str>, _seed: u64) -> Result<Vec<TaskSpec>, String> {
    let p = Params::parse(params)?;
    let nr_pages = p.size.pages() as u32;
    let mut ops = vec![
        Op::Mmap {
            vma: 0,
            nr_pages,
            thp: ThpAdvice::Default,
        },
        Op::Mark(0),
    ];
    for _ in 0..p.passes {
        ops.extend((0..nr_pages).step_by(p.stride_pages as usize).map(|first| Op::Touch {
            vma: 0,
            first,
            nr: 1,
            write: true,
        }));
    }
    ops.extend([Op::Mark(1), Op::Exit]);
    Ok((0..p.nproc)
        .map(|i| TaskSpec {
            name: format!("strided_write-{i}"),
            memcg: memcg.map(str::to_string),
            ops: ops.clone(),
            shares_mm_with: None,
        })
        .collect())
}

/// Throughput of the stored pages (4 KiB each per pass) over the timed phase.
fn report(params: &toml::Table, marks: &[TaskMarks]) -> WorkloadResult {
    let p = Params::parse(params).expect("validated");
    let bytes = p.touched_pages() * p.passes as u64 * crate::scenario::PAGE_SIZE;
    throughput_report(ENTRY.name, bytes, marks)
}

/// The guide's comparison: the same sparse writer with 4K pages only and with 64K mTHP.
#[cfg(test)]
mod tests {
    use crate::{RunResult, Scenario};

    fn run(hugepages_64k: &str) -> RunResult {
        let text = format!(
            "seed = 1\n[machine]\ncpus = 2\nmemory = \"256M\"\n\
             [kernel]\nversion = \"6.10\"\n\
             [sysfs.hugepages]\n\"64K\" = \"{hugepages_64k}\"\n\"2M\" = \"never\"\n\
             [[workload]]\nkind = \"registered\"\nname = \"strided_write\"\n\
             [workload.params]\nnproc = 2\nsize = \"16M\"\nstride_pages = 16\n"
        );
        crate::run(&Scenario::from_toml_str(&text).unwrap()).unwrap()
    }

    #[test]
    fn strided_write_4k_against_64k() {
        let small = run("never");
        let large = run("always");
        let c = |r: &RunResult, name: &str| r.counters.get(name).copied().unwrap_or(0);
        let faults_64k = "hugepages-64kB/stats/anon_fault_alloc";
        println!("{:<40} {:>10} {:>10}", "", "4K", "64K mTHP");
        for name in ["pgfault", faults_64k] {
            println!("{name:<40} {:>10} {:>10}", c(&small, name), c(&large, name));
        }
        let tput = |r: &RunResult| r.workloads[0].throughput_bytes_per_s / (1 << 20) as f64;
        println!("{:<40} {:>10.0} {:>10.0}", "MiB/s stored", tput(&small), tput(&large));
        // 2 tasks x 16 MiB / 64 KiB: one store per 64 KiB range, one 64K folio for each.
        assert_eq!(c(&large, faults_64k), 2 * 256);
        assert_eq!(c(&small, faults_64k), 0);
        assert_eq!(small.workloads[0].kind, "strided_write");
        assert!(large.workloads[0].throughput_bytes_per_s > 0.0);
    }
}
