"""Every shell command in README.md works when pasted into a shell.

The commands are those of README's ```sh, ```bash and ```console blocks
(console: the lines after `$ `), lines joined at a trailing backslash. Each
one parses (`bash -n`), and then is checked by what it is:

- `make T...`: heavy (`make test` is CI's own command, `make demo` trains
  for a minute), so each T must be a target of the Makefile and `make -n
  T...` must plan it;
- `pip install ...`: run for real, from the checkout, into a throwaway venv
  with `--no-deps --no-index`, against the wheel `make wheel` left in
  dist/ (skipped when there is none: `make test-python` builds it first);
- `... -m rustfx.corpus ...`: starts Ray, so its flags are checked against
  the program's own `--help` and its `--input` must exist;
- anything else: run for real from the checkout, exit status 0. A program
  or model the Makefile builds (ARTIFACTS) skips the command, naming the
  target, when it is missing; any other relative path must exist. A
  console block's output must name the same paths, in order.

`test_a_broken_readme_fails` checks that the checks can fail.
"""

import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
SHELL_BLOCKS = ("sh", "bash", "console", "shell")

# What the Makefile builds that README's commands name, and the target that
# builds it: a command naming a missing one is skipped, not failed.
ARTIFACTS = {
    ".venv/bin/python": "setup",
    "python/rustfx/_rustfx_ops.so": "build",
    "target/release/rustfx-features": "build",
    "target/release/rustfx-predict": "predict",
    "target/sensor/rustfx-sensor": "sensor",
    "target/demo-model": "demo",
    "target/demo-sensor": "demo",
}


def readme_commands(text):
    """(command, expected output lines or None) for every command of the
    shell blocks of a README's text, in order."""
    commands = []
    block = None  # the info string of the fenced block we are in
    pending = ""
    for line in text.splitlines():
        fence = re.match(r"^\s*```\s*(\S*)", line)
        if fence:
            block = None if block is not None else fence.group(1)
            pending = ""
            continue
        if block not in SHELL_BLOCKS:
            continue
        if block == "console":
            if line.startswith("$ "):
                commands.append([line[2:], []])
            elif commands and commands[-1][1] is not None and line.strip():
                commands[-1][1].append(line)
            continue
        line = pending + line
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append([line.strip(), None])
    return [(c, out) for c, out in commands]


def words(command):
    """The command's words as the shell splits them, comments dropped."""
    return shlex.split(command, comments=True)


def makefile_targets():
    with open(os.path.join(ROOT, "Makefile")) as f:
        return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", f.read(), re.M))


def check_parses(command):
    result = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
    assert result.returncode == 0, f"bash -n fails on {command!r}: {result.stderr}"


def check_make(argv):
    targets = [a for a in argv[1:] if not a.startswith("-") and "=" not in a]
    assert targets, f"{argv}: which target?"
    missing = sorted(set(targets) - makefile_targets())
    assert not missing, (f"README runs `make {' '.join(targets)}`: "
                         f"no target {missing} in the Makefile")
    # Not the flags of a `make test-python` this test may run under.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                            text=True)
    assert result.returncode == 0, f"make -n {' '.join(argv[1:])}: {result.stderr[-2000:]}"


def the_wheel():
    wheels = glob.glob(os.path.join(ROOT, "dist", "rustfx-*.whl"))
    if not wheels:
        pytest.skip("no wheel in dist/ (make wheel builds it)")
    return wheels


def check_pip(command, venv):
    """Runs the pip command as pasted, with `pip` the throwaway venv's and
    no index (--no-deps: the extras' TensorFlow is not installed)."""
    the_wheel()
    script = ('pip() { command pip "$@" --no-deps --no-index --quiet '
              '--disable-pip-version-check; }\n' + command)
    env = dict(os.environ, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"],
               VIRTUAL_ENV=venv)
    result = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"{command!r} fails:\n{result.stdout}{result.stderr}"
    shown = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "show", "rustfx"],
                           capture_output=True, text=True)
    assert shown.returncode == 0, f"{command!r} installed no rustfx"


