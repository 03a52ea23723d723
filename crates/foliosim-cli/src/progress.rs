//! Progress on stderr (stdout stays the results'): an indicatif bar on a terminal, else one
//! line per finished item, so `foliosim reproduce 000 > out.txt` still shows life.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

pub struct Progress {
    /// What the lines start with, e.g. `reproduce 000`.
    what: String,
    /// None when stderr is not a terminal: lines instead.
    bar: Option<ProgressBar>,
}

impl Progress {
    /// `unit` names what is counted (`runs`); `total` 0 if not known yet.
    pub fn new(what: &str, unit: &str, total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            let template =
                format!("{{bar:40}} {{pos}}/{{len}} {unit} {{elapsed}} (eta {{eta}}) {{msg}}");
            bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
            bar
        });
        Progress {
            what: what.to_string(),
            bar,
        }
    }

    /// No known total (a fit's batches): a spinner on a terminal with the last note.
    pub fn spinner(what: &str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .expect("a valid template"),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        });
        Progress {
            what: what.to_string(),
            bar,
        }
    }

    /// Items found done before this invocation (a resumed sweep).
    pub fn skip(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// One item finished: `label` says which, `wall_s` how long it took.
    pub fn finished(&self, done: usize, total: usize, label: &str, wall_s: f64) {
        match &self.bar {
            Some(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(label.to_string());
            }
            None => eprintln!(
                "{}: {done}/{total} done: {label} ({wall_s:.1} s)",
                self.what
            ),
        }
    }

    /// `done` of `total` finished, which ones unknown (runs on Ray).
    pub fn count(&self, done: usize, total: usize) {
        match &self.bar {
            Some(bar) => bar.set_position(done as u64),
            None => eprintln!("{}: {done}/{total} done", self.what),
        }
    }

    /// A free-form line (a phase of a fit): the bar's message on a terminal.
    pub fn note(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(text.to_string()),
            None => eprintln!("{}: {text}", self.what),
        }
    }

    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
