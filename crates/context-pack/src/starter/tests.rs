use super::*;

fn start(readme: &str, name: &str, query: &str, inputs: &[&str]) -> Option<Starter> {
    let inputs: Vec<&Path> = inputs.iter().map(Path::new).collect();
    starter_from_readme(name, readme, query, &inputs, Path::new("/out"))
}

#[test]
fn a_docs_page_example_counts_only_when_it_imports_the_repositorys_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("pdfkit")).unwrap();
    std::fs::write(root.join("pdfkit/__init__.py"), "").unwrap();
    std::fs::write(root.join("README.md"), "# pdfkit\n\nNo examples here.\n").unwrap();
    std::fs::create_dir_all(root.join("docs/user")).unwrap();
    // A page that teaches Python, and the user guide's page.
    std::fs::write(
        root.join("docs/learn_python.md"),
        "# Reading data\n\n```python\nimport pandas as pd\ndata = pd.read_csv(\"data.pdf\")\n```\n",
    )
    .unwrap();
    std::fs::write(
        root.join("docs/user/split.md"),
        "# Split\n\n```python\nfrom pdfkit import Reader\nReader(\"in.pdf\").split().save(\"out.pdf\")\n```\n",
    )
    .unwrap();
    let input = [Path::new("/in/a.pdf")];
    let starter = readme_starter(root, "split the data", &input, Path::new("/o")).unwrap();
    assert_eq!(starter.file, "docs/user/split.md");
    assert_eq!(
        starter.code,
        "from pdfkit import Reader\nReader(\"/in/a.pdf\").split().save(\"/o/output.pdf\")\n"
    );
    // Without the guide, the tutorial's example is no starter.
    std::fs::remove_file(root.join("docs/user/split.md")).unwrap();
    assert!(readme_starter(root, "split the data", &input, Path::new("/o")).is_none());
}

#[test]
fn an_example_whose_every_file_is_the_tasks_beats_one_keeping_sample_files() {
    let readme = "# Merge\n\n```python\nfrom pdf import merge\nmerge(\"a.pdf\", \"b.pdf\").save(\"out.pdf\")\n```\n\n\
                  # Copy\n\n```python\nfrom pdf import copy\ncopy(\"a.pdf\").save(\"out.pdf\")\n```\n";
    let starter = start(readme, "README.md", "merge", &["/in/x.pdf"]).unwrap();
    assert_eq!(starter.section, ["Copy"]);
    // Two inputs: the merge takes both.
    let starter = start(readme, "README.md", "merge", &["/in/x.pdf", "/in/y.pdf"]).unwrap();
    assert_eq!(starter.section, ["Merge"]);
}

#[test]
fn an_input_type_named_by_the_task_is_not_the_output_format() {
    let readme = "```python\nimport cv2\nfrom wm import Decoder\nbgr = cv2.imread(\"marked.png\")\nprint(Decoder().decode(bgr))\n```\n";
    let png = [Path::new("/in/a.png")];
    let starter = starter_from_readme(
        "README.md",
        readme,
        "decode the watermark in the PNG image",
        &png,
        Path::new("/o"),
    )
    .unwrap();
    assert_eq!(
        starter.saved_result.as_deref(),
        Some(Path::new("/o/output.txt"))
    );
    assert!(starter.code.ends_with("    out.write(str(result))\n"));
    // A binary format that is no input's is the output's: no text saved.
    let starter = starter_from_readme(
        "README.md",
        readme,
        "decode the watermark and draw it as a JPG",
        &png,
        Path::new("/o"),
    )
    .unwrap();
    assert_eq!(starter.saved_result, None);
}

