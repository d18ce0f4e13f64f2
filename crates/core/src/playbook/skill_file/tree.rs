//! The shape of the frontmatter with the line of every node, built from the scan's tokens the
//! way libyaml's parser builds events. It is used only beside `yaml_serde`'s value, which is the
//! judge of what the text means; where the two disagree, lines are unknown.

use super::scan::{Kind, Token};

/// Deeper than the scan lets through, so only a bug could reach it; it keeps the recursion
/// bounded regardless.
const MAX_TREE_DEPTH: usize = 4 * super::scan::MAX_DEPTH;

pub(super) enum Node {
    Empty {
        line: usize,
    },
    Scalar {
        line: usize,
        text: Option<String>,
        plain: bool,
    },
    /// Items with the line of their `-` (or of the item, in a flow sequence).
    Seq {
        line: usize,
        items: Vec<(usize, Node)>,
    },
    Map {
        line: usize,
        entries: Vec<Entry>,
    },
}

pub(super) struct Entry {
    pub(crate) line: usize,
    pub(crate) key: Node,
    pub(crate) value: Node,
}

impl Node {
    pub(super) fn line(&self) -> usize {
        match self {
            Node::Empty { line }
            | Node::Scalar { line, .. }
            | Node::Seq { line, .. }
            | Node::Map { line, .. } => *line,
        }
    }
}

pub(super) fn build(tokens: &[Token]) -> Option<Node> {
    if tokens.is_empty() {
        return Some(Node::Empty { line: 1 });
    }
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let root = parser.node(false)?;
    (parser.pos == tokens.len()).then_some(root)
}

/// The line of the first plain `<<` key, the YAML merge key.
pub(super) fn first_merge_key(root: &Node) -> Option<usize> {
    let mut found: Option<usize> = None;
    walk(root, &mut |entries| {
        for entry in entries {
            if let Node::Scalar {
                text: Some(text),
                plain: true,
                line,
            } = &entry.key
                && text == "<<"
            {
                found = Some(found.map_or(*line, |f| f.min(*line)));
            }
        }
    });
    found
}

/// The first key written twice in one mapping: its second line and its text.
pub(super) fn first_duplicate(root: &Node) -> Option<(usize, String)> {
    let mut found: Option<(usize, String)> = None;
    walk(root, &mut |entries| {
        let mut seen = std::collections::HashSet::new();
        for entry in entries {
            if let Node::Scalar {
                text: Some(text),
                line,
                ..
            } = &entry.key
                && !seen.insert(text.as_str())
                && found.as_ref().is_none_or(|f| *line < f.0)
            {
                found = Some((*line, text.clone()));
            }
        }
    });
    found
}

