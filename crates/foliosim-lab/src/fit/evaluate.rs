//! Running a table's rows at given cost values: every (point, scenario, seed) run on a pool of
//! threads, results kept in a cache keyed by the costs as the model uses them (whole ns), and
//! collected in row order, so which thread ran what changes nothing. Rows of one scenario
//! (several metrics of one run: seed 004's table) share its runs.

use super::table::{Row, Table};
use super::FitError;
use crate::sweep::record::metrics_of;
use crate::RunResult;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Cost values by name (ns).
pub type Costs = BTreeMap<String, f64>;

/// A row's figure at one point: mean and sample std over the seeds, in the table's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub mean: f64,
    pub std: f64,
}

/// Costs, the row's scenario (`Row::scenario_key`), seed.
type Key = (Vec<(String, u64)>, String, u64);
/// Every metric and counter of a run, by name.
type Metrics = BTreeMap<String, f64>;

/// A batch of simulator runs finished (one evaluation round of the fit), for a progress
/// report.
pub struct Batch {
    /// Batches with runs so far, this one included.
    pub batch: usize,
    /// Cost points evaluated in this batch.
    pub points: usize,
    /// Simulator runs in this batch, and in all batches so far.
    pub runs: usize,
    pub runs_total: usize,
    /// The batch's wall time, s: not a result (it varies run to run).
    pub wall_s: f64,
}

/// Told of every batch; called on the thread evaluating.
pub type BatchProgress<'p> = Box<dyn FnMut(&Batch) + Send + 'p>;

pub struct Evaluator<'t> {
    pub table: &'t Table,
    pub jobs: usize,
    cache: Mutex<BTreeMap<Key, Metrics>>,
    /// Simulator runs made so far (cache misses).
    pub runs: AtomicUsize,
    batches: AtomicUsize,
    progress: Mutex<BatchProgress<'t>>,
}

/// The value of `metric` in a run: a sweep metric (`usemem.throughput_bytes_per_s`,
/// `simulated_ns`, `lock.<name>.wait_ns_total`, ...) or a counter (`pswpout`,
/// `hugepages-64kB/stats/swpout`, ...).
pub fn metric_value(r: &RunResult, metric: &str) -> Option<f64> {
    all_metrics(r).get(metric).copied()
}

/// Every metric of a run (sweep::record::metrics_of) and every counter, by name.
fn all_metrics(r: &RunResult) -> Metrics {
    let mut m: Metrics = r
        .counters
        .iter()
        .map(|(k, &v)| (k.clone(), v as f64))
        .collect();
    m.extend(metrics_of(r).into_iter().map(|(k, v)| (k, v.as_f64())));
    m
}

fn key_costs(costs: &Costs) -> Vec<(String, u64)> {
    // The model rounds every cost to whole ns (mm::Kernel::new): so does the cache.
    costs
        .iter()
        .map(|(k, v)| (k.clone(), v.round() as u64))
        .collect()
}