#[test]
fn an_input_directory_takes_the_directory_the_example_walks() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("sheets");
    std::fs::create_dir(&input).unwrap();
    let readme = "```python\nfrom pathlib import Path\nfrom eparse.core import get_df_from_file\n\n\
                  for f in Path(\"tests\").iterdir():\n    print(get_df_from_file(f))\n```\n";
    let starter = starter_from_readme(
        "README.rst",
        readme,
        "every excel file of the directory",
        &[input.as_path()],
        Path::new("/o"),
    )
    .unwrap();
    let quoted = python_string(&input.to_string_lossy());
    assert!(
        starter
            .code
            .contains(&format!("for f in Path({quoted}).iterdir():")),
        "{}",
        starter.code
    );
    // A glob keeps its pattern.
    let readme =
        "```python\nimport glob\nfor f in glob.glob(\"data/*.xlsx\"):\n    print(f)\n```\n";
    let starter = starter_from_readme(
        "README.md",
        readme,
        "x",
        &[input.as_path()],
        Path::new("/o"),
    )
    .unwrap();
    let quoted = python_string(&input.join("*.xlsx").to_string_lossy());
    assert!(starter.code.contains(&quoted), "{}", starter.code);
    // A file input takes no directory.
    let file = dir.path().join("a.xlsx");
    std::fs::write(&file, "").unwrap();
    assert!(
        starter_from_readme("README.md", readme, "x", &[file.as_path()], Path::new("/o")).is_none()
    );
}

#[test]
fn own_imports_are_read_from_import_lines() {
    let own = ["stegano".to_string()];
    assert!(imports_any("from stegano import lsb\n", &own));
    assert!(imports_any("import os, stegano.lsb as l\n", &own));
    assert!(!imports_any(
        "import steganography\nx = 'from stegano import'\n",
        &own
    ));
}

#[test]
fn a_result_the_example_only_prints_is_saved_in_the_format_the_task_names() {
    let readme = "```python\nfrom eparse.core import get_df_from_file\n\nprint([t for t in get_df_from_file(\"my.xlsx\")])\n```\n";
    let inputs = [Path::new("/in/a.xlsx")];
    let starter = starter_from_readme(
        "README.md",
        readme,
        "按 JSON 行格式逐行写入一个 txt 文件",
        &inputs,
        Path::new("/o"),
    )
    .unwrap();
    assert_eq!(
        starter.code,
        "from eparse.core import get_df_from_file\n\nresult = [t for t in get_df_from_file(\"/in/a.xlsx\")]\n\
         print(result)\nwith open(\"/o/output.txt\", \"w\", encoding=\"utf-8\") as out:\n    out.write(str(result))\n"
    );
    assert_eq!(
        starter.saved_result.as_deref(),
        Some(Path::new("/o/output.txt"))
    );
    // An assignment last: its value is saved; json named: `.json`.
    let readme = "```python\nfrom pypdf import PdfReader\nreader = PdfReader(\"example.pdf\")\nmeta = reader.metadata\n```\n";
    let pdf = [Path::new("/in/a.pdf")];
    let starter = starter_from_readme(
        "README.md",
        readme,
        "存为一个json文件",
        &pdf,
        Path::new("/o"),
    )
    .unwrap();
    assert!(starter.code.ends_with("meta = reader.metadata\nresult = meta\nimport json\nwith open(\"/o/output.json\", \"w\", encoding=\"utf-8\") as out:\n    json.dump(result, out, ensure_ascii=False, indent=2, default=str)\n"), "{}", starter.code);
    // Several values printed, or a keyword of `print`: not one value.
    for shown in ["print(a, b)", "print(text, file=log)"] {
        let readme = format!(
            "```python\nfrom pypdf import PdfReader\nr = PdfReader(\"e.pdf\")\n{shown}\n```\n"
        );
        let starter =
            starter_from_readme("README.md", &readme, "txt", &pdf, Path::new("/o")).unwrap();
        assert_eq!(starter.saved_result, None, "{shown}");
    }
    let readme = "```python\nfrom pypdf import PdfReader\nr = PdfReader(\"e.pdf\")\nprint(f(r, \"a,b\"), [1, 2])\n```\n";
    let starter = starter_from_readme("README.md", readme, "txt", &pdf, Path::new("/o")).unwrap();
    assert_eq!(starter.saved_result, None);
    let readme = "```python\nfrom pypdf import PdfReader\nr = PdfReader(\"e.pdf\")\nprint(f(r, \"a,b\", [1, 2]))\n```\n";
    let starter = starter_from_readme("README.md", readme, "txt", &pdf, Path::new("/o")).unwrap();
    assert!(
        starter.code.contains("result = f(r, \"a,b\", [1, 2])\n"),
        "{}",
        starter.code
    );
    // A task that wants an image, or an example that already saves:
    // nothing added.
    let starter = starter_from_readme(
        "README.md",
        readme,
        "split it into png images",
        &pdf,
        Path::new("/o"),
    )
    .unwrap();
    assert_eq!(starter.saved_result, None);
    let saves =
        "```python\nfrom stego import lsb\nlsb.hide(\"a.png\", \"x\").save(\"b.png\")\n```\n";
    let png = [Path::new("/in/a.png")];
    let starter = starter_from_readme("README.md", saves, "hide", &png, Path::new("/o")).unwrap();
    assert_eq!(starter.saved_result, None);
    assert!(!starter.code.contains("out.write"));
}

