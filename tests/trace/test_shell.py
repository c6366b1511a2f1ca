"""Shell commands understood: the main program, the files touched, what it does, its key.

Commands are spelled as Claude Code, Codex (``bash -lc``), Gemini CLI, Qwen Code and
mini-SWE-agent write them."""

from __future__ import annotations

import pytest

from gateway.trace.shell import MAX_CHARS, Command, command_of, parse

# --- the same file through many programs is one target ------------------------------------------

SAME_MISSING_FILE = [
    "cat x.txt",
    "head -n 20 x.txt",
    "head x.txt",
    "tail x.txt",
    "tail -5 x.txt",
    "grep -n foo x.txt",
    "rg foo x.txt",
    "sed -n '1,5p' x.txt",
    "wc -l x.txt",
    "less x.txt",
    "more x.txt",
    "nl -ba x.txt",
    "awk '{print $1}' x.txt",
    "stat x.txt",
    "file x.txt",
    "ls -la x.txt",
    "cat ./x.txt",
    "python x.txt",
    "cat x.txt 2>&1",
    "cat x.txt 2>/dev/null",
    "bash -lc 'cat x.txt'",
    "grep -e foo x.txt",
    "cat x.txt | head",
    "diff x.txt",
    "jq . x.txt",
    "md5sum x.txt",
]


@pytest.mark.parametrize("command", SAME_MISSING_FILE)
def test_the_file_is_the_target_whatever_the_program(command):
    assert parse(command).files == ("x.txt",)


@pytest.mark.parametrize(
    ("command", "files"),
    [
        ("cd /w && cat x.txt", ("/w/x.txt",)),
        ("cd /w; head -n 5 x.txt", ("/w/x.txt",)),
        ("cd /w && cd sub && cat ../x.txt", ("/w/x.txt",)),
        ("cd /testbed && sed -n '1,50p' src/a.py", ("/testbed/src/a.py",)),
        ("cd /w && cat /etc/hosts", ("/etc/hosts",)),
        ("cd . && pytest tests", ("tests",)),
        ("cd repo && python -m pytest tests/", ("repo/tests",)),
        ("bash -lc 'cd /w && cat x.txt'", ("/w/x.txt",)),
        ("pushd /w && cat x.txt", ("/w/x.txt",)),
        ("git -C /w diff a.py", ("/w/a.py",)),
        ("python x.py", ("x.py",)),
        ("python3 -m pytest tests/t.py -q", ("tests/t.py",)),
        ("node build.js", ("build.js",)),
        ("bash run.sh", ("run.sh",)),
        ("sh ./scripts/run.sh --fast", ("scripts/run.sh",)),
        ("./run.sh", ("run.sh",)),
        ("./manage.py test", ("manage.py",)),
        ("git diff a.py", ("a.py",)),
        ("git diff HEAD~1 -- a.py", ("a.py",)),
        ("git diff origin/main", ()),
        ("git show HEAD:a.py", ()),
        ("cat a.py b.py a.py", ("a.py", "b.py")),
        ("cat a.txt && python b.py", ("a.txt", "b.py")),
        ("cat a.txt | python b.py", ("a.txt", "b.py")),
        ("python gen.py > out.txt", ("gen.py", "out.txt")),
        ("python gen.py >> out.txt 2>&1", ("gen.py", "out.txt")),
        ("python run.py < input.txt", ("run.py", "input.txt")),
        ("cmd &> all.log", ("all.log",)),
        ("curl -s https://example.com/api", ("https://example.com/api",)),
        ("wget -q https://example.com/f.zip -O f.zip", ("https://example.com/f.zip", "f.zip")),
        ("echo https://example.com/x", ()),
        ("head -n 5 a.py", ("a.py",)),
        ("tail --lines 20 a.py", ("a.py",)),
        ("grep -m 3 foo a.py", ("a.py",)),
        ("grep -rn 'def foo' src/", ("src",)),
        ("grep foo", ()),
        ("rg -e foo -e bar a.py b.py", ("a.py", "b.py")),
        ("grep -f patterns.txt a.py", ("patterns.txt", "a.py")),
        ("pytest -k 'test_a or test_b' tests", ("tests",)),
        ("python -m mod.sub", ()),
        ("sed -n '1,5p' a.py", ("a.py",)),
        ("sed 's/a/b/' a.py", ("a.py",)),
        ("awk -F, '{print $2}' data.csv", ("data.csv",)),
        ("find src -name '*.py'", ("src",)),
        ("touch a.py && rm b.py", ("a.py", "b.py")),
        ("cp a.py b.py", ("a.py", "b.py")),
        ("chmod +x run.sh", ("run.sh",)),
        ("echo hi | tee log.txt", ("log.txt",)),
        ("npm test", ()),
        ("ls", ()),
        ("ps aux | grep server", ()),
        ("FOO=1 BAR=2 python x.py", ("x.py",)),
        ("timeout 60 python x.py", ("x.py",)),
        ("timeout -s KILL 60 python x.py", ("x.py",)),
        ("time python x.py", ("x.py",)),
        ("nohup python server.py &", ("server.py",)),
        ("env A=1 python x.py", ("x.py",)),
        ("source venv/bin/activate && python x.py", ("x.py",)),
        (". venv/bin/activate; python x.py", ("x.py",)),
        ("export PYTHONPATH=src && python x.py", ("x.py",)),
        ("python train.py --config cfg.yaml --epochs 10", ("train.py", "cfg.yaml")),
        ("find . -name '*.py' -exec grep -l foo {} \\;", (".",)),
    ],
)
def test_files(command, files):
    assert parse(command).files == files


