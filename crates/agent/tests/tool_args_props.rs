//! Property tests of tool-call argument parsing: any JSON a model sends,
//! under any tool name, is either a typed call or a message for the model.

use agent::run::tools::{ToolName, parse};
use llm::ToolCall;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Arbitrary JSON, nested a few levels, with the tools' own field names
/// among the keys so that near-valid calls are common.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("path".to_owned()),
            Just("code".to_owned()),
            Just("command".to_owned()),
            Just("content".to_owned()),
            Just("depth".to_owned()),
            Just("query".to_owned()),
            Just("args".to_owned()),
            "[a-z_]{1,12}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            ToolName::ALL
                .iter()
                .map(|t| t.as_str().to_owned())
                .collect::<Vec<_>>()
        ),
        "\\PC{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn any_arguments_parse_or_explain(name in name(), arguments in json()) {
        let call = ToolCall::new("c", name.clone(), arguments.clone());
        match parse(&call, ToolName::ALL) {
            Ok(tool) => {
                // Only an object under an offered name becomes a call.
                prop_assert!(arguments.is_object(), "{arguments}");
                prop_assert_eq!(tool.name().as_str(), name.as_str());
            }
            Err(error) => {
                let message = error.to_string();
                prop_assert!(!message.is_empty());
                // The message is bounded whatever the arguments were.
                prop_assert!(message.len() < 4_000, "{} bytes", message.len());
            }
        }
    }
}
