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

/// A parser of the values in `table` (each with its name and help, listed by `--help`, the man
/// pages and the completions in this order), yielding the value named.
pub fn one_of<T>(table: impl IntoIterator<Item = Named<T>>) -> impl TypedValueParser<Value = T>
where
    T: Copy + Send + Sync + 'static,
{
    let table: Vec<Named<T>> = table.into_iter().collect();
    let possible = table
        .iter()
        .map(|&(_, name, help)| PossibleValue::new(name).help(help));
    PossibleValuesParser::new(possible).try_map(move |name| {
        // The possible values parser let only these names through.
        let found = table.iter().find(|(_, n, _)| *n == name);
        found
            .map(|&(v, _, _)| v)
            .ok_or("not one of the possible values")
    })
}

/// A value with its name on the command line and its help.
pub type Named<T> = (T, &'static str, &'static str);