# --- kind: read, wait or run ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("cat a.py", "read"),
        ("head -n 5 a.py", "read"),
        ("tail -f log.txt", "read"),
        ("sed -n 1,5p a.py", "read"),
        ("nl -ba a.py", "read"),
        ("less a.py", "read"),
        ("wc -l a.py", "read"),
        ("grep foo a.py", "read"),
        ("rg foo", "read"),
        ("ls -la", "read"),
        ("find . -name '*.py'", "read"),
        ("file a.bin", "read"),
        ("stat a.py", "read"),
        ("awk '{print $1}' a.txt", "read"),
        ("git status", "read"),
        ("git log --oneline", "read"),
        ("git diff", "read"),
        ("git show HEAD", "read"),
        ("git branch", "read"),
        ("ps aux | grep server", "read"),
        ("cd /w && ls", "read"),
        ("echo hi", "read"),
        ("pwd", "read"),
        ("sleep 5; cat status.txt", "read"),
        ("echo '--- a ---'; cat a.py; echo '--- b ---'; cat b.py", "read"),
        ("cat a.py | grep foo | wc -l", "read"),
        ("sleep 30", "wait"),
        ("sleep 5 && echo done", "wait"),
        ("sleep 0", "wait"),
        ("sed -i 's/a/b/' a.py", "run"),
        ("sed -i.bak 's/a/b/' a.py", "run"),
        ("sed --in-place 's/a/b/' a.py", "run"),
        ("cat a.py > b.py", "run"),
        ("echo x >> log.txt", "run"),
        ("ls > listing.txt", "run"),
        ("cat > a.py <<'EOF'\nprint(1)\nEOF", "run"),
        ("echo hi | tee out.txt", "run"),
        ("awk '{print > \"out.txt\"}' a.txt", "run"),
        ("find . -name '*.pyc' -delete", "run"),
        ("find . -name '*.tmp' -exec rm {} \\;", "run"),
        ("git commit -m x", "run"),
        ("git stash", "run"),
        ("git branch -D old", "run"),
        ("python x.py", "run"),
        ("pytest", "run"),
        ("npm test", "run"),
        ("cat a.txt && python b.py", "run"),
        ("make", "run"),
        ("curl https://x.io", "run"),
        ("grep foo a.py 2>/dev/null", "read"),
        ("cat a.py > /dev/null", "read"),
    ],
)
def test_kind(command, kind):
    assert parse(command).kind == kind


# --- keys: what a loop varies is left out -----------------------------------------------------------