#[test]
fn a_first_item_taken_by_the_example_is_named() {
    let code = "page = reader.pages[0]  # pages[1] too\ntext = \"x[0]\"\nrows = df.values[0][0]\n";
    assert_eq!(first_items(code), ["reader.pages", "df.values"]);
    assert!(first_items("x = [0]\ny = f()[0]\n").is_empty());
}

#[test]
fn a_doctest_example_gets_the_input_and_the_output_it_saves_and_reads_back() {
    let readme = "# Stego\n\n## Install\n\n```bash\n$ pip install stego\n```\n\n\
        ## Library\n\n```python\n>>> from stego import lsb\n\
        >>> secret = lsb.hide(\"./tests/Lenna.png\", \"Hello World\")\n\
        >>> secret.save(\"./Lenna-secret.png\")\n>>>\n\
        >>> clear = lsb.reveal(\"./Lenna-secret.png\")\n'Hello World'\n```\n";
    let s = start(readme, "README.md", "embed a watermark", &["/in/x.png"]).unwrap();
    assert_eq!(s.section, vec!["Library".to_string()]);
    assert_eq!(s.samples, ["Hello World"]);
    assert_eq!(
        s.code,
        "from stego import lsb\nsecret = lsb.hide(\"/in/x.png\", \"Hello World\")\n\
         secret.save(\"/out/output.png\")\n\nclear = lsb.reveal(\"/out/output.png\")\n"
    );
    let roles: Vec<(&str, PathRole)> = s
        .swaps
        .iter()
        .map(|w| (w.written.as_str(), w.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("./tests/Lenna.png", PathRole::Input),
            ("./Lenna-secret.png", PathRole::Output)
        ]
    );
}

#[test]
fn with_inputs_only_an_example_reading_their_kind_of_file_is_offered() {
    let readme = "# Pdf\n\n## Merge pdf pages text\n\n```python\nfrom p import merge\n\
        merge(pages=[1, 2])\n```\n\n## Read\n\n```python\nfrom p import Reader\n\
        r = Reader(\"example.pdf\")\nprint(r.pages[0].extract_text())\n```\n";
    let s = start(
        readme,
        "README.md",
        "extract the text of pdf pages",
        &["/in/a.pdf"],
    );
    let s = s.unwrap();
    assert!(s.code.contains("Reader(\"/in/a.pdf\")"), "{}", s.code);
    // An example that reads none of the task's inputs is not offered,
    // however well it matches.
    let s = start(readme, "README.md", "merge pdf pages", &["/in/a.csv"]);
    assert_eq!(s, None);
    // Without an input, the words decide.
    let s = start(readme, "README.md", "merge pdf pages", &[]).unwrap();
    assert!(s.code.contains("merge(pages"), "{}", s.code);
}

#[test]
fn an_rst_code_directive_is_read_and_a_task_sharing_nothing_gets_no_starter() {
    let readme = "Faker\n=====\n\nBasic usage\n-----------\n\n.. code:: python\n\n    \
        from faker import Faker\n    fake = Faker()\n\n    fake.name()\n    \
        # 'Lucy Cechtelar'\n\nCommand line\n------------\n\n.. code:: bash\n\n    \
        faker address\n";
    let s = start(readme, "README.rst", "generate a fake name", &[]).unwrap();
    assert_eq!(
        s.code,
        "from faker import Faker\nfake = Faker()\n\nfake.name()\n# 'Lucy Cechtelar'\n"
    );
    assert!(s.swaps.is_empty());
    assert_eq!(start(readme, "README.rst", "compress a video", &[]), None);
}

