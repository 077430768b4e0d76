//! The grammar behind constrained tool calls: a byte-level pushdown
//! automaton that accepts exactly the JSON texts
//! `{"name": <offered tool>, "arguments": <object following that tool's schema>}`.
//!
//! Decoding asks it, token by token, whether the token's bytes may come
//! next ([`CallGrammar::accepts`]), so a call can only be cut short by the
//! output limit; then [`CallGrammar::completion`] gives the shortest bytes
//! that finish it. The JSON it accepts is compact: at most one space
//! between items, no newlines outside strings.
//!
//! [`TaggedCalls`] wraps it for models that write calls in tags (Qwen2.5):
//! `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`, one block
//! per call, as many blocks as the model writes.

use std::sync::Arc;

use serde_json::Value;

use llm::ToolDefinition;

/// Deepest schema nesting followed; deeper parts accept any JSON value.
const MAX_SCHEMA_DEPTH: usize = 12;
/// Most digits in an integer part, and in an exponent.
const MAX_INT_DIGITS: u8 = 15;
/// (Two: a 15-digit number times 10^99 is still a finite `f64`, while
/// `1e999` is out of `serde_json`'s range.)
const MAX_EXP_DIGITS: u8 = 2;

/// The JSON Schema types the grammar enforces.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Schema {
    /// Any JSON value.
    Any,
    String,
    Integer,
    Number,
    Boolean,
    Null,
    /// One of these values, as JSON texts.
    Enum(Arc<Vec<Vec<u8>>>),
    Array(Arc<Schema>),
    Object(Arc<ObjectSchema>),
}

/// An object's properties (in schema order) and which are required.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ObjectSchema {
    /// `(name, schema)`; empty with `free` set for an object of any keys.
    props: Vec<(String, Schema)>,
    required: Vec<bool>,
    /// Any keys, any values (a schema without `properties`).
    free: bool,
    /// The property keys as JSON strings, required ones first.
    key_options: Arc<Vec<Vec<u8>>>,
    /// Index into `props` of each entry of `key_options`.
    key_props: Vec<usize>,
}

impl Schema {
    /// Reads the parts of a JSON Schema the grammar enforces: `type` (a
    /// list uses its first non-null type), `properties`, `required`,
    /// `items`, `enum`, `const`, and the first branch of `anyOf`/`oneOf`.
    pub(crate) fn from_json(schema: &Value) -> Self {
        Self::read(schema, 0)
    }

    fn read(schema: &Value, depth: usize) -> Self {
        if depth > MAX_SCHEMA_DEPTH {
            return Schema::Any;
        }
        let Some(map) = schema.as_object() else {
            return Schema::Any;
        };
        let literal_options = |values: &[Value]| {
            let options: Vec<Vec<u8>> = values
                .iter()
                .filter_map(|v| serde_json::to_vec(v).ok())
                .collect();
            (!options.is_empty()).then(|| Schema::Enum(Arc::new(options)))
        };
        if let Some(values) = map.get("enum").and_then(Value::as_array)
            && let Some(schema) = literal_options(values)
        {
            return schema;
        }
        if let Some(value) = map.get("const")
            && let Some(schema) = literal_options(std::slice::from_ref(value))
        {
            return schema;
        }
        let ty = match map.get("type") {
            Some(Value::String(ty)) => Some(ty.as_str()),
            Some(Value::Array(types)) => {
                let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                names
                    .iter()
                    .find(|t| **t != "null")
                    .or(names.first())
                    .copied()
            }
            _ => None,
        };
        match ty {
            Some("string") => Schema::String,
            Some("integer") => Schema::Integer,
            Some("number") => Schema::Number,
            Some("boolean") => Schema::Boolean,
            Some("null") => Schema::Null,
            Some("array") => Self::array(map.get("items"), depth),
            Some("object") => Self::object(map, depth),
            _ => {
                if map.contains_key("properties") {
                    Self::object(map, depth)
                } else if map.contains_key("items") {
                    Self::array(map.get("items"), depth)
                } else if let Some(first) = ["anyOf", "oneOf"]
                    .iter()
                    .find_map(|k| map.get(*k).and_then(Value::as_array))
                    .and_then(|branches| branches.first())
                {
                    Self::read(first, depth + 1)
                } else {
                    Schema::Any
                }
            }
        }
    }

    fn array(items: Option<&Value>, depth: usize) -> Self {
        let item = items.map_or(Schema::Any, |items| Self::read(items, depth + 1));
        Schema::Array(Arc::new(item))
    }

    fn object(map: &serde_json::Map<String, Value>, depth: usize) -> Self {
        let props: Vec<(String, Schema)> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, schema)| (name.clone(), Self::read(schema, depth + 1)))
                    .collect()
            })
            .unwrap_or_default();
        let required_names: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
        Schema::Object(Arc::new(ObjectSchema::new(props, &required_names, !closed)))
    }
}