KEY_GROUPS = {
    "read a.py": [
        "cat a.py",
        "sed -n '1,50p' a.py",
        "sed -n '51,100p' a.py",
        "sed -n 200,260p a.py",
        "nl -ba a.py",
        "nl -ba a.py | sed -n '200,260p'",
        "head -n 40 a.py",
        "head -40 a.py",
        "tail -n +30 a.py",
        "awk 'NR>=10 && NR<=20' a.py",
        "awk 'NR==5' a.py",
        "cat -n a.py | head -n 80 | tail -n 20",
        "cat ./a.py",
        "less a.py",
        "bash -lc \"sed -n '1,40p' a.py\"",
        "sed -n '$p' a.py",
        "sed 10q a.py",
        "cat a.py 2>&1",
        "sed -n -e '5,9p' a.py",
        "cat -A a.py",
    ],
    "read status.txt": [
        "cat status.txt",
        "tail -1 status.txt",
        "tail -n 1 status.txt",
        "cat ./status.txt",
        "sleep 0; cat status.txt",
        "head status.txt",
        "sleep 30 && tail status.txt",
        "sleep 5; cat status.txt",
        "tail -n1 status.txt",
        "echo polling; cat status.txt",
        "watch -n 5 cat status.txt",
        "while true; do cat status.txt; sleep 5; done",
    ],
    "pytest tests": [
        "python -m pytest tests/ -q",
        "python3 -m pytest tests -x",
        "pytest tests/",
        "cd . && pytest tests",
        "python3.11 -m pytest ./tests -v --tb=short",
        "pytest -q tests",
        "pytest tests -k test_a",
        "pytest tests --maxfail 1",
        "uv run pytest tests",
        ".venv/bin/pytest tests/",
        "timeout 300 pytest tests",
        "python -m pytest tests 2>&1 | tail -30",
        "source venv/bin/activate && pytest tests -x",
        "bash -lc 'python -m pytest tests -q'",
        "py.test tests",
    ],
    "python run.py": [
        "python run.py",
        "python3 run.py",
        "python run.py --verbose",
        "python -u run.py",
        "cd . && python ./run.py",
        "python run.py 2>&1 | head -50",
        "FOO=1 python run.py",
        "python run.py --epochs 10",
    ],
    "grep foo a.py": [
        "grep foo a.py",
        "grep -n foo a.py",
        "grep -rn foo a.py",
        "grep -e foo a.py",
        "grep -C 3 foo a.py",
    ],
    "npm test": ["npm test", "npm test -- --watch=false", "npm --silent test"],
    "sleep": ["sleep 5", "sleep 30 && echo done", "sleep 1m"],
    "run.sh": ["./run.sh", "bash run.sh", "sh run.sh", "bash ./run.sh --fast"],
    "write out.py": ["cat > out.py <<'EOF'\nx = 1\nEOF", "echo 'x = 1' > out.py", "printf 'x' > out.py"],
}


@pytest.mark.parametrize(("key", "command"), [(k, c) for k, cs in KEY_GROUPS.items() for c in cs])
def test_key(key, command):
    assert parse(command).key == key


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("grep bar a.py", "grep bar a.py"),  # another pattern is another question
        ("rg -n 'def foo' src/", "rg def foo src"),
        ("wc -l a.py", "wc a.py"),
        ("ls -la src/", "ls src"),
        ("git diff a.py", "git diff a.py"),
        ("git log -n 5 --oneline", "git log"),
        ("git status --short", "git status"),
        ("npm run build", "npm run build"),
        ("npm install lodash", "npm install lodash"),
        ("pip install -U requests", "pip install requests"),
        ("make -j 4 test", "make test"),
        ("cargo test", "cargo test"),
        ("python -m pip install -e .", "pip install ."),
        ("python -c 'print(1)'", "python -c print(1)"),
        ("python - <<'PY'\nprint(1)\nPY", "python <<print(1)"),
        ("node -e 'console.log(1)'", "node -e console.log(1)"),
        ("ps aux | grep server", "ps aux | grep server"),
        ("cat a.py | grep foo", "read a.py | grep foo"),
        ("python x.py > out.txt", "python x.py > out.txt"),
        ("curl -s -X POST https://x.io/api", "curl https://x.io/api"),
        ("cd /w && cat x.txt", "read /w/x.txt"),
        ("sed 's/a/b/' a.py", "sed s/a/b/ a.py"),
        ("sed -i 's/a/b/' a.py", "sed a.py"),
        ("echo hi", "echo"),
        ("cd /w", "cd"),
        ("", ""),
    ],
)
def test_key_of_other_commands(command, key):
    assert parse(command).key == key