#[test]
fn shell_sessions_data_and_other_languages_are_not_examples() {
    for block in [
        "```bash\n$ stego hide -i a.png -o b.png\n```\n",
        "```\npip install stego\n```\n",
        "```json\n{\"a\": \"x.png\"}\n```\n",
        "```js\nhide(\"a.png\")\n```\n",
        "```python\n{\"image\": \"a.png\"}\n```\n",
        "```\npython hide.py a.png\n```\n",
        "```\n$ python -m stego a.png\n```\n",
    ] {
        let readme = format!("# T\n\n{block}");
        assert_eq!(
            start(&readme, "README.md", "hide a png", &["/in/a.png"]),
            None,
            "{block}"
        );
    }
}

#[test]
fn output_shown_after_the_statements_is_cut_and_broken_code_is_no_example() {
    let readme = "Eparse\n======\n\n.. code-block::\n\n    from eparse.core import get_df_from_file\n\n    \
        print([t for t in get_df_from_file('myfile.xlsx')])\n    102   Date  Principal Repayment\n    \
        103  44834        700757.679004\n    ...\n\nMore text.\n";
    let s = start(readme, "README.rst", "parse tables", &["/in/book.xlsx"]).unwrap();
    // The shown tables are cut; what the example printed is saved.
    assert!(
        s.code.starts_with(
            "from eparse.core import get_df_from_file\n\n\
             result = [t for t in get_df_from_file(\"/in/book.xlsx\")]\nprint(result)\nwith open("
        ),
        "{}",
        s.code
    );
    assert!(!s.code.contains("Principal"), "{}", s.code);
    let broken = "# T\n\n```python\nif (x.read(\"a.png\"):\n```\n";
    assert_eq!(start(broken, "README.md", "read", &["/in/a.png"]), None);
}

#[test]
fn a_variable_named_like_a_command_is_still_python() {
    let readme = "# T\n\n```\ncat = Cat()\ncat.read(\"a.png\")\n```\n";
    let s = start(readme, "README.md", "", &["/in/b.png"]).unwrap();
    assert_eq!(s.code, "cat = Cat()\ncat.read(\"/in/b.png\")\n");
}

#[test]
fn paths_of_a_related_type_stand_in_and_unrelated_files_stay() {
    let readme = "# I\n\n```python\nimport i\nmodel = i.load(\"weights.onnx\")\n\
        img = i.imread('photo.png')\nout = i.run(model, img)\n\
        i.imwrite(\"result.png\", out)\n```\n";
    let s = start(readme, "README.md", "", &["/in/cat.jpg"]).unwrap();
    assert_eq!(
        s.code,
        "import i\nmodel = i.load(\"weights.onnx\")\nimg = i.imread(\"/in/cat.jpg\")\n\
         out = i.run(model, img)\ni.imwrite(\"/out/output.png\", out)\n"
    );
}

#[test]
fn several_outputs_are_numbered_and_open_for_writing_is_an_output() {
    let readme = "# T\n\n```python\nimport t\nt.convert(\"in.csv\", output=\"a.json\")\n\
        with open(\"b.txt\", \"w\") as f:\n    f.write(t.summary(\"in.csv\"))\n\
        out_path = 'c.xlsx'\n```\n";
    let s = start(readme, "README.md", "convert", &["/in/data.csv"]).unwrap();
    let now: Vec<String> = s
        .swaps
        .iter()
        .map(|w| w.now.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        now,
        [
            "/in/data.csv",
            "/out/output_01.json",
            "/out/output_02.txt",
            "/out/output_03.xlsx"
        ]
    );
    assert!(
        s.code.contains("    f.write(t.summary(\"/in/data.csv\"))"),
        "{}",
        s.code
    );
}