impl ObjectSchema {
    fn new(props: Vec<(String, Schema)>, required_names: &[&str], open: bool) -> Self {
        let required: Vec<bool> = props
            .iter()
            .map(|(name, _)| required_names.contains(&name.as_str()))
            .collect();
        let free = props.is_empty() && open;
        let mut order: Vec<usize> = (0..props.len()).collect();
        order.sort_by_key(|&i| !required[i]);
        let key_options = order
            .iter()
            .filter_map(|&i| serde_json::to_vec(&props[i].0).ok())
            .collect();
        Self {
            props,
            required,
            free,
            key_options: Arc::new(key_options),
            key_props: order,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumState {
    Start,
    Minus,
    Zero,
    Int,
    FracStart,
    Frac,
    ExpStart,
    ExpSign,
    Exp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrState {
    Open,
    Body,
    Escape,
    Hex(u8),
    /// Continuation bytes left, and the range allowed for the next one.
    Utf8 {
        left: u8,
        min: u8,
        max: u8,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ObjPhase {
    Open,
    KeyOrClose,
    AfterKey,
    AfterColon,
    AfterValue,
    KeyAfterComma,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrPhase {
    Open,
    ItemOrClose,
    AfterItem,
    Item,
}

#[derive(Debug, Clone)]
enum Frame {
    /// The call object; `phase` indexes [`CALL_STEPS`].
    Call {
        phase: usize,
        tool: Option<usize>,
    },
    Value(Schema),
    Lit {
        text: &'static [u8],
        pos: usize,
    },
    /// At most one space.
    Ws,
    Choice {
        options: Arc<Vec<Vec<u8>>>,
        alive: Vec<usize>,
        pos: usize,
    },
    Str(StrState),
    Num {
        state: NumState,
        int_only: bool,
        digits: u8,
    },
    Obj {
        schema: Arc<ObjectSchema>,
        phase: ObjPhase,
        /// Which of `schema.props` are written.
        used: Vec<bool>,
        /// The property whose value comes next.
        key: Option<usize>,
        space: bool,
    },
    Arr {
        item: Arc<Schema>,
        phase: ArrPhase,
        space: bool,
    },
}

/// What a frame did with a byte.
enum Step {
    Consumed,
    /// Consumed the byte and is finished; the result (a choice's index).
    Finished(Option<usize>),
    /// Finished without consuming the byte, which goes to the parent.
    FinishedBefore,
    /// Push this frame and give it the byte.
    Push(Frame),
    /// Become this frame and take the byte again.
    Become(Frame),
    Reject,
}

/// The steps of the call object, in order.
enum CallStep {
    Lit(&'static [u8]),
    Ws,
    Name,
    Arguments,
}

const CALL_STEPS: &[CallStep] = &[
    CallStep::Lit(b"{"),
    CallStep::Lit(b"\"name\""),
    CallStep::Lit(b":"),
    CallStep::Ws,
    CallStep::Name,
    CallStep::Lit(b","),
    CallStep::Ws,
    CallStep::Lit(b"\"arguments\""),
    CallStep::Lit(b":"),
    CallStep::Ws,
    CallStep::Arguments,
    CallStep::Lit(b"}"),
];

/// The state of a tool call being written.
#[derive(Debug, Clone)]
pub(crate) struct CallGrammar {
    tools: Arc<ToolSet>,
    stack: Vec<Frame>,
}

/// The offered tools, prepared for the grammar.
#[derive(Debug)]
pub(crate) struct ToolSet {
    names: Arc<Vec<Vec<u8>>>,
    schemas: Vec<Schema>,
}

impl ToolSet {
    /// Prepares `tools`; `None` when there are none.
    pub(crate) fn new(tools: &[ToolDefinition]) -> Option<Arc<Self>> {
        if tools.is_empty() {
            return None;
        }
        let mut names = Vec::with_capacity(tools.len());
        let mut schemas = Vec::with_capacity(tools.len());
        for tool in tools {
            let Ok(name) = serde_json::to_vec(&tool.name) else {
                continue;
            };
            if names.contains(&name) {
                continue;
            }
            names.push(name);
            // The arguments are always an object.
            let schema = match Schema::from_json(&tool.parameters) {
                object @ Schema::Object(_) => object,
                _ => free_object(),
            };
            schemas.push(schema);
        }
        Some(Arc::new(Self {
            names: Arc::new(names),
            schemas,
        }))
    }
}

impl CallGrammar {
    /// A grammar at the start of a call.
    pub(crate) fn new(tools: Arc<ToolSet>) -> Self {
        Self {
            tools,
            stack: vec![Frame::Call {
                phase: 0,
                tool: None,
            }],
        }
    }

    /// Whether the call is complete (nothing more may be written).
    pub(crate) fn is_complete(&self) -> bool {
        matches!(self.stack.as_slice(), [Frame::Call { phase, .. }] if *phase >= CALL_STEPS.len())
    }

    /// Whether `bytes` may come next; on success the state advances.
    pub(crate) fn feed_all(&mut self, bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| self.feed(b))
    }

    /// Whether `bytes` may come next, leaving the state as it is.
    pub(crate) fn accepts(&self, bytes: &[u8]) -> bool {
        !bytes.is_empty() && self.clone().feed_all(bytes)
    }

    /// Feeds one byte; false (and an unspecified state) when it may not
    /// come next.
    pub(crate) fn feed(&mut self, byte: u8) -> bool {
        // Each iteration pushes, replaces or pops a frame; the depth of
        // the stack bounds the pops, and pushes are followed by a
        // consuming step, so this ends.
        for _ in 0..10_000 {
            let Some(top) = self.stack.last_mut() else {
                return false;
            };
            match step(top, byte, &self.tools) {
                Step::Consumed => return true,
                Step::Finished(result) => {
                    self.stack.pop();
                    self.child_finished(result);
                    return true;
                }
                Step::FinishedBefore => {
                    if self.stack.len() <= 1 {
                        return false;
                    }
                    self.stack.pop();
                    self.child_finished(None);
                }
                Step::Push(frame) => self.stack.push(frame),
                Step::Become(frame) => *top = frame,
                Step::Reject => return false,
            }
        }
        false
    }

    fn child_finished(&mut self, result: Option<usize>) {
        let Some(parent) = self.stack.last_mut() else {
            return;
        };
        match parent {
            Frame::Call { phase, tool } => {
                if matches!(CALL_STEPS.get(*phase), Some(CallStep::Name)) {
                    *tool = result;
                }
                *phase += 1;
            }
            Frame::Obj {
                schema,
                phase,
                used,
                key,
                space,
            } => {
                *space = false;
                match phase {
                    ObjPhase::KeyOrClose | ObjPhase::KeyAfterComma => {
                        if !schema.free {
                            let prop = result.and_then(|i| schema.key_props.get(i).copied());
                            if let Some(prop) = prop
                                && let Some(flag) = used.get_mut(prop)
                            {
                                *flag = true;
                            }
                            *key = prop;
                        }
                        *phase = ObjPhase::AfterKey;
                    }
                    _ => *phase = ObjPhase::AfterValue,
                }
            }
            Frame::Arr { phase, space, .. } => {
                *space = false;
                *phase = ArrPhase::AfterItem;
            }
            _ => {}
        }
    }

    /// The shortest bytes that complete the call from here (empty when it
    /// is complete): pending strings, numbers and literals are closed,
    /// missing required properties get the smallest value of their type.
    pub(crate) fn completion(&self) -> Vec<u8> {
        let mut state = self.clone();
        let mut out = Vec::new();
        for _ in 0..100_000 {
            if state.is_complete() {
                return out;
            }
            if let Some(Frame::Call { phase, .. }) = state.stack.last_mut()
                && matches!(CALL_STEPS.get(*phase), Some(CallStep::Ws))
            {
                *phase += 1;
                continue;
            }
            // Frames that may end here: end them.
            if let Some(
                Frame::Ws
                | Frame::Num {
                    state: NumState::Zero | NumState::Int | NumState::Frac | NumState::Exp,
                    ..
                },
            ) = state.stack.last()
            {
                state.stack.pop();
                state.child_finished(None);
                continue;
            }
            let Some(byte) = state.stack.last().and_then(|f| preferred(f, &state.tools)) else {
                return out;
            };
            if !state.feed(byte) {
                return out;
            }
            out.push(byte);
        }
        out
    }
}

/// The tag that opens a call in [`TaggedCalls`].
pub(crate) const CALL_OPEN: &[u8] = b"<tool_call>";
/// The tag that closes a call in [`TaggedCalls`].
const CALL_CLOSE: &[u8] = b"</tool_call>";
/// Most whitespace bytes (spaces, newlines) around a tag: enough for the
/// template's newlines, few enough that whitespace cannot run on.
const MAX_TAG_SPACE: u8 = 2;

#[derive(Debug, Clone)]
enum Tagged {
    /// Before a call or between calls: whitespace, then `<tool_call>`
    /// (`open` bytes of it written).
    Between { space: u8, open: usize },
    /// After `<tool_call>`: whitespace, then the call.
    Opened { space: u8 },
    /// Writing the call's JSON.
    Call(CallGrammar),
    /// After the call: whitespace, then `</tool_call>` (`close` bytes
    /// written).
    Closing { space: u8, close: usize },
}

/// Tool calls in tags: `(<tool_call> ws JSON ws </tool_call> ws)+`, with
/// at most [`MAX_TAG_SPACE`] whitespace bytes in each gap and the JSON
/// accepted by [`CallGrammar`]. Records where each call's JSON is in the
/// bytes it was fed.
#[derive(Debug, Clone)]
pub(crate) struct TaggedCalls {
    tools: Arc<ToolSet>,
    state: Tagged,
    /// Bytes fed so far.
    fed: usize,
    /// `(start, end)` of each call's JSON in the fed bytes; the last one's
    /// end is `usize::MAX` while it is being written.
    spans: Vec<(usize, usize)>,
}

fn is_tag_space(b: u8) -> bool {
    b == b' ' || b == b'\n'
}

impl TaggedCalls {
    /// Before the first `<tool_call>`.
    pub(crate) fn new(tools: Arc<ToolSet>) -> Self {
        Self {
            tools,
            state: Tagged::Between { space: 0, open: 0 },
            fed: 0,
            spans: Vec::new(),
        }
    }

    /// Whether the calls may end here: at least one call is closed and no
    /// other is begun.
    pub(crate) fn is_complete(&self) -> bool {
        matches!(self.state, Tagged::Between { open: 0, .. }) && !self.spans.is_empty()
    }

    /// Whether `bytes` may come next, leaving the state as it is.
    pub(crate) fn accepts(&self, bytes: &[u8]) -> bool {
        !bytes.is_empty() && self.clone().feed_all(bytes)
    }

    /// Whether `bytes` may come next; on success the state advances.
    pub(crate) fn feed_all(&mut self, bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| self.feed(b))
    }

    /// Feeds one byte; false (and an unspecified state) when it may not
    /// come next.
    pub(crate) fn feed(&mut self, b: u8) -> bool {
        let at = self.fed;
        self.fed += 1;
        match &mut self.state {
            Tagged::Between { space, open } => {
                if *open == 0 && is_tag_space(b) && *space < MAX_TAG_SPACE {
                    *space += 1;
                    true
                } else if CALL_OPEN.get(*open) == Some(&b) {
                    *open += 1;
                    if *open == CALL_OPEN.len() {
                        self.state = Tagged::Opened { space: 0 };
                    }
                    true
                } else {
                    false
                }
            }
            Tagged::Opened { space } => {
                if is_tag_space(b) && *space < MAX_TAG_SPACE {
                    *space += 1;
                    return true;
                }
                let mut call = CallGrammar::new(self.tools.clone());
                if !call.feed(b) {
                    return false;
                }
                self.spans.push((at, usize::MAX));
                self.state = Tagged::Call(call);
                true
            }
            Tagged::Call(call) => {
                if !call.feed(b) {
                    return false;
                }
                if call.is_complete() {
                    if let Some(span) = self.spans.last_mut() {
                        span.1 = at + 1;
                    }
                    self.state = Tagged::Closing { space: 0, close: 0 };
                }
                true
            }
            Tagged::Closing { space, close } => {
                if *close == 0 && is_tag_space(b) && *space < MAX_TAG_SPACE {
                    *space += 1;
                    true
                } else if CALL_CLOSE.get(*close) == Some(&b) {
                    *close += 1;
                    if *close == CALL_CLOSE.len() {
                        self.state = Tagged::Between { space: 0, open: 0 };
                    }
                    true
                } else {
                    false
                }
            }
        }
    }

    /// The shortest bytes that close the call being written, or write one
    /// if none was (empty when [`TaggedCalls::is_complete`]); the template's
    /// newlines are written around the JSON.
    pub(crate) fn completion(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let fresh_call = |out: &mut Vec<u8>| {
            out.extend_from_slice(&CallGrammar::new(self.tools.clone()).completion());
        };
        match &self.state {
            Tagged::Between { open: 0, .. } if !self.spans.is_empty() => return out,
            Tagged::Between { open, .. } => {
                out.extend_from_slice(CALL_OPEN.get(*open..).unwrap_or_default());
                out.push(b'\n');
                fresh_call(&mut out);
                out.extend_from_slice(b"\n");
                out.extend_from_slice(CALL_CLOSE);
            }
            Tagged::Opened { space } => {
                if *space == 0 {
                    out.push(b'\n');
                }
                fresh_call(&mut out);
                out.push(b'\n');
                out.extend_from_slice(CALL_CLOSE);
            }
            Tagged::Call(call) => {
                out.extend_from_slice(&call.completion());
                out.push(b'\n');
                out.extend_from_slice(CALL_CLOSE);
            }
            Tagged::Closing { space, close } => {
                if *close == 0 && *space == 0 {
                    out.push(b'\n');
                }
                out.extend_from_slice(CALL_CLOSE.get(*close..).unwrap_or_default());
            }
        }
        out
    }

    /// Where each call's JSON is in the fed bytes (the last one may be
    /// unfinished: it then runs to the end).
    pub(crate) fn spans(&self) -> Vec<std::ops::Range<usize>> {
        self.spans
            .iter()
            .map(|&(start, end)| start..end.min(self.fed))
            .collect()
    }
}

/// The byte that moves a frame towards its end fastest.
fn preferred(frame: &Frame, tools: &ToolSet) -> Option<u8> {
    match frame {
        Frame::Call { phase, .. } => match CALL_STEPS.get(*phase)? {
            CallStep::Lit(text) => text.first().copied(),
            CallStep::Ws => None,
            CallStep::Name => tools.names.first().and_then(|n| n.first().copied()),
            CallStep::Arguments => Some(b'{'),
        },
        Frame::Value(schema) => Some(match schema {
            Schema::String => b'"',
            Schema::Integer | Schema::Number => b'0',
            Schema::Boolean => b'f',
            Schema::Null | Schema::Any => b'n',
            Schema::Enum(options) => *options.first()?.first()?,
            Schema::Array(_) => b'[',
            Schema::Object(_) => b'{',
        }),
        Frame::Lit { text, pos } => text.get(*pos).copied(),
        Frame::Ws => None,
        Frame::Choice {
            options,
            alive,
            pos,
        } => options.get(*alive.first()?)?.get(*pos).copied(),
        Frame::Str(state) => Some(match state {
            StrState::Open => b'"',
            StrState::Body => b'"',
            StrState::Escape => b'n',
            StrState::Hex(_) => b'0',
            StrState::Utf8 { min, .. } => *min,
        }),
        Frame::Num { state, .. } => match state {
            NumState::Start
            | NumState::Minus
            | NumState::FracStart
            | NumState::ExpStart
            | NumState::ExpSign => Some(b'0'),
            _ => None,
        },
        Frame::Obj {
            schema,
            phase,
            used,
            key,
            ..
        } => {
            let missing_required = schema
                .required
                .iter()
                .zip(used)
                .any(|(&required, &used)| required && !used);
            match phase {
                ObjPhase::Open => Some(b'{'),
                ObjPhase::KeyOrClose | ObjPhase::AfterValue if !missing_required => Some(b'}'),
                ObjPhase::KeyOrClose | ObjPhase::KeyAfterComma => Some(b'"'),
                ObjPhase::AfterValue => Some(b','),
                ObjPhase::AfterKey => Some(b':'),
                ObjPhase::AfterColon => {
                    let schema = value_schema(schema, *key);
                    preferred(&Frame::Value(schema), tools)
                }
            }
        }
        Frame::Arr { item, phase, .. } => match phase {
            ArrPhase::Open => Some(b'['),
            ArrPhase::ItemOrClose | ArrPhase::AfterItem => Some(b']'),
            ArrPhase::Item => preferred(&Frame::Value((**item).clone()), tools),
        },
    }
}

/// An object of any keys and values.
fn free_object() -> Schema {
    Schema::Object(Arc::new(ObjectSchema::new(Vec::new(), &[], true)))
}

fn value_schema(schema: &ObjectSchema, key: Option<usize>) -> Schema {
    key.and_then(|k| schema.props.get(k))
        .map_or(Schema::Any, |(_, s)| s.clone())
}

fn step(frame: &mut Frame, b: u8, tools: &ToolSet) -> Step {
    match frame {
        Frame::Call { phase, tool } => match CALL_STEPS.get(*phase) {
            None => Step::Reject,
            Some(CallStep::Lit(text)) => Step::Push(Frame::Lit { text, pos: 0 }),
            Some(CallStep::Ws) => Step::Push(Frame::Ws),
            Some(CallStep::Name) => Step::Push(Frame::Choice {
                options: tools.names.clone(),
                alive: (0..tools.names.len()).collect(),
                pos: 0,
            }),
            Some(CallStep::Arguments) => {
                let schema = tool
                    .and_then(|t| tools.schemas.get(t))
                    .cloned()
                    .unwrap_or_else(free_object);
                Step::Push(Frame::Value(schema))
            }
        },
        Frame::Value(schema) => start_value(schema, b),
        Frame::Lit { text, pos } => {
            if text.get(*pos) != Some(&b) {
                return Step::Reject;
            }
            *pos += 1;
            if *pos == text.len() {
                Step::Finished(None)
            } else {
                Step::Consumed
            }
        }
        Frame::Ws => {
            if b == b' ' {
                Step::Finished(None)
            } else {
                Step::FinishedBefore
            }
        }
        Frame::Choice {
            options,
            alive,
            pos,
        } => {
            let complete = alive
                .iter()
                .copied()
                .find(|&i| options.get(i).is_some_and(|o| o.len() == *pos));
            let next: Vec<usize> = alive
                .iter()
                .copied()
                .filter(|&i| options.get(i).and_then(|o| o.get(*pos)) == Some(&b))
                .collect();
            if next.is_empty() {
                return match complete {
                    Some(_) => Step::FinishedBefore,
                    None => Step::Reject,
                };
            }
            *pos += 1;
            *alive = next;
            let done: Vec<usize> = alive
                .iter()
                .copied()
                .filter(|&i| options.get(i).is_some_and(|o| o.len() == *pos))
                .collect();
            match done.as_slice() {
                [i] if alive.len() == 1 => Step::Finished(Some(*i)),
                _ => Step::Consumed,
            }
        }
        Frame::Str(state) => step_str(state, b),
        Frame::Num {
            state,
            int_only,
            digits,
        } => step_num(state, *int_only, digits, b),
        Frame::Obj {
            schema,
            phase,
            used,
            key,
            space,
        } => {
            let missing_required = schema
                .required
                .iter()
                .zip(used.iter())
                .any(|(&required, &used)| required && !used);
            let key_frame = |used: &[bool]| {
                if schema.free {
                    Frame::Str(StrState::Open)
                } else {
                    let alive = schema
                        .key_props
                        .iter()
                        .enumerate()
                        .filter(|&(_, &prop)| !used.get(prop).copied().unwrap_or(true))
                        .map(|(i, _)| i)
                        .collect();
                    Frame::Choice {
                        options: schema.key_options.clone(),
                        alive,
                        pos: 0,
                    }
                }
            };
            let keys_left = schema.free || used.iter().any(|u| !u);
            if b == b' ' && !*space && *phase != ObjPhase::Open {
                *space = true;
                return Step::Consumed;
            }
            match (*phase, b) {
                (ObjPhase::Open, b'{') => {
                    *phase = ObjPhase::KeyOrClose;
                    Step::Consumed
                }
                (ObjPhase::KeyOrClose | ObjPhase::AfterValue, b'}') if !missing_required => {
                    Step::Finished(None)
                }
                (ObjPhase::KeyOrClose | ObjPhase::KeyAfterComma, b'"') if keys_left => {
                    Step::Push(key_frame(used))
                }
                (ObjPhase::AfterValue, b',') if keys_left => {
                    *phase = ObjPhase::KeyAfterComma;
                    *space = false;
                    Step::Consumed
                }
                (ObjPhase::AfterKey, b':') => {
                    *phase = ObjPhase::AfterColon;
                    *space = false;
                    Step::Consumed
                }
                (ObjPhase::AfterColon, _) => Step::Push(Frame::Value(value_schema(schema, *key))),
                _ => Step::Reject,
            }
        }
        Frame::Arr { item, phase, space } => {
            if b == b' ' && !*space && *phase != ArrPhase::Open {
                *space = true;
                return Step::Consumed;
            }
            match (*phase, b) {
                (ArrPhase::Open, b'[') => {
                    *phase = ArrPhase::ItemOrClose;
                    Step::Consumed
                }
                (ArrPhase::ItemOrClose | ArrPhase::AfterItem, b']') => Step::Finished(None),
                (ArrPhase::AfterItem, b',') => {
                    *phase = ArrPhase::Item;
                    *space = false;
                    Step::Consumed
                }
                (ArrPhase::ItemOrClose | ArrPhase::Item, _) => {
                    Step::Push(Frame::Value((**item).clone()))
                }
                _ => Step::Reject,
            }
        }
    }
}

fn start_value(schema: &Schema, b: u8) -> Step {
    let literal = |text: &'static [u8]| Step::Become(Frame::Lit { text, pos: 0 });
    let number = |int_only| {
        Step::Become(Frame::Num {
            state: NumState::Start,
            int_only,
            digits: 0,
        })
    };
    let object = |schema: &Arc<ObjectSchema>| {
        Step::Become(Frame::Obj {
            used: vec![false; schema.props.len()],
            schema: schema.clone(),
            phase: ObjPhase::Open,
            key: None,
            space: false,
        })
    };
    let array = |item: Arc<Schema>| {
        Step::Become(Frame::Arr {
            item,
            phase: ArrPhase::Open,
            space: false,
        })
    };
    match (schema, b) {
        (Schema::String | Schema::Any, b'"') => Step::Become(Frame::Str(StrState::Open)),
        (Schema::Integer, b'-' | b'0'..=b'9') => number(true),
        (Schema::Number | Schema::Any, b'-' | b'0'..=b'9') => number(false),
        (Schema::Boolean | Schema::Any, b't') => literal(b"true"),
        (Schema::Boolean | Schema::Any, b'f') => literal(b"false"),
        (Schema::Null | Schema::Any, b'n') => literal(b"null"),
        (Schema::Enum(options), _) => Step::Become(Frame::Choice {
            alive: (0..options.len()).collect(),
            options: options.clone(),
            pos: 0,
        }),
        (Schema::Array(item), b'[') => array(item.clone()),
        (Schema::Any, b'[') => array(Arc::new(Schema::Any)),
        (Schema::Object(object_schema), b'{') => object(object_schema),
        (Schema::Any, b'{') => match free_object() {
            Schema::Object(free) => object(&free),
            _ => Step::Reject,
        },
        _ => Step::Reject,
    }
}

fn step_str(state: &mut StrState, b: u8) -> Step {
    match *state {
        StrState::Open => {
            if b != b'"' {
                return Step::Reject;
            }
            *state = StrState::Body;
            Step::Consumed
        }
        StrState::Body => match b {
            b'"' => Step::Finished(None),
            b'\\' => {
                *state = StrState::Escape;
                Step::Consumed
            }
            0x00..=0x1F | 0x7F => Step::Reject,
            0x20..=0x7E => Step::Consumed,
            0xC2..=0xDF => utf8(state, 1, 0x80, 0xBF),
            0xE0 => utf8(state, 2, 0xA0, 0xBF),
            0xED => utf8(state, 2, 0x80, 0x9F),
            0xE1..=0xEF => utf8(state, 2, 0x80, 0xBF),
            0xF0 => utf8(state, 3, 0x90, 0xBF),
            0xF1..=0xF3 => utf8(state, 3, 0x80, 0xBF),
            0xF4 => utf8(state, 3, 0x80, 0x8F),
            _ => Step::Reject,
        },
        StrState::Escape => match b {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                *state = StrState::Body;
                Step::Consumed
            }
            b'u' => {
                *state = StrState::Hex(0);
                Step::Consumed
            }
            _ => Step::Reject,
        },
        StrState::Hex(n) => {
            // No surrogates (`\uD800`-`\uDFFF`): a lone one is not valid JSON text.
            let ok = b.is_ascii_hexdigit() && !(n == 0 && matches!(b, b'd' | b'D'));
            if !ok {
                return Step::Reject;
            }
            *state = if n == 3 {
                StrState::Body
            } else {
                StrState::Hex(n + 1)
            };
            Step::Consumed
        }
        StrState::Utf8 { left, min, max } => {
            if !(min..=max).contains(&b) {
                return Step::Reject;
            }
            *state = if left == 1 {
                StrState::Body
            } else {
                StrState::Utf8 {
                    left: left - 1,
                    min: 0x80,
                    max: 0xBF,
                }
            };
            Step::Consumed
        }
    }
}

fn utf8(state: &mut StrState, left: u8, min: u8, max: u8) -> Step {
    *state = StrState::Utf8 { left, min, max };
    Step::Consumed
}

fn step_num(state: &mut NumState, int_only: bool, digits: &mut u8, b: u8) -> Step {
    use NumState::*;
    let accepting = matches!(*state, Zero | Int | Frac | Exp);
    let next = match (*state, b) {
        (Start, b'-') => Some(Minus),
        (Start | Minus, b'0') => Some(Zero),
        (Start | Minus, b'1'..=b'9') => Some(Int),
        (Int, b'0'..=b'9') if *digits < MAX_INT_DIGITS => Some(Int),
        (Zero | Int, b'.') if !int_only => Some(FracStart),
        (Zero | Int | Frac, b'e' | b'E') if !int_only => Some(ExpStart),
        (FracStart | Frac, b'0'..=b'9') if *digits < MAX_INT_DIGITS => Some(Frac),
        (ExpStart, b'+' | b'-') => Some(ExpSign),
        (ExpStart | ExpSign | Exp, b'0'..=b'9') if *digits < MAX_EXP_DIGITS => Some(Exp),
        _ => None,
    };
    match next {
        Some(next) => {
            *digits = if !b.is_ascii_digit() {
                0
            } else if next == *state {
                digits.saturating_add(1)
            } else {
                1
            };
            *state = next;
            Step::Consumed
        }
        None if accepting => Step::FinishedBefore,
        None => Step::Reject,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> Arc<ToolSet> {
        ToolSet::new(&[
            ToolDefinition::new(
                "read_file",
                "Reads a file",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "start": {"type": "integer"},
                    "lines": {"type": ["integer", "null"]}
                }, "required": ["path"]}),
            ),
            ToolDefinition::new(
                "search",
                "Searches",
                json!({"type": "object", "properties": {
                    "query": {"type": "string"},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": ["class", "function"]}},
                    "exact": {"type": "boolean"},
                    "score": {"type": "number"},
                    "opts": {}
                }, "required": ["query", "exact"]}),
            ),
            ToolDefinition::new("finish", "Ends", json!({"type": "object"})),
        ])
        .unwrap()
    }

    fn accepts_all(text: &str) -> bool {
        let mut g = CallGrammar::new(tools());
        g.feed_all(text.as_bytes()) && g.is_complete()
    }

    #[test]
    fn valid_calls_are_accepted() {
        for text in [
            r#"{"name": "read_file", "arguments": {"path": "a.py"}}"#,
            r#"{"name":"read_file","arguments":{"start": -12, "path":"a\"b\\n\u00e9 é"}}"#,
            r#"{"name": "read_file", "arguments": {"path": "x", "lines": 3}}"#,
            r#"{"name": "search", "arguments": {"exact": true, "query": "q", "kinds": ["class", "function"], "score": 1.5e-3}}"#,
            r#"{"name": "search", "arguments": {"query": "", "exact": false, "opts": {"k": [1, null, "s", {"z": 0.5}]}}}"#,
            r#"{"name": "finish", "arguments": {}}"#,
            r#"{"name": "finish", "arguments": {"summary": "done", "n": 3}}"#,
        ] {
            assert!(accepts_all(text), "{text}");
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(value["arguments"].is_object());
        }
    }

    #[test]
    fn invalid_calls_are_rejected() {
        for text in [
            r#"{"name": "write_file", "arguments": {}}"#,
            r#"{"name": "read_file", "arguments": {}}"#,
            r#"{"name": "read_file", "arguments": {"path": 3}}"#,
            r#"{"name": "read_file", "arguments": {"path": "a", "start": 1.5}}"#,
            r#"{"name": "read_file", "arguments": {"path": "a", "path": "b"}}"#,
            r#"{"name": "read_file", "arguments": {"path": "a", "other": 1}}"#,
            r#"{"name": "search", "arguments": {"query": "q", "exact": 1}}"#,
            r#"{"name": "search", "arguments": {"query": "q", "exact": true, "kinds": ["method"]}}"#,
            r#"{"name": "read_file", "arguments": {"path": "a
"}}"#,
            r#"{"name": "read_file", "arguments": {"path": "\ud800"}}"#,
            r#"{"name": "read_file", "arguments": {"path": "a"}} "#,
            r#"{"name": "read_file",  "arguments": {"path": "a"}}"#,
            r#"{"name": "read_file", "arguments": {"path": "a", "start": 01}}"#,
        ] {
            assert!(!accepts_all(text), "{text}");
        }
        let mut g = CallGrammar::new(tools());
        assert!(!g.feed_all(&[b'{', b'"', b'n', b'a', b'm', b'e', b'"', b':', b'"', 0xFF]));
    }

    #[test]
    fn every_prefix_completes_to_a_valid_call() {
        let text = r#"{"name": "search", "arguments": {"query": "a\u00e9\n é", "kinds": ["class"], "score": -1.5e+2, "exact": true, "opts": {"k": [1, {"z": tru"#;
        let bytes = text.as_bytes();
        for end in 0..=bytes.len() {
            let mut g = CallGrammar::new(tools());
            assert!(g.feed_all(&bytes[..end]), "prefix {end}");
            let rest = g.completion();
            let mut full = bytes[..end].to_vec();
            full.extend_from_slice(&rest);
            assert!(g.feed_all(&rest));
            assert!(g.is_complete(), "{}", String::from_utf8_lossy(&full));
            let value: Value = serde_json::from_slice(&full)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&full)));
            assert!(value["arguments"].is_object());
        }
        let empty = CallGrammar::new(tools()).completion();
        assert_eq!(
            String::from_utf8(empty).unwrap(),
            r#"{"name":"read_file","arguments":{"path":""}}"#
        );
    }

