//! The lab floor: what runs the model many times to answer a question: the seeds'
//! reproductions (`reproduce`), parameter sweeps (`sweep`), the cost fitter (`fit`), random
//! soak runs (`soak`), benchmarks' set-up (`bench`) and the fuzz targets' bodies (`fuzz`).
//! Library users of the model do not compile any of it (argmin, parquet).

pub mod bench;
pub mod fit;
pub mod fuzz;
pub mod reproduce;
pub mod soak;
pub mod sweep;

// The floors below under the paths the lab's files name them by (`crate::scenario::...`,
// `crate::run`, `crate::report::...`): docs/architecture.md, "Root re-exports".
#[allow(unused_imports)]
use foliosim_model::*;
use foliosim_report as report;