#[test]
fn literals_that_are_not_plain_file_names_are_left_alone() {
    for text in [
        "https://x.org/a.png",
        "a b.png",
        "1.5",
        "user@example.com",
        "example.com",
        "--out.png",
        "en_US.UTF-8",
        "",
    ] {
        assert_eq!(file_type(text), None, "{text}");
    }
    assert_eq!(file_type("./samples/Lenna.PNG").as_deref(), Some("png"));
    assert_eq!(file_type("script.py").as_deref(), Some("py"));
    let lits = string_literals("f(f\"{x}.png\", b'a.png', r'c:\\a.png', '''d.png''') # 'e.png'\n");
    let contents: Vec<&str> = lits.iter().map(|l| l.content.as_str()).collect();
    assert_eq!(contents, ["c:\\a.png"]);
}

#[test]
fn hostile_readmes_end_quickly_with_nothing() {
    let deep = format!("# T\n\n```python\nf({}\"a.png\"\n```\n", "(".repeat(50_000));
    assert!(start(&deep, "README.md", "a", &["/in/a.png"]).is_none());
    let unclosed = "# T\n\n```python\nx = open('a.png\nimport y\n";
    assert!(start(unclosed, "README.md", "a", &["/in/a.png"]).is_none());
    let many: String = (0..5_000)
        .map(|i| format!("```python\nimport m\nm.read(\"f{i}.png\")\n```\n"))
        .collect();
    let s = start(&many, "README.md", "read", &["/in/a.png"]).unwrap();
    assert!(s.code.contains("/in/a.png"));
}

#[test]
fn made_up_data_is_replaced_by_the_tasks_table_and_the_pages_import_carried() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("recording.csv");
    std::fs::write(&table, "ECG,EDA\n0.1,1.0\n0.2,1.1\n").unwrap();
    let readme = "# Quick start\n\n```python\nimport neurokit2 as nk\n```\n\n\
                  ## EDA\n\n```python\n# Simulate\neda = nk.eda_simulate(duration=10, sampling_rate=250)\n\
                  signals, info = nk.eda_process(eda, sampling_rate=250)\n```\n\n\
                  ## Plot\n\n```python\nnk.signal_plot([1, 2])\n```\n";
    let starter = starter_from_readme(
        "README.md",
        readme,
        "extract SCR peaks from the EDA recording",
        &[table.as_path()],
        Path::new("/o"),
    )
    .unwrap();
    let path = python_string(&table.to_string_lossy());
    assert_eq!(
        starter.code,
        format!(
            "import neurokit2 as nk\nimport pandas as pd\n# Simulate\neda = pd.read_csv({path})[\"EDA\"]\n\
             signals, info = nk.eda_process(eda, sampling_rate=250)\n"
        )
    );
    let data = starter.made_up_data.unwrap();
    assert_eq!(
        data.written,
        "nk.eda_simulate(duration=10, sampling_rate=250)"
    );
    assert_eq!(data.column.as_deref(), Some("EDA"));
    assert!(starter.swaps.is_empty(), "{:?}", starter.swaps);
}

#[test]
fn an_example_reading_the_input_beats_one_whose_made_up_data_was_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t.csv");
    std::fs::write(&table, "a\n1\n").unwrap();
    let readme = "```python\nimport lib\nx = lib.load_sample()\nlib.peaks(x)\n```\n\n\
                  ```python\nimport lib\nx = lib.read(\"data.csv\")\n```\n";
    let starter = starter_from_readme(
        "README.md",
        readme,
        "peaks",
        &[table.as_path()],
        Path::new("/o"),
    )
    .unwrap();
    assert!(starter.made_up_data.is_none());
    assert!(starter.code.contains("lib.read("), "{}", starter.code);
    // Only a table takes the place of made-up data; a file named in the
    // call is read, not made up.
    let png = Path::new("/in/a.png");
    assert!(read_input_instead("x = lib.load_sample()\n", png).is_none());
    assert!(read_input_instead("x = lib.load_data(\"a.csv\")\n", &table).is_none());
    // The only column is taken whatever the variable's name.
    let (code, data) = read_input_instead("signal = lib.simulate(10)\n", &table).unwrap();
    assert!(code.contains("[\"a\"]"), "{code}");
    assert_eq!(data.column.as_deref(), Some("a"));
}

