//! A random trace (docs/trace-format.md): the soak's operation sequences. Processes exec, fork
//! and wait for their children, threads clone, and every task maps, touches, madvises and
//! unmaps VMAs of its process and spends CPU time. Valid by construction (what the parser's
//! checker accepts), with one rule the format does not need: a thread uses only the VMAs it
//! mapped itself, since the replay orders a process's threads only at clone, exec and wait.

use super::gen::Gen;
use crate::workload::trace::{Event, EventKind, Holes, Trace, TraceAdvice, VmaKind};
use std::collections::BTreeMap;

struct Vma {
    pages: u32,
    holes: Holes,
    /// The task that mapped it (the only one that uses it).
    owner: u32,
}

struct Task {
    /// Its process: the tasks sharing its VMAs (the leader's number).
    process: u32,
    leader: bool,
}

struct Builder<'a> {
    g: &'a mut Gen,
    events: Vec<Event>,
    t_ns: u64,
    running: BTreeMap<u32, Task>,
    /// VMAs of each process (by leader), by vma number.
    vmas: BTreeMap<u32, BTreeMap<u32, Vma>>,
    /// Exited processes nobody waited for yet, by parent.
    zombies: BTreeMap<u32, Vec<u32>>,
    parent_of: BTreeMap<u32, u32>,
    next_task: u32,
    next_vma: u32,
    max_vma_pages: u32,
}

impl Builder<'_> {
    fn emit(&mut self, task: u32, kind: EventKind) {
        self.t_ns += self.g.range(0, 20_000);
        self.events.push(Event {
            t_ns: self.t_ns,
            task,
            kind,
        });
    }

    /// A mapped range [first, first + nr) of one of `task`'s VMAs, without holes.
    fn mapped_range(&mut self, task: u32) -> Option<(u32, u32, u32)> {
        let process = self.running[&task].process;
        let mine: Vec<u32> = self.vmas[&process]
            .iter()
            .filter(|(_, v)| v.owner == task)
            .map(|(&id, _)| id)
            .collect();
        if mine.is_empty() {
            return None;
        }
        let id = self.g.pick(&mine);
        let v = &self.vmas[&process][&id];
        let parts = v.holes.mapped_parts(0, v.pages);
        let (a, b) = self.g.pick(&parts);
        let first = self.g.u32(a, b - 1);
        let nr = self.g.u32(1, (b - first).min(256));
        Some((id, first, nr))
    }

    fn step(&mut self, task: u32) {
        let process = self.running[&task].process;
        match self.g.range(0, 99) {
            0..=14 => {
                let pages = self.g.size(1, self.max_vma_pages as u64, 1) as u32;
                let kind = self.g.pick(&VmaKind::ALL);
                self.next_vma += 1;
                let vma = self.next_vma;
                self.vmas.get_mut(&process).unwrap().insert(
                    vma,
                    Vma {
                        pages,
                        holes: Holes::default(),
                        owner: task,
                    },
                );
                self.emit(task, EventKind::Mmap { vma, pages, kind });
            }
            15..=54 => {
                if let Some((vma, first, nr)) = self.mapped_range(task) {
                    let write = self.g.chance(80);
                    self.emit(
                        task,
                        EventKind::Touch {
                            vma,
                            first,
                            nr,
                            write,
                        },
                    );
                }
            }
            55..=66 => {
                if let Some((vma, first, nr)) = self.mapped_range(task) {
                    let advice = self.g.pick(&TraceAdvice::ALL);
                    self.emit(
                        task,
                        EventKind::Madvise {
                            vma,
                            first,
                            nr,
                            advice,
                        },
                    );
                }
            }
            67..=74 => {
                if let Some((vma, first, nr)) = self.mapped_range(task) {
                    let vmas = self.vmas.get_mut(&process).unwrap();
                    let v = vmas.get_mut(&vma).unwrap();
                    v.holes.add(first, first + nr);
                    if v.holes.covers(0, v.pages) {
                        vmas.remove(&vma);
                    }
                    self.emit(task, EventKind::Munmap { vma, first, nr });
                }
            }
            75..=89 => {
                let ns = self.g.size(1_000, 2_000_000, 1);
                self.emit(task, EventKind::Cpu { ns });
            }
            _ => {}
        }
    }

    /// A new task: a process forked from `parent`, or a thread of its process.
    fn spawn(&mut self, parent: u32, thread: bool) {
        self.next_task += 1;
        let task = self.next_task;
        let parent_process = self.running[&parent].process;
        if thread {
            self.running.insert(
                task,
                Task {
                    process: parent_process,
                    leader: false,
                },
            );
            self.emit(task, EventKind::Clone { parent });
        } else {
            // The child's copies of the VMAs are its own (it is their only user).
            let copy = self.vmas[&parent_process]
                .iter()
                .map(|(&id, v)| {
                    let vma = Vma {
                        pages: v.pages,
                        holes: v.holes.clone(),
                        owner: task,
                    };
                    (id, vma)
                })
                .collect();
            self.vmas.insert(task, copy);
            self.running.insert(
                task,
                Task {
                    process: task,
                    leader: true,
                },
            );
            self.parent_of.insert(task, parent);
            self.emit(task, EventKind::Fork { parent });
        }
    }

    fn exit(&mut self, task: u32) {
        let t = self.running.remove(&task).unwrap();
        self.emit(task, EventKind::Exit);
        if t.leader {
            self.vmas.remove(&task);
            if let Some(&parent) = self.parent_of.get(&task) {
                self.zombies.entry(parent).or_default().push(task);
            }
        }
    }

    /// Threads of `process` other than its leader.
    fn threads(&self, process: u32) -> Vec<u32> {
        self.running
            .iter()
            .filter(|(&id, t)| t.process == process && id != process)
            .map(|(&id, _)| id)
            .collect()
    }
}

