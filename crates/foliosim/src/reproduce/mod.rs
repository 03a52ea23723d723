//! `foliosim reproduce <seed>`: run a seed document's experiment and print its table beside ours.
pub mod seed000;
pub mod seed002;
pub mod seed003;
