//! Where a configuration key sits in its file: validation finds range and consistency
//! errors after parsing, by key name (`ftl.regions[1].blocks_per_plane`); this finds the
//! line of that key (or of the deepest table that holds it, when the key was left to its
//! default) so every error names file, line and key.

use toml_edit::{ImDocument, Item, Table, Value};

/// The 1-based line of `key` (dotted, with `[i]` for array elements) in `text`, or of the
/// deepest enclosing table present; `None` when not even the first segment is there.
pub fn key_line(text: &str, key: &str) -> Option<usize> {
    let doc = ImDocument::parse(text).ok()?;
    let mut at: Option<usize> = None;
    let mut node = Node::Table(doc.as_table());
    for seg in segments(key) {
        let Some((next, span)) = step(node, seg) else {
            break;
        };
        at = span.or(at);
        node = next;
    }
    at.map(|b| text[..b.min(text.len())].matches('\n').count() + 1)
}

#[derive(Clone, Copy)]
enum Node<'a> {
    Table(&'a Table),
    Item(&'a Item),
    Value(&'a Value),
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// One step down from `node`, with the byte offset of what was found.
fn step<'a>(node: Node<'a>, seg: Seg<'_>) -> Option<(Node<'a>, Option<usize>)> {
    let start = |s: Option<std::ops::Range<usize>>| s.map(|r| r.start);
    match (node, seg) {
        (Node::Item(Item::Table(t)), Seg::Key(_)) => step(Node::Table(t), seg),
        (Node::Item(Item::Value(v)), _) => step(Node::Value(v), seg),
        (Node::Table(t), Seg::Key(k)) => t
            .get_key_value(k)
            .map(|(key, i)| (Node::Item(i), start(key.span()))),
        (Node::Value(Value::InlineTable(t)), Seg::Key(k)) => t
            .get_key_value(k)
            .map(|(key, i)| (Node::Item(i), start(key.span()))),
        (Node::Item(Item::ArrayOfTables(a)), Seg::Index(i)) => {
            a.get(i).map(|t| (Node::Table(t), start(t.span())))
        }
        (Node::Value(Value::Array(a)), Seg::Index(i)) => {
            a.get(i).map(|v| (Node::Value(v), start(v.span())))
        }
        _ => None,
    }
}

/// `a.b[2].c` → `a`, `b`, `[2]`, `c`.
fn segments(key: &str) -> Vec<Seg<'_>> {
    let mut out = Vec::new();
    for part in key.split('.') {
        let (name, rest) = part.split_once('[').unwrap_or((part, ""));
        if !name.is_empty() {
            out.push(Seg::Key(name));
        }
        for idx in rest.split('[') {
            if let Ok(i) = idx.trim_end_matches(']').parse() {
                out.push(Seg::Index(i));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::key_line;

    #[test]
    fn finds_keys_in_tables_inline_tables_and_arrays() {
        let text = "seed = 1\n[device]\nover_provisioning_ratio = 0.1\n[device.geometry]\nchannels = 2\n[ftl]\ngc = { policy = \"greedy\" }\nregions = [\n  { name = \"a\" },\n  { name = \"b\", blocks_per_plane = 3 },\n]\n[[x.y]]\nz = 1\n[[x.y]]\nz = 2\n";
        assert_eq!(key_line(text, "device.over_provisioning_ratio"), Some(3));
        assert_eq!(key_line(text, "device.geometry.channels"), Some(5));
        assert_eq!(key_line(text, "ftl.gc.policy"), Some(7));
        assert_eq!(key_line(text, "ftl.regions[1].blocks_per_plane"), Some(10));
        assert_eq!(key_line(text, "x.y[1].z"), Some(15));
        // Left to its default: the deepest table that is there.
        assert_eq!(key_line(text, "device.geometry.planes_per_die"), Some(4));
        assert_eq!(key_line(text, "nothing.here"), None);
    }
}