/// A trace of about `events` events, VMAs of at most `max_vma_pages`.
pub fn trace(g: &mut Gen, events: usize, max_vma_pages: u32) -> Trace {
    let mut b = Builder {
        g,
        events: Vec::new(),
        t_ns: 0,
        running: BTreeMap::new(),
        vmas: BTreeMap::new(),
        zombies: BTreeMap::new(),
        parent_of: BTreeMap::new(),
        next_task: 1,
        next_vma: 0,
        max_vma_pages,
    };
    b.running.insert(
        1,
        Task {
            process: 1,
            leader: true,
        },
    );
    b.vmas.insert(1, BTreeMap::new());
    b.emit(
        1,
        EventKind::Exec {
            name: "soak".into(),
        },
    );
    while b.events.len() < events && !b.running.is_empty() {
        let ids: Vec<u32> = b.running.keys().copied().collect();
        let task = b.g.pick(&ids);
        let leader = b.running[&task].leader;
        match b.g.range(0, 99) {
            0..=2 if b.running.len() < 6 => {
                let thread = b.g.chance(50);
                b.spawn(task, thread);
            }
            // A thread exits; a process only once its threads have (exec needs that too).
            3 | 4 if task != 1 && (!leader || b.threads(task).is_empty()) => b.exit(task),
            5 if leader && b.threads(task).is_empty() => {
                b.vmas.insert(task, BTreeMap::new());
                b.emit(
                    task,
                    EventKind::Exec {
                        name: format!("img{}", b.events.len()),
                    },
                );
            }
            6 if leader => {
                if let Some(child) = b.zombies.get_mut(&task).and_then(|z| z.pop()) {
                    b.emit(task, EventKind::Wait { child });
                }
            }
            _ => b.step(task),
        }
    }
    // Everyone exits: threads first, then children before their parents are done with them.
    let mut order: Vec<u32> = b.running.keys().copied().collect();
    order.sort_by_key(|&t| (b.running[&t].leader, std::cmp::Reverse(t)));
    for task in order {
        // A parent reaps some of its exited children first.
        while let Some(child) = b.zombies.get_mut(&task).and_then(|z| z.pop()) {
            if b.g.chance(50) {
                b.emit(task, EventKind::Wait { child });
            }
        }
        b.exit(task);
    }
    let events = b.events;
    Trace {
        header: vec![("recorder".into(), "foliosim soak".into())],
        events,
    }
}
