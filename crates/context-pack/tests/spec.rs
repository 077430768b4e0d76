//! The section outline `SpecDocument::parse` gives small specifications,
//! one per heading style, as snapshots: each line is a section's heading
//! line, kind, level and heading (indented by level), and how many lines
//! of text it holds.

use context_pack::spec::SpecDocument;

fn outline(text: &str) -> String {
    let mut out = String::new();
    for s in SpecDocument::parse(text).sections() {
        let lines = if s.text.is_empty() {
            0
        } else {
            s.text.lines().count()
        };
        out.push_str(&format!(
            "{:>3} {:<9} h{} {}{}  [{lines} lines]\n",
            s.line,
            format!("{:?}", s.kind),
            s.level,
            "  ".repeat(usize::from(s.level)),
            s.heading,
        ));
    }
    out
}

#[test]
fn plain_text_spec_with_endpoint_headings() {
    insta::assert_snapshot!(outline(
        "Flask Microservice Benchmark

Description

This benchmark evaluates a small Flask service.

Service Constraints

Port

The service listens on port 5000 by default.

API Definitions

GET /health

Semantics: Health check.

Output (application/json):

{
  \"status\": \"ok\"
}

POST /echo

Status Code: 200.

Testing Instructions

- Construct requests and assert responses.

How to Run

pytest -q tests
"
    ));
}

#[test]
fn plain_headings_that_lead_their_paragraph() {
    insta::assert_snapshot!(outline(
        "Users Service Spec

Overview
A user management service backed by SQLite.

Running Environment
- Service default listening port: 8000
- Base URL: `http://127.0.0.1:8000`

API Definition (Users Microservice)
- Routes and contracts:
  - GET `/users/`
  - POST `/users/`

Example Running
Service process (illustration):
```bash
uvicorn main:app --port 8000
```
"
    ));
}

#[test]
fn markdown_spec_with_numbered_api_sections() {
    insta::assert_snapshot!(outline(
        "# Task Service

Manages tasks.

## API Definition

### Service Configuration
- **Port**: `8080`

### 1. Task APIs

#### 1.1 Create Task
- **Method**: `POST`
- **Path**: `/api/tasks`

#### 1.2 List Tasks ####
- **Method**: `GET`

## Error Format
"
    ));
}

#[test]
fn fenced_hashes_are_not_headings() {
    insta::assert_snapshot!(outline(
        "# Setup

```bash
# install the service
pip install -r requirements.txt
## still a comment
```

~~~
# also code
~~~

## Run
"
    ));
}

#[test]
fn an_unclosed_fence_is_text() {
    insta::assert_snapshot!(outline(
        "# Setup

```bash
pip install x

# Run

The service starts on port 8080.
"
    ));
}

#[test]
fn setext_titles_and_a_rule_after_a_code_block() {
    insta::assert_snapshot!(outline(
        "Service
=======

Intro.

Endpoints
---------

```json
{}
```

---

Two line
paragraph
---
"
    ));
}

#[test]
fn untitled_plain_spec_starts_with_a_preamble() {
    insta::assert_snapshot!(outline(
        "this document describes the service, as follows.

Endpoints

`GET` `/items`

Returns the items.
"
    ));
}

#[test]
fn numbered_plain_headings_of_a_paper() {
    insta::assert_snapshot!(outline(
        "DeepCode

Abstract

We generate code from documents.

Method

3.1 Phase 1: Blueprint Generation

The first phase compresses the source.

3.1.1 Hierarchical Content Segmentation

Parse the document.

3.1.2 Multi-Agent Specification Analysis

Two agents.

3.2 Phase 2: Code Generation

Write the code.
"
    ));
}