impl<'t> Evaluator<'t> {
    pub fn new(table: &'t Table, jobs: usize) -> Evaluator<'t> {
        Evaluator {
            table,
            jobs: jobs.max(1),
            cache: Mutex::new(BTreeMap::new()),
            runs: AtomicUsize::new(0),
            batches: AtomicUsize::new(0),
            progress: Mutex::new(Box::new(|_| {})),
        }
    }

    /// Tell `progress` of every batch of runs.
    pub fn with_progress(self, progress: BatchProgress<'t>) -> Evaluator<'t> {
        Evaluator {
            progress: Mutex::new(progress),
            ..self
        }
    }

    fn report(&self, points: usize, runs: usize, wall_s: f64) {
        if runs == 0 {
            return;
        }
        let batch = Batch {
            batch: self.batches.fetch_add(1, Ordering::Relaxed) + 1,
            points,
            runs,
            runs_total: self.runs.load(Ordering::Relaxed),
            wall_s,
        };
        (self.progress.lock().unwrap_or_else(|e| e.into_inner()))(&batch);
    }

    fn run_one(&self, row: &Row, seed: u64, costs: &Costs) -> Result<Metrics, FitError> {
        let s = self.table.scenario(row, seed, costs)?;
        let r = crate::run(&s).map_err(|e| FitError::Run {
            row: row.id.clone(),
            message: e.to_string(),
        })?;
        Ok(all_metrics(&r))
    }

    fn value_of(row: &Row, m: &Metrics) -> Result<f64, FitError> {
        m.get(&row.metric).copied().ok_or_else(|| FitError::Table {
            field: format!("row `{}`.metric", row.id),
            message: format!(
                "`{}` is neither a run metric nor a counter of this run (e.g. \
                 usemem.throughput_bytes_per_s, simulated_ns, pswpout, \
                 xsbench.lookups_per_s)",
                row.metric
            ),
        })
    }

    /// Raw metric values of `rows` (and the rows they are relative to) at every point, one per
    /// seed: `out[point][row][seed]`, rows not asked for left empty.
    fn raw(&self, points: &[Costs], rows: &[usize]) -> Result<Vec<Vec<Vec<f64>>>, FitError> {
        let rows = self.table.with_references(rows);
        let seeds = self.table.seeds as u64;
        let keys: Vec<Vec<(String, u64)>> = points.iter().map(key_costs).collect();
        let scenarios: Vec<String> = self.table.rows.iter().map(Row::scenario_key).collect();
        let key = |p: usize, r: usize, seed: u64| (keys[p].clone(), scenarios[r].clone(), seed);
        let mut todo: Vec<(usize, usize, u64)> = vec![];
        {
            let cache = self.cache.lock().unwrap();
            let mut queued = std::collections::BTreeSet::new();
            for p in 0..points.len() {
                for &r in &rows {
                    for seed in 1..=seeds {
                        let k = key(p, r, seed);
                        if !cache.contains_key(&k) && queued.insert(k) {
                            todo.push((p, r, seed));
                        }
                    }
                }
            }
        }
        let wall = std::time::Instant::now();
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Result<Metrics, FitError>>>> =
            todo.iter().map(|_| Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..self.jobs.min(todo.len()) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(p, r, seed)) = todo.get(i) else {
                        break;
                    };
                    let v = self.run_one(&self.table.rows[r], seed, &points[p]);
                    let failed = v.is_err();
                    *results[i].lock().unwrap() = Some(v);
                    if failed {
                        // No new run starts; the others finish.
                        next.store(todo.len(), Ordering::Relaxed);
                    }
                });
            }
        });
        self.runs.fetch_add(todo.len(), Ordering::Relaxed);
        self.report(points.len(), todo.len(), wall.elapsed().as_secs_f64());
        let mut cache = self.cache.lock().unwrap();
        // The first error in plan order, so the message does not depend on thread timing.
        for (i, &(p, r, seed)) in todo.iter().enumerate() {
            match results[i].lock().unwrap().take() {
                Some(Ok(v)) => {
                    cache.insert(key(p, r, seed), v);
                }
                Some(Err(e)) => return Err(e),
                None => {}
            }
        }
        let mut out = vec![vec![vec![]; self.table.rows.len()]; points.len()];
        for (p, per_row) in out.iter_mut().enumerate() {
            for &r in &rows {
                let row = &self.table.rows[r];
                per_row[r] = (1..=seeds)
                    .map(|seed| match cache.get(&key(p, r, seed)) {
                        Some(m) => Self::value_of(row, m),
                        None => Err(FitError::Run {
                            row: row.id.clone(),
                            message: "not run (an earlier run failed)".into(),
                        }),
                    })
                    .collect::<Result<_, _>>()?;
            }
        }
        Ok(out)
    }

    /// Each row's figure at every point (`None` for rows not asked for).
    pub fn figures(
        &self,
        points: &[Costs],
        rows: &[usize],
    ) -> Result<Vec<Vec<Option<Figure>>>, FitError> {
        let raw = self.raw(points, rows)?;
        Ok(raw
            .iter()
            .map(|per_row| {
                (0..self.table.rows.len())
                    .map(|r| {
                        if !rows.contains(&r) {
                            return None;
                        }
                        let values: Vec<f64> = match &self.table.rows[r].relative_to {
                            Some(b) => {
                                let b = &per_row[self.table.row(b).expect("checked")];
                                let base = b.iter().sum::<f64>() / b.len() as f64;
                                per_row[r]
                                    .iter()
                                    .map(|v| 100.0 * (v / base - 1.0))
                                    .collect()
                            }
                            None => per_row[r].clone(),
                        };
                        let (mean, std) = crate::reproduce::seed000::mean_std(&values);
                        Some(Figure { mean, std })
                    })
                    .collect()
            })
            .collect())
    }
}