#[test]
fn imports_are_carried_only_for_names_used_and_unbound() {
    let page = [
        "import numpy as np\nimport neurokit2 as nk\nfrom x import (a, b as c)\n",
        "nk.run()\n",
    ];
    assert_eq!(
        imports_needed("nk.run(c)\n", &page),
        ["import neurokit2 as nk", "from x import (a, b as c)"]
    );
    assert!(imports_needed("import neurokit2 as nk\nnk.run()\n", &page).is_empty());
    assert!(imports_needed("np = 3\nprint(np)\n", &page).is_empty());
}

#[test]
fn a_shown_table_is_saved_by_its_own_to_csv_and_json_lines_item_by_item() {
    let readme =
        "```python\nimport pandas as pd\ndf = pd.read_csv(\"in.csv\")\nprint(df.describe())\n```\n";
    let csv = [Path::new("/in/t.csv")];
    let starter = starter_from_readme(
        "README.md",
        readme,
        "save the summary as csv",
        &csv,
        Path::new("/o"),
    )
    .unwrap();
    assert!(
        starter.code.ends_with(
            "result = df.describe()\nprint(result)\nif hasattr(result, \"to_csv\"):\n    \
             result.to_csv(\"/o/output.csv\", index=False)\nelse:\n    \
             with open(\"/o/output.csv\", \"w\", encoding=\"utf-8\") as out:\n        out.write(str(result))\n"
        ),
        "{}",
        starter.code
    );
    let starter = starter_from_readme(
        "README.md",
        readme,
        "one JSON line per row, jsonl",
        &csv,
        Path::new("/o"),
    )
    .unwrap();
    assert!(
        starter.code.ends_with(
            "for item in (result if isinstance(result, list) else [result]):\n        \
             out.write(json.dumps(item, ensure_ascii=False, default=str) + \"\\n\")\n"
        ),
        "{}",
        starter.code
    );
}

#[test]
fn what_a_loop_prints_is_also_written_to_the_output() {
    let readme = "```python\nfrom pathlib import Path\nfrom eparse.core import get_df_from_file\n\n\
                  for f in Path(\"tests\").iterdir():\n    for table in get_df_from_file(f):\n        print(table)\n```\n";
    let dir = tempfile::tempdir().unwrap();
    let inputs = [dir.path()];
    let starter = starter_from_readme(
        "README.rst",
        readme,
        "写入一个 txt 文件",
        &inputs,
        Path::new("/o"),
    )
    .unwrap();
    let quoted = python_string(&dir.path().to_string_lossy());
    assert_eq!(
        starter.code,
        format!(
            "from pathlib import Path\nfrom eparse.core import get_df_from_file\n\n\
             output_file = open(\"/o/output.txt\", \"w\", encoding=\"utf-8\")\n\
             for f in Path({quoted}).iterdir():\n    for table in get_df_from_file(f):\n        print(table)\n\
             \x20       print(table, file=output_file)\noutput_file.close()\n"
        )
    );
    assert_eq!(
        starter.saved_result.as_deref(),
        Some(Path::new("/o/output.txt"))
    );
    // JSON is one document: its lines are not printed into it.
    let starter =
        starter_from_readme("README.rst", readme, "as json", &inputs, Path::new("/o")).unwrap();
    assert_eq!(starter.saved_result, None);
}

#[test]
fn a_docs_page_linked_out_of_the_tree_is_not_read() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("secret.md"),
        "```python\nfrom pdfkit import Reader\nReader(\"in.pdf\").save(\"out.pdf\")\n```\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("pdfkit")).unwrap();
    std::fs::write(root.join("pdfkit/__init__.py"), "").unwrap();
    std::fs::write(root.join("README.md"), "# pdfkit\n").unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("docs/guide.md"))
        .unwrap();
    // A linked directory is not walked either.
    std::os::unix::fs::symlink(outside.path(), root.join("docs/more")).unwrap();
    let input = [Path::new("/in/a.pdf")];
    assert!(readme_starter(root, "save", &input, Path::new("/o")).is_none());
    assert!(crate::readme::usage_pages(root).is_empty());
}
