//! What watches a run (`RunOptions`): the time-series sampler and the timeline recorder, as one
//! scheduler observer.

use super::timeline::{TimelineOptions, TimelineRecorder};
use super::timeseries::Sampler;
use crate::engine::trace::{self, Span};
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
    /// The probe spans of the step that just ran (both watchers read them).
    spans: Vec<Span>,
    _recording: Option<trace::Recording>,
}

impl Observers {
    pub fn new(
        sampler: Option<Sampler>,
        timeline: Option<TimelineRecorder>,
        max_steps: Option<u64>,
    ) -> Observers {
        // The sampler's spinlock waits and the timeline's spans come from the probes.
        let recording = (sampler.is_some() || timeline.is_some()).then(trace::Recording::start);
        Observers {
            sampler,
            timeline,
            max_steps,
            spans: Vec::new(),
            _recording: recording,
        }
    }

    pub fn any(&self) -> bool {
        self.sampler.is_some() || self.timeline.is_some() || self.max_steps.is_some()
    }
}

impl RunObserver for Observers {
    fn start(&mut self, tasks: &[Task], ncpus: usize) {
        if let Some(s) = &mut self.sampler {
            s.start(tasks);
        }
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
        self.timeline.is_some() || self.sampler.is_some()
    }

    fn step(&mut self, k: &Kernel, step: &StepTrace) {
        self.spans.clear();
        trace::drain_into(&mut self.spans);
        if let Some(s) = &mut self.sampler {
            s.step(k, step, &self.spans);
        }
        if let Some(t) = &mut self.timeline {
            t.step_spans(k, step, &self.spans);
        }
    }
}
