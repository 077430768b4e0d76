//! One module per subcommand.

pub mod analyze;
pub mod context;
pub mod generate;
pub mod rank;
pub mod run;