    #[test]
    fn schemas_are_read() {
        assert_eq!(
            Schema::from_json(&json!({"type": "string"})),
            Schema::String
        );
        assert_eq!(
            Schema::from_json(&json!({"type": ["null", "integer"]})),
            Schema::Integer
        );
        assert_eq!(Schema::from_json(&json!(true)), Schema::Any);
        assert_eq!(
            Schema::from_json(&json!({"anyOf": [{"type": "number"}, {"type": "string"}]})),
            Schema::Number
        );
        assert!(matches!(
            Schema::from_json(&json!({"const": 3})),
            Schema::Enum(_)
        ));
        assert!(matches!(
            Schema::from_json(&json!({"items": {"type": "string"}})),
            Schema::Array(_)
        ));
        // Deep nesting is cut off, not followed.
        let mut deep = json!({"type": "string"});
        for _ in 0..50 {
            deep = json!({"type": "array", "items": deep});
        }
        assert!(matches!(Schema::from_json(&deep), Schema::Array(_)));
    }

    #[test]
    fn closed_empty_objects_take_no_keys() {
        let tools = ToolSet::new(&[ToolDefinition::new(
            "t",
            "",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        )])
        .unwrap();
        let mut g = CallGrammar::new(tools.clone());
        assert!(g.feed_all(br#"{"name": "t", "arguments": {}}"#) && g.is_complete());
        let mut g = CallGrammar::new(tools);
        assert!(!g.feed_all(br#"{"name": "t", "arguments": {"a"#));
    }

    fn tagged(text: &str) -> Option<TaggedCalls> {
        let mut g = TaggedCalls::new(tools());
        (g.feed_all(text.as_bytes()) && g.is_complete()).then_some(g)
    }

    #[test]
    fn tagged_calls_are_accepted_and_located() {
        let one = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}\n</tool_call>";
        let g = tagged(one).unwrap();
        let spans = g.spans();
        assert_eq!(spans.len(), 1);
        assert_eq!(
            &one[spans[0].clone()],
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}"
        );
        let two = format!(
            "{one}\n<tool_call>{{\"name\": \"finish\", \"arguments\": {{\"s\": \"</tool_call>\"}}}}</tool_call>\n"
        );
        let g = tagged(&two).unwrap();
        let spans = g.spans();
        assert_eq!(spans.len(), 2);
        assert_eq!(
            &two[spans[1].clone()],
            "{\"name\": \"finish\", \"arguments\": {\"s\": \"</tool_call>\"}}"
        );
        for text in [
            "",
            "Sure: <tool_call>\n{\"name\": \"finish\", \"arguments\": {}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"write\", \"arguments\": {}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"finish\", \"arguments\": {}}\n",
            "<tool_call>\n\n\n{\"name\": \"finish\", \"arguments\": {}}\n</tool_call>",
            "<tool_call>\n```json\n{\"name\": \"finish\", \"arguments\": {}}\n```\n</tool_call>",
            "<tool_call>\n{\"name\": \"finish\", \"arguments\": {}}\n</tool_call> and text",
        ] {
            assert!(tagged(text).is_none(), "{text}");
        }
    }

    #[test]
    fn every_tagged_prefix_completes_to_valid_calls() {
        let text = "\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"q\", \"exact\": true}}\n</tool_call>\n<tool_call> {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\\u00e9";
        let bytes = text.as_bytes();
        for end in 0..=bytes.len() {
            let mut g = TaggedCalls::new(tools());
            assert!(g.feed_all(&bytes[..end]), "prefix {end}");
            let rest = g.completion();
            assert!(g.feed_all(&rest));
            assert!(g.is_complete());
            let mut full = bytes[..end].to_vec();
            full.extend_from_slice(&rest);
            for span in g.spans() {
                let value: Value = serde_json::from_slice(&full[span]).unwrap();
                assert!(value["arguments"].is_object());
            }
        }
        assert_eq!(
            String::from_utf8(TaggedCalls::new(tools()).completion()).unwrap(),
            "<tool_call>\n{\"name\":\"read_file\",\"arguments\":{\"path\":\"\"}}\n</tool_call>"
        );
    }

    /// A small validator for the JSON Schema subset of [`tools`].
    fn matches(schema: &Value, value: &Value) -> bool {
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            return options.contains(value);
        }
        let ty = match schema.get("type") {
            Some(Value::Array(types)) => {
                types.iter().find(|t| *t != "null").and_then(Value::as_str)
            }
            Some(Value::String(t)) => Some(t.as_str()),
            _ => None,
        };
        let nullable = schema["type"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("null")));
        if nullable && value.is_null() {
            return true;
        }
        match ty {
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("boolean") => value.is_boolean(),
            Some("array") => value.as_array().is_some_and(|items| {
                items
                    .iter()
                    .all(|item| matches(schema.get("items").unwrap_or(&json!({})), item))
            }),
            Some("object") => {
                let Some(object) = value.as_object() else {
                    return false;
                };
                let props = schema.get("properties").and_then(Value::as_object);
                let required = schema.get("required").and_then(Value::as_array);
                required.is_none_or(|names| {
                    names
                        .iter()
                        .all(|n| n.as_str().is_some_and(|n| object.contains_key(n)))
                }) && object.iter().all(|(key, item)| match props {
                    Some(props) if !props.is_empty() => {
                        props.get(key).is_some_and(|s| matches(s, item))
                    }
                    _ => true,
                })
            }
            _ => true,
        }
    }

