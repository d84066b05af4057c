//! What the shared groups are built with: values parsed straight into the types below the
//! command line ([`one_of`]: those crates do not link clap, so a value they define gets its
//! name and help here, once, and no mirror enum is written beside it), and a group's help
//! worded for the command that flattens it ([`reworded`]).

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Arg;

/// For a command's `#[command(mut_args(..))]`: the help of each argument named in `helps`
/// (by its id, the field's name) replaced, every argument in its place.
pub fn reworded(helps: &'static [(&'static str, &'static str)]) -> impl FnMut(Arg) -> Arg {
    move |arg| match helps.iter().find(|(id, _)| arg.get_id() == *id) {
        Some((_, help)) => arg.help(*help),
        None => arg,
    }
}

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
