use foliosim::mm::Kernel;
use foliosim::sched::{RunObserver, StepTrace, Task};

struct Obs {
    steps: u64,
    last: Vec<String>,
    last_slot: Option<String>,
}
impl RunObserver for Obs {
    fn wants_steps(&self) -> bool {
        true
    }
    fn at(&mut self, k: &Kernel, tasks: &[Task], _now: u64) -> u64 {
        if let Ok(slot) = std::env::var("SLOT") {
            let slot: usize = slot.parse().unwrap();
            let m = &k.swap.devices[0].map;
            let st = format!(
                "map {} cache {} data {:?} scattered-in {:?}",
                m.swap_map[slot],
                m.swap_cache[slot],
                m.data[slot],
                k.folios
                    .scattered
                    .iter()
                    .filter(|(_, v)| v.iter().any(|e| e.offset() as usize == slot))
                    .map(|(p, v)| (*p, v.len()))
                    .collect::<Vec<_>>()
            );
            if self.last_slot.as_deref() != Some(st.as_str()) {
                println!("step {}: slot {slot}: {st}", self.steps);
                self.last_slot = Some(st);
            }
        }
        self.last = tasks
            .iter()
            .map(|t| format!("{}: {:?}", t.name, t.program().map(|p| p.current_op())))
            .collect();
        0
    }
    fn step(&mut self, k: &Kernel, st: &StepTrace) {
        self.steps += 1;
        if let Err(e) = foliosim::mm::invariants::check(k) {
            panic!(
                "after step {} (tid {} cpu {} at {} ns): {e}\nbefore the step: {}\nkills {:?} memcg of tid mm: {:?}",
                self.steps, st.tid, st.cpu, st.begin_ns, self.last[st.tid], k.oom.kills.iter().map(|x| (x.at_ns, x.mm)).collect::<Vec<_>>(), std::env::var("PFN").ok().map(|p| { let p: usize = p.parse().unwrap(); let f = &k.folios; (f.flags[p], f.owner_mm[p], f.owner_vma[p], f.owner_index[p], f.swap[p], f.mapcount[p], f.memcg[p], k.mms[f.owner_mm[p] as usize].vmas.get(f.owner_vma[p] as usize).map(|v| v.as_ref().map(|v| format!("{:?}", v.ptes.get(f.owner_index[p] as usize))))) })
            );
        }
    }
}

#[test]
fn debug_case() {
    let path = std::env::var("CASE").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let s = foliosim::Scenario::from_toml_str(&text).unwrap();
    let mut k = Kernel::new(&s);
    let mut tasks: Vec<Task> = Vec::new();
    for (w, spec) in s.workloads.iter().enumerate() {
        let mut specs = foliosim::workload::tasks_for(spec, s.seed, &s.files);
        foliosim::workload::namespace_barriers(w, &mut specs);
        foliosim::spawn_tasks(&mut k, &mut tasks, w, spec.content(), specs);
    }
    let mut obs = Obs {
        steps: 0,
        last: vec![],
        last_slot: None,
    };
    let r = foliosim::sched::run_tasks_observed(
        &mut k,
        &mut tasks,
        s.seed,
        s.machine.sched_slice_ns,
        false,
        &mut |_, _| {},
        Some(&mut obs),
    );
    println!("ok: {:?}", r.map(|r| r.steps));
}