/// Calls `visit` with the entries of every mapping in the tree.
fn walk<'n>(root: &'n Node, visit: &mut impl FnMut(&'n [Entry])) {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node {
            Node::Seq { items, .. } => stack.extend(items.iter().map(|(_, item)| item)),
            Node::Map { entries, .. } => {
                visit(entries);
                for entry in entries {
                    stack.push(&entry.key);
                    stack.push(&entry.value);
                }
            }
            Node::Empty { .. } | Node::Scalar { .. } => {}
        }
    }
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Kind> {
        self.tokens.get(self.pos).map(|token| token.kind)
    }

    fn peek_is(&self, kinds: &[Kind]) -> bool {
        self.peek().is_some_and(|kind| kinds.contains(&kind))
    }

    fn line(&self) -> usize {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .map_or(1, |token| token.line)
    }

    fn node(&mut self, indentless: bool) -> Option<Node> {
        self.depth += 1;
        if self.depth > MAX_TREE_DEPTH {
            return None;
        }
        let token = self.tokens.get(self.pos)?;
        let node = match token.kind {
            Kind::Scalar => {
                self.pos += 1;
                Node::Scalar {
                    line: token.line,
                    text: token.text.clone(),
                    plain: token.plain,
                }
            }
            Kind::FlowSequenceStart => self.flow_sequence()?,
            Kind::FlowMappingStart => self.flow_mapping()?,
            Kind::BlockSequenceStart => self.block_sequence()?,
            Kind::BlockMappingStart => self.block_mapping()?,
            Kind::BlockEntry if indentless => self.indentless_sequence()?,
            _ => return None,
        };
        self.depth -= 1;
        Some(node)
    }

    /// A node, or an empty one when the next token is one of `ends`.
    fn node_or_empty(&mut self, ends: &[Kind], line: usize, indentless: bool) -> Option<Node> {
        if self.peek().is_none() || self.peek_is(ends) {
            Some(Node::Empty { line })
        } else {
            self.node(indentless)
        }
    }

    fn block_sequence(&mut self) -> Option<Node> {
        let line = self.line();
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            match self.peek()? {
                Kind::BlockEntry => {
                    let entry_line = self.line();
                    self.pos += 1;
                    let ends = [Kind::BlockEntry, Kind::BlockEnd];
                    items.push((entry_line, self.node_or_empty(&ends, entry_line, false)?));
                }
                Kind::BlockEnd => {
                    self.pos += 1;
                    return Some(Node::Seq { line, items });
                }
                _ => return None,
            }
        }
    }

    fn indentless_sequence(&mut self) -> Option<Node> {
        let line = self.line();
        let mut items = Vec::new();
        while self.peek() == Some(Kind::BlockEntry) {
            let entry_line = self.line();
            self.pos += 1;
            let ends = [Kind::BlockEntry, Kind::Key, Kind::Value, Kind::BlockEnd];
            items.push((entry_line, self.node_or_empty(&ends, entry_line, false)?));
        }
        Some(Node::Seq { line, items })
    }

    fn block_mapping(&mut self) -> Option<Node> {
        let line = self.line();
        self.pos += 1;
        let mut entries = Vec::new();
        let ends = [Kind::Key, Kind::Value, Kind::BlockEnd];
        loop {
            match self.peek()? {
                Kind::Key => {
                    let key_line = self.line();
                    self.pos += 1;
                    let key = self.node_or_empty(&ends, key_line, true)?;
                    let value = if self.peek() == Some(Kind::Value) {
                        let value_line = self.line();
                        self.pos += 1;
                        self.node_or_empty(&ends, value_line, true)?
                    } else {
                        Node::Empty { line: key_line }
                    };
                    entries.push(Entry {
                        line: key_line,
                        key,
                        value,
                    });
                }
                Kind::Value => {
                    let value_line = self.line();
                    self.pos += 1;
                    let value = self.node_or_empty(&ends, value_line, true)?;
                    let key = Node::Empty { line: value_line };
                    entries.push(Entry {
                        line: value_line,
                        key,
                        value,
                    });
                }
                Kind::BlockEnd => {
                    self.pos += 1;
                    return Some(Node::Map { line, entries });
                }
                _ => return None,
            }
        }
    }

    /// `key: value` inside a flow collection, after its `?` or at its key.
    fn flow_pair(&mut self, end: Kind) -> Option<Entry> {
        let line = self.line();
        let key = if self.peek() == Some(Kind::Key) {
            self.pos += 1;
            self.node_or_empty(&[Kind::Value, Kind::FlowEntry, end], line, false)?
        } else {
            Node::Empty { line }
        };
        let value = if self.peek() == Some(Kind::Value) {
            let value_line = self.line();
            self.pos += 1;
            self.node_or_empty(&[Kind::FlowEntry, end], value_line, false)?
        } else {
            Node::Empty { line }
        };
        Some(Entry { line, key, value })
    }

    /// Reads the separator before an entry; `false` at the collection's end.
    fn flow_next(&mut self, end: Kind, first: bool) -> Option<bool> {
        if self.peek()? == end {
            self.pos += 1;
            return Some(false);
        }
        if !first {
            if self.peek()? != Kind::FlowEntry {
                return None;
            }
            self.pos += 1;
            if self.peek()? == end {
                self.pos += 1;
                return Some(false);
            }
        }
        Some(true)
    }

    fn flow_sequence(&mut self) -> Option<Node> {
        let line = self.line();
        self.pos += 1;
        let mut items = Vec::new();
        let mut first = true;
        while self.flow_next(Kind::FlowSequenceEnd, first)? {
            first = false;
            let item_line = self.line();
            let item = if self.peek() == Some(Kind::Key) {
                let entry = self.flow_pair(Kind::FlowSequenceEnd)?;
                Node::Map {
                    line: item_line,
                    entries: vec![entry],
                }
            } else {
                self.node(false)?
            };
            items.push((item_line, item));
        }
        Some(Node::Seq { line, items })
    }

    fn flow_mapping(&mut self) -> Option<Node> {
        let line = self.line();
        self.pos += 1;
        let mut entries = Vec::new();
        let mut first = true;
        while self.flow_next(Kind::FlowMappingEnd, first)? {
            first = false;
            let entry = if self.peek_is(&[Kind::Key, Kind::Value]) {
                self.flow_pair(Kind::FlowMappingEnd)?
            } else {
                let entry_line = self.line();
                let key = self.node(false)?;
                Entry {
                    line: entry_line,
                    key,
                    value: Node::Empty { line: entry_line },
                }
            };
            entries.push(entry);
        }
        Some(Node::Map { line, entries })
    }
}
