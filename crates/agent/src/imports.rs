//! Facts about Python's import names, one definition for the crate and
//! the harness: which names the standard library provides, which
//! distribution provides an import whose name differs from it (`cv2` is
//! `opencv-python-headless`), and names as pip compares them (PEP 503).
//!
//! ```
//! use agent::environment::{is_stdlib, pip_name, requirement_name};
//! assert!(is_stdlib("json") && !is_stdlib("numpy"));
//! assert_eq!(pip_name("skimage"), "scikit-image");
//! assert_eq!(requirement_name("Flask_SQLAlchemy>=3 # db").as_deref(), Some("flask-sqlalchemy"));
//! ```

/// CPython 3.11's `sys.stdlib_module_names`, without the private ones.
#[rustfmt::skip]
pub const STDLIB: &[&str] = &[
    "abc", "aifc", "antigravity", "argparse", "array", "ast", "asynchat", "asyncio",
    "asyncore", "atexit", "audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2",
    "cProfile", "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd", "code", "codecs",
    "codeop", "collections", "colorsys", "compileall", "concurrent", "configparser",
    "contextlib", "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes", "curses",
    "dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils", "doctest",
    "email", "encodings", "ensurepip", "enum", "errno", "faulthandler", "fcntl", "filecmp",
    "fileinput", "fnmatch", "fractions", "ftplib", "functools", "gc", "genericpath", "getopt",
    "getpass", "gettext", "glob", "graphlib", "grp", "gzip", "hashlib", "heapq", "hmac",
    "html", "http", "idlelib", "imaplib", "imghdr", "imp", "importlib", "inspect", "io",
    "ipaddress", "itertools", "json", "keyword", "lib2to3", "linecache", "locale", "logging",
    "lzma", "mailbox", "mailcap", "marshal", "math", "mimetypes", "mmap", "modulefinder",
    "msilib", "msvcrt", "multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath",
    "nturl2path", "numbers", "opcode", "operator", "optparse", "os", "ossaudiodev", "pathlib",
    "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib", "poplib",
    "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd", "py_compile", "pyclbr",
    "pydoc", "pydoc_data", "pyexpat", "queue", "quopri", "random", "re", "readline", "reprlib",
    "resource", "rlcompleter", "runpy", "sched", "secrets", "select", "selectors", "shelve",
    "shlex", "shutil", "signal", "site", "smtpd", "smtplib", "sndhdr", "socket",
    "socketserver", "spwd", "sqlite3", "sre_compile", "sre_constants", "sre_parse", "ssl",
    "stat", "statistics", "string", "stringprep", "struct", "subprocess", "sunau", "symtable",
    "sys", "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile", "termios",
    "textwrap", "this", "threading", "time", "timeit", "tkinter", "token", "tokenize",
    "tomllib", "trace", "traceback", "tracemalloc", "tty", "turtle", "turtledemo", "types",
    "typing", "unicodedata", "unittest", "urllib", "uu", "uuid", "venv", "warnings", "wave",
    "weakref", "webbrowser", "winreg", "winsound", "wsgiref", "xdrlib", "xml", "xmlrpc",
    "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",
    "__future__", "__main__",
];

/// Whether `module` (a top-level import name) is in the standard library.
pub fn is_stdlib(module: &str) -> bool {
    STDLIB.contains(&module)
}

/// Whether a normalized requirement name ([`normalized`]) names a
/// standard-library module: pip cannot install it.
pub fn is_stdlib_name(name: &str) -> bool {
    STDLIB.iter().any(|m| normalized(m) == name)
}

/// A distribution or import name as pip compares them (PEP 503).
pub fn normalized(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(['_', '.'], "-")
}

/// The requirement name of a `requirements.txt` line (`Flask>=2 ; ...` ->
/// `flask`), if the line names one.
pub fn requirement_name(line: &str) -> Option<String> {
    let line = line.split('#').next().unwrap_or("").trim();
    if line.is_empty() || line.starts_with('-') {
        return None;
    }
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(line.len());
    (end > 0).then(|| normalized(&line[..end]))
}

/// Import names whose distribution has another name, with that
/// distribution (the one to install when nothing says otherwise).
const DISTRIBUTIONS: [(&str, &str); 12] = [
    ("cv2", "opencv-python-headless"),
    ("PIL", "pillow"),
    ("sklearn", "scikit-learn"),
    ("skimage", "scikit-image"),
    ("yaml", "pyyaml"),
    ("bs4", "beautifulsoup4"),
    ("Crypto", "pycryptodome"),
    ("dateutil", "python-dateutil"),
    ("docx", "python-docx"),
    ("fitz", "pymupdf"),
    ("magic", "python-magic"),
    ("attr", "attrs"),
];

/// Distributions that provide one import name between them (OpenCV's four
/// builds all provide `cv2`): a pin of any of them serves the import.
const ALTERNATIVES: [(&str, &[&str]); 1] = [(
    "cv2",
    &[
        "opencv-python",
        "opencv-python-headless",
        "opencv-contrib-python",
        "opencv-contrib-python-headless",
    ],
)];

/// The PyPI name of an import name, where they differ.
pub fn pip_name(module: &str) -> String {
    DISTRIBUTIONS
        .iter()
        .find(|(import, _)| *import == module)
        .map_or_else(
            || module.replace('_', "-"),
            |(_, package)| (*package).to_owned(),
        )
}

/// Whether the distribution named `name` provides the import `module`:
/// its own name, its [`pip_name`], or one of its alternatives.
pub fn provides(name: &str, module: &str) -> bool {
    let name = normalized(name);
    name == normalized(module)
        || name == normalized(&pip_name(module))
        || ALTERNATIVES
            .iter()
            .any(|(import, names)| *import == module && names.contains(&name.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_names_are_read_like_pip_reads_them() {
        assert_eq!(
            requirement_name("Flask_SQLAlchemy>=3 # db").as_deref(),
            Some("flask-sqlalchemy")
        );
        assert_eq!(requirement_name("  # only a comment"), None);
        assert_eq!(requirement_name("-r other.txt"), None);
        assert_eq!(
            requirement_name("--extra-index-url https://x.org/whl"),
            None
        );
    }

    #[test]
    fn imports_map_to_the_distributions_that_provide_them() {
        assert_eq!(pip_name("sklearn"), "scikit-learn");
        assert_eq!(pip_name("typing_extensions"), "typing-extensions");
        assert!(provides("opencv-python", "cv2"));
        assert!(provides("opencv_python_headless", "cv2"));
        assert!(provides("scikit-image", "skimage"));
        assert!(provides("Levenshtein", "Levenshtein"));
        assert!(provides("PyYAML", "yaml"));
        assert!(!provides("numpy", "cv2"));
        assert!(is_stdlib("argparse") && is_stdlib("__future__"));
        assert!(is_stdlib_name("sqlite3") && !is_stdlib_name("flask"));
    }
}