    /// Drives the grammar with random choices among the tokens of a small
    /// vocabulary it allows (as sampling does), cutting some runs short
    /// with the completion: every result parses and matches its schema.
    #[test]
    fn random_token_choices_always_give_valid_calls() {
        let definitions = [
            (
                "read_file",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "start": {"type": "integer"},
                    "lines": {"type": ["integer", "null"]}
                }, "required": ["path"]}),
            ),
            (
                "search",
                json!({"type": "object", "properties": {
                    "query": {"type": "string"},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": ["class", "function"]}},
                    "exact": {"type": "boolean"},
                    "score": {"type": "number"},
                    "opts": {}
                }, "required": ["query", "exact"]}),
            ),
            ("finish", json!({"type": "object"})),
        ];
        let mut vocab: Vec<Vec<u8>> = (0x20u8..0x7F).map(|b| vec![b]).collect();
        vocab.extend([
            b"\n".to_vec(),
            "é".as_bytes().to_vec(),
            vec![0xE4],
            vec![0xB8, 0xAD],
        ]);
        for piece in [
            "<tool_call>",
            "</tool_call>",
            "\n<tool_call>\n",
            "\n</tool_call>",
            "{\"",
            "\":",
            "\": ",
            ", \"",
            "\"}",
            "}}",
            "name",
            "arguments",
            "read_file",
            "search",
            "finish",
            "path",
            "query",
            "exact",
            "kinds",
            "class",
            "function",
            "true",
            "false",
            "null",
            "12",
            "-0.5e3",
            "[\"",
            "\"]",
            "\\n",
            "\\u00e9",
            "opts",
            "score",
            "lines",
            "start",
        ] {
            vocab.push(piece.as_bytes().to_vec());
        }
        let tools = tools();
        let mut rng = fastrand::Rng::with_seed(27);
        let mut calls_seen = 0;
        for run in 0..300 {
            let mut g = TaggedCalls::new(tools.clone());
            let mut text = Vec::new();
            let budget = rng.usize(1..200);
            for _ in 0..budget {
                if g.is_complete() && rng.u8(..) < 64 {
                    break;
                }
                let allowed: Vec<&Vec<u8>> = vocab.iter().filter(|t| g.accepts(t)).collect();
                let Some(&token) = allowed.get(rng.usize(..allowed.len().max(1))) else {
                    panic!(
                        "run {run}: nothing allowed after {:?}",
                        String::from_utf8_lossy(&text)
                    );
                };
                assert!(g.feed_all(token));
                text.extend_from_slice(token);
            }
            let rest = g.completion();
            assert!(g.feed_all(&rest));
            text.extend_from_slice(&rest);
            assert!(g.is_complete(), "{}", String::from_utf8_lossy(&text));
            for span in g.spans() {
                let call: Value = serde_json::from_slice(&text[span.clone()]).unwrap_or_else(|e| {
                    panic!("{e}: {}", String::from_utf8_lossy(&text[span.clone()]))
                });
                let name = call["name"].as_str().unwrap();
                let (_, schema) = definitions.iter().find(|(n, _)| *n == name).unwrap();
                assert!(
                    matches(schema, &call["arguments"]),
                    "{call} does not match {schema}"
                );
                calls_seen += 1;
            }
        }
        assert!(calls_seen >= 300);
    }
}
