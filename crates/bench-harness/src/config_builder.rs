//! The builders of the two benchmarks' configurations
//! ([`crate::HarnessConfigBuilder`], [`crate::repogenesis::GenesisConfigBuilder`]):
//! one setter per field, each replacing that field's default.

/// Setters on a builder that holds the configuration in its `config`
/// field: `name: Type` makes `fn name(self, name: Type) -> Self`, with the
/// doc comments given.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $name: $ty) -> Self {
                self.config.$name = $name;
                self
            }
        )*
    };
}

pub(crate) use setters;
