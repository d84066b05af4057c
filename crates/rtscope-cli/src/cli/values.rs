//! Values parsed straight into the types below the command line. Those crates do not link
//! clap, so a value they define gets its name and help here, once, and no mirror enum is
//! written beside it.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// A parser that accepts the values in `values` by their names (`describe` gives each its
/// name and help, listed by `--help`, the man pages and the completions, in this order) and
/// yields the value named.
pub fn one_of<T>(
    values: &'static [T],
    describe: fn(T) -> PossibleValue,
) -> impl TypedValueParser<Value = T>
where
    T: Copy + Send + Sync + 'static,
{
    PossibleValuesParser::new(values.iter().map(|&v| describe(v))).try_map(move |name| {
        // The possible values parser let only these names through.
        values
            .iter()
            .copied()
            .find(|&v| describe(v).matches(&name, false))
            .ok_or("not one of the possible values")
    })
}