def test_keys_keep_what_differs():
    keys = {
        parse(c).key
        for c in (
            "cat a.py",
            "cat b.py",
            "grep foo a.py",
            "pytest tests/a.py",
            "pytest tests/b.py",
            "python a.py",
            "python b.py",
            "npm test",
            "npm run lint",
            "sed -i s/a/b/ a.py",
        )
    }
    assert len(keys) == 10


# --- ranged and paced ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "ranged"),
    [
        ("sed -n '1,50p' a.py", True),
        ("sed -n '51,100p' a.py", True),
        ("nl -ba a.py | sed -n '200,260p'", True),
        ("head -n 40 a.py", True),
        ("head -40 a.py", True),
        ("tail -n +30 a.py", True),
        ("tail -20 a.py", True),
        ("awk 'NR>=10 && NR<=20' a.py", True),
        ("cat -n a.py | head -n 80 | tail -n 20", True),
        ("cat a.py | head -100", True),
        ("bat -r 10:20 a.py", True),
        ("sed 20q a.py", True),
        ("cd /w && sed -n '5,10p' a.py", True),
        ("bash -lc \"sed -n '1,40p' a.py\"", True),
        ("cat a.py", False),
        ("nl -ba a.py", False),
        ("head a.py", False),
        ("tail a.py", False),
        ("grep -n foo a.py", False),
        ("grep -n foo a.py | head -5", False),
        ("sed -i '1,5d' a.py", False),
        ("sed 's/a/b/' a.py", False),
        ("python x.py | head -20", False),
        ("ps aux | head", False),
        ("awk '{print $1}' a.py", False),
        ("awk 'END {print NR}' a.py", False),
        ("head -n 5 a.py > b.py", False),
    ],
)
def test_ranged(command, ranged):
    assert parse(command).ranged is ranged


@pytest.mark.parametrize(
    ("command", "paced"),
    [
        ("sleep 30 && tail log.txt", True),
        ("sleep 5; cat status", True),
        ("sleep 0.5 && cat status", True),
        ("sleep 1m; cat status", True),
        ("sleep $DELAY; cat status", True),
        ("cat status; sleep 10", True),
        ("while true; do cat status; sleep 5; done", True),
        ("watch -n 2 cat status", True),
        ("bash -lc 'sleep 10 && cat status'", True),
        ("sleep 30", True),
        ("sleep 0; cat status.txt", False),
        ("sleep 0 && cat status", False),
        ("cat status", False),
        ("tail -f log.txt", False),
        ("python sleep.py", False),
        ("grep sleep a.py", False),
    ],
)
def test_paced(command, paced):
    assert parse(command).paced is paced


# --- the main step and program ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("cat a.py", "cat"),
        ("/bin/cat a.py", "cat"),
        ("python -m pytest tests", "pytest"),
        ("python3 x.py", "python"),
        ("python3.11 x.py", "python"),
        ("pytest", "pytest"),
        ("npm test", "npm"),
        ("cd /w && make", "make"),
        ("cd /w && make && ./app", "app"),
        ("make || true", "make"),
        ('python x.py; echo "exit: $?"', "python"),
        ("echo start; python x.py", "python"),
        ("set -e; cd /w && npm test", "npm"),
        ("export A=1; python x.py", "python"),
        ("python x.py 2>&1 | tail -20", "python"),
        ("ps aux | grep server", "ps"),
        ("echo y | python setup.py", "python"),
        ("bash -lc 'cd /w && pytest'", "pytest"),
        ('sh -c "grep foo a.py"', "grep"),
        ("timeout 10 make", "make"),
        ("nice -n 10 make", "make"),
        ("sudo -u me make", "make"),
        ("npx jest", "jest"),
        ("find . -name '*.py' | xargs grep foo", "find"),
        ("(cd sub && make)", "make"),
        ("echo hi", "echo"),
        ("sleep 5", "sleep"),
        ("", ""),
        ("   ", ""),
        ("# just a comment", ""),
        ("true", "true"),
        ("if [ -f a.txt ]; then cat a.txt; fi", "cat"),
        ("for f in *.py; do wc -l $f; done", "wc"),
    ],
)
def test_program(command, program):
    assert parse(command).program == program


