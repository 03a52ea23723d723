//! The report floor: what turns a run's results into pages for people (HTML, SVG charts).
//! The results themselves (`RunResult`, time series, timelines) are collected during a run, so
//! they live in the model (`foliosim_model::report`); they are re-exported here so
//! `report::...` names both halves, as it did when they were one module.

pub mod captured_run;
pub mod html;
pub mod svg;

pub use foliosim_model::report::*;
