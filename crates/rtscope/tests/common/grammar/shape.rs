//! Structure comparison: numbers and their padding erased.

/// The structure of `text`: every (optionally negative) digit run becomes
/// `N`; spaces padding a number are dropped after line start, `:`, `(`, `=`
/// or a TAB, and collapsed to one space elsewhere. Two outputs with the same
/// layout but different numbers and widths have the same shape.
pub fn shape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in re!(r" *-?\d+").find_iter(text) {
        out.push_str(&text[last..m.start()]);
        let spaces = m.as_str().len() - m.as_str().trim_start_matches(' ').len();
        let prev = text[..m.start()].chars().last();
        let padding = matches!(prev, None | Some('\n' | ':' | '(' | '=' | '\t'));
        if spaces > 0 && !padding {
            out.push(' ');
        }
        out.push('N');
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

/// Compares the [`shape`] of two outputs line by line; `Err` names the
/// first differing line of each.
pub fn same_shape(a: &str, b: &str) -> Result<(), String> {
    let (sa, sb) = (shape(a), shape(b));
    let (la, lb): (Vec<&str>, Vec<&str>) = (sa.split('\n').collect(), sb.split('\n').collect());
    for (i, (x, y)) in la.iter().zip(&lb).enumerate() {
        if x != y {
            return Err(format!(
                "line {}: shapes differ\n    left:  {x:?}\n    right: {y:?}",
                i + 1
            ));
        }
    }
    if la.len() != lb.len() {
        return Err(format!("line counts differ: {} vs {}", la.len(), lb.len()));
    }
    Ok(())
}