def test_quoted_operators_are_words():
    assert parse("grep 'a|b' x.txt").files == ("x.txt",)
    assert parse("grep 'a|b' x.txt").key == "grep a|b x.txt"
    assert parse("echo 'a; rm -rf /' && cat x.txt").key == "read x.txt"
    assert parse("python -c 'import os; print(1)' && cat b.txt").files == ("b.txt",)


def test_heredoc_body_is_not_a_command():
    command = parse("cat > a.py << 'EOF'\nimport os\nrm -rf /\nsleep 100\nEOF\npython a.py")
    assert command.files == ("a.py",)
    assert (command.program, command.kind, command.paced, command.key) == ("python", "run", False, "python a.py")


# --- command_of ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"command": "cat a.txt"}, "cat a.txt"),
        ({"cmd": "ls"}, "ls"),
        ({"script": "make"}, "make"),
        ({"command": ["bash", "-lc", "cat a.txt"]}, "cat a.txt"),
        (["bash", "-lc", "cat a.txt"], "cat a.txt"),
        (["/bin/sh", "-c", "ls"], "ls"),
        (["ls", "-la", "a b"], "ls -la 'a b'"),
        ({"command": "", "cmd": "ls"}, "ls"),
        ({"command": "  "}, None),
        ({"path": "a.txt"}, None),
        ({"command": 3}, None),
        ({"command": ["ls", 3]}, None),
        ("cat a.txt", None),
        (None, None),
        ([], None),
    ],
)
def test_command_of(value, expected):
    assert command_of(value) == expected


# --- robustness ------------------------------------------------------------------------------------

ODD = [
    "",
    " ",
    "\n\n",
    ";",
    "&&",
    "||",
    "|",
    "| cat",
    "&& cat a",
    ">",
    "> a",
    "<",
    "<<",
    "<<EOF",
    "'",
    '"',
    "`",
    "\\",
    "$(",
    "$((1+2))",
    "${",
    "((",
    "))",
    "{",
    "}",
    "cat 'a",
    'cat "a',
    "cat `a",
    "cat a\\",
    "echo $'\\x41'",
    "a" * 100_000,
    "cat " + "a/" * 20_000,
    "ls " + "-" * 5000,
    "x | " * 2000,
    "cd .. && " * 1000,
    "sleep 1;" * 1000,
    "bash -c " * 200 + "ls",
    'bash -c \'bash -c "bash -c \\"bash -c ls\\""\'',
    "python -m",
    "python -c",
    "sed -n",
    "sed -e",
    "awk",
    "grep",
    "grep -e",
    "git",
    "git -C",
    "timeout",
    "env",
    "xargs",
    "nohup",
    "cd",
    "cd -",
    "sleep",
    "sleep abc",
    "cat ÿñíçødé.txt",
    "cat 文件.txt",
    "echo 🙂 > 🙂.txt",
    "\x00\x01\x02",
    "cat a\x00b",
    "2>&1",
    "2>",
    ">&",
    "cat <<<",
    "cat <<< 'hi'",
    "ls (",
    "ls )",
    "(",
    ")",
    "#",
    "cat a # b 'c",
    "for",
    "do done",
    "while",
    "if then fi",
    "[ ]",
    "[",
    "-",
    "--",
    "- -",
    "find -exec",
    "find . -exec",
    "curl",
    "wget -O",
    "tail -n",
    "head -c",
    "nl -b",
    "jq",
    "bat -r",
    "cat\tx.txt",
    "cat\r\nx.txt",
]


@pytest.mark.parametrize("text", ODD, ids=range(len(ODD)))
def test_any_text_gives_a_command(text):
    command = parse(text)
    assert isinstance(command, Command)
    assert command.kind in ("read", "wait", "run")
    assert len(command.key) <= 300
    assert all(isinstance(f, str) and f for f in command.files)


def test_only_the_opening_is_parsed():
    long = "cat a.txt && " + "x" * (2 * MAX_CHARS) + " && cat b.txt"
    assert parse(long).files[0] == "a.txt"
    assert "b.txt" not in parse(long).files


def test_non_strings_give_a_command():
    for value in (None, 3, b"cat a", ["cat", "a"]):
        assert parse(value).program == ""  # type: ignore[arg-type]


def test_commands_are_immutable_and_cached():
    command = parse("cat a.txt")
    with pytest.raises(AttributeError):
        command.key = "x"  # type: ignore[misc]
    assert parse("cat a.txt") is command
