//! One module per subcommand.

pub mod analyze;
pub mod context;
pub mod rank;
pub mod run;