def missing_artifacts(argv):
    """Skips for a missing artifact of the Makefile's; fails for any other
    relative path that does not exist."""
    for word in argv:
        if "/" not in word or word.startswith("-") or any(c in word for c in "*?=$"):
            continue
        path = word.split("=", 1)[-1]
        full = path if os.path.isabs(path) else os.path.join(ROOT, path)
        if os.path.exists(full):
            continue
        if path in ARTIFACTS:
            pytest.skip(f"{path} is missing (make {ARTIFACTS[path]} builds it)")
        if os.path.isabs(path):
            pytest.skip(f"{path} is not on this machine")
        raise AssertionError(f"README names {path}, which is not in the checkout and which "
                             "no make target in ARTIFACTS builds")


def check_corpus(argv):
    missing_artifacts(argv[:argv.index("-m")])
    program = argv[:argv.index("-m") + 2]
    result = subprocess.run([*program, "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, f"{' '.join(program)} --help: {result.stderr[-2000:]}"
    for flag in (a.split("=", 1)[0] for a in argv if a.startswith("--")):
        assert flag in result.stdout, f"{' '.join(program)} has no {flag}"
    given = dict(zip(argv, argv[1:]))
    assert os.path.exists(os.path.join(ROOT, given["--input"])), given["--input"]


def check_runs(command, argv, expected):
    missing_artifacts(argv)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, (f"{command!r} exits {result.returncode}:\n"
                                    f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    if expected:
        got = [line.split("\t")[0] for line in result.stdout.splitlines() if line.strip()]
        want = [line.split("\t")[0] for line in expected]
        assert got == want, f"{command!r} printed lines for {got}, README shows {want}"


def check(command, expected, venv_factory):
    """Every check of one README command (see the module docstring)."""
    check_parses(command)
    argv = words(command)
    if argv[0] == "make":
        check_make(argv)
    elif argv[:2] == ["pip", "install"]:
        check_pip(command, venv_factory())
    elif "-m" in argv and argv[argv.index("-m") + 1] == "rustfx.corpus":
        check_corpus(argv)
    else:
        check_runs(command, argv, expected)


@pytest.fixture(scope="module")
def venv_factory(tmp_path_factory):
    """A throwaway venv, made the first time a pip command needs one."""
    made = []

    def make():
        if not made:
            path = str(tmp_path_factory.mktemp("readme-venv"))
            subprocess.run([sys.executable, "-m", "venv", path], check=True)
            made.append(path)
        return made[0]
    return make


with open(README) as _f:
    COMMANDS = readme_commands(_f.read())


def test_readme_has_the_commands_it_promises():
    runs = [c for c, _ in COMMANDS]
    assert "make demo" in " ".join(runs) and "make test" in " ".join(runs)
    assert any(c.startswith("pip install") for c in runs)
    assert len(runs) >= 8, runs


@pytest.mark.parametrize("command,expected", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_readme_command(command, expected, venv_factory):
    check(command, expected, venv_factory)


BROKEN = [
    # Quoted, the glob reaches pip as it is: not a wheel file name.
    'pip install "dist/rustfx-*.whl[tensorflow-cpu]"',
    "make no-such-target",
    'echo "unclosed',
    "target/release/rustfx-features no_such_extractor Makefile",
    "target/relase/rustfx-features --list",
    ".venv/bin/python -m rustfx.corpus --spec ember2024 --input tests/golden/pe --no-such-flag x",
]


@pytest.mark.parametrize("broken", BROKEN)
def test_a_broken_readme_fails(broken, tmp_path, venv_factory):
    """A README with one broken command fails its check (or skips, when
    what would run it is missing)."""
    readme = tmp_path / "README.md"
    with open(README) as f:
        readme.write_text(f.read() + f"\n```sh\n{broken}\n```\n")
    commands = readme_commands(readme.read_text())
    assert commands[-1] == (broken, None)
    with pytest.raises(AssertionError):
        check(*commands[-1], venv_factory)
