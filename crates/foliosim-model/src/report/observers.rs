//! What watches a run (`RunOptions`): the time-series sampler and the timeline recorder, as one
//! scheduler observer.

use super::timeline::{TimelineOptions, TimelineRecorder};
use super::timeseries::Sampler;
use crate::mm::Kernel;
use crate::sched::{RunObserver, StepTrace, Task};

/// Options of a run beyond its scenario. The time series is the scenario's
/// (`[report] sample_interval`), since it is part of the result.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Record a timeline (off by default: it costs time and memory).
    pub timeline: Option<TimelineOptions>,
    /// End the run with `SimError::StepLimit` after this many steps (fuzzing and the soak
    /// bound a run by it: steps, unlike wall time, are deterministic).
    pub max_steps: Option<u64>,
}

pub(crate) struct Observers {
    pub sampler: Option<Sampler>,
    pub timeline: Option<TimelineRecorder>,
    pub max_steps: Option<u64>,
}

impl Observers {
    pub fn any(&self) -> bool {
        self.sampler.is_some() || self.timeline.is_some() || self.max_steps.is_some()
    }
}

impl RunObserver for Observers {
    fn start(&mut self, tasks: &[Task], ncpus: usize) {
        if let Some(t) = &mut self.timeline {
            t.start(tasks, ncpus);
        }
    }

    fn at(&mut self, k: &Kernel, tasks: &[Task], now_ns: u64) -> u64 {
        match &mut self.sampler {
            Some(s) => s.at(k, tasks, now_ns),
            None => u64::MAX,
        }
    }

    fn max_steps(&self) -> u64 {
        self.max_steps.unwrap_or(u64::MAX)
    }

    fn wants_steps(&self) -> bool {
        self.timeline.is_some()
    }

    fn step(&mut self, k: &Kernel, step: &StepTrace) {
        if let Some(t) = &mut self.timeline {
            t.step(k, step);
        }
    }
}
