#!/usr/bin/env bash
# One entry point that sets up a fresh machine and then runs a job:
#
#   scripts/run.sh setup   # apt packages, the Docker engine, the Python environment, the host's
#                          # kernel budgets, images, model weights
#   scripts/run.sh demo    # setup, then the main job: the local model on a few Bash and SQL tasks
#   scripts/run.sh tests   # setup, then the test suite
#   scripts/run.sh venv    # only the Python environment: .venv (or $VENV) with the package installed
#
# Every step is idempotent and prints how long it took. Needs root for apt-get and dockerd
# (skipped when the tools are already there and an engine already answers).
#
# The package goes into a virtual environment, never into the system Python (Debian and Ubuntu
# refuse that, PEP 668): the active one ($VIRTUAL_ENV) if there is one, else the project's .venv
# (or $VENV), created with $PYTHON (python3). Activate it afterwards with `source .venv/bin/activate`.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
APT_PACKAGES=(docker.io debootstrap chromium python3-venv podman catatonit xfsprogs curl)
T0=$(date +%s)

phase() { PHASE_NAME=$1; PHASE_START=$(date +%s); echo "==> $1"; }
done_phase() { echo "    $PHASE_NAME: $(( $(date +%s) - PHASE_START )) s (total $(( $(date +%s) - T0 )) s)"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

# Debian and Ubuntu split `venv` from Python: without python3-venv, `python3 -m venv` has no pip.
needs_venv_package() { ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; }

install_apt() {
  phase "system packages (${APT_PACKAGES[*]})"
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v chromium >/dev/null || missing+=(chromium)
  [ -n "${VIRTUAL_ENV:-}" ] || ! needs_venv_package || missing+=(python3-venv)
  command -v podman >/dev/null || missing+=(podman)       # the conformance suite's Podman backend
  # Podman's init for containers made with an init (ours all are): Debian's podman only recommends
  # it (catatonit | tini | dumb-init), and docker.io already brings tini, so apt would skip it.
  [ -x /usr/libexec/podman/catatonit ] || command -v catatonit >/dev/null || missing+=(catatonit)
  command -v mkfs.xfs >/dev/null || missing+=(xfsprogs)   # the second dockerd's optional xfs data root
  command -v curl >/dev/null || missing+=(curl)           # tests/engines.py pings the extra engines
  if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}"
  fi
  done_phase
}

start_engine() {
  phase "Docker engine"
  if ! docker info >/dev/null 2>&1; then
    echo "    no engine answers: starting dockerd (no bridge network, no iptables)"
    as_root sh -c 'nohup dockerd --bridge=none --iptables=false --ip6tables=false >/var/log/intercode-agents-dockerd.log 2>&1 &'
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/intercode-agents-dockerd.log"; exit 1; }
  fi
  echo "    engine $(docker version --format '{{.Server.Version}}')"
  done_phase
}

python_env() {
  phase "Python environment"
  if [ -n "${VIRTUAL_ENV:-}" ]; then
    echo "    using the active environment $VIRTUAL_ENV"
  else
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
      || { echo "intercode-agents needs Python 3.11 or newer; $PYTHON is $("$PYTHON" -V 2>&1)"; exit 1; }
    if [ ! -x "$VENV/bin/python" ]; then
      if needs_venv_package; then apt_install python3-venv; fi
      "$PYTHON" -m venv "$VENV"
      echo "    created $VENV (activate it with: source $VENV/bin/activate)"
    fi
    VIRTUAL_ENV=$(cd "$VENV" && pwd)
  fi
  PY="$VIRTUAL_ENV/bin/python"
  export VIRTUAL_ENV PATH="$VIRTUAL_ENV/bin:$PATH"  # intercode-agents and python now come from it
  done_phase
}

install_package() {
  phase "Python package (editable, with the test and local-model extras, into $VIRTUAL_ENV)"
  # (pip's own status decides: the filter only drops a warning; and the import is checked away from
  # the checkout, whose source folder would otherwise be imported whether pip installed it or not)
  # torch (the trl extra's) as its CPU build: PyPI's default build brings gigabytes of CUDA libraries.
  # Where PyTorch's index cannot be reached (registries only), the pinned release is asked of the
  # configured index instead (machines of this project's CI keep its CPU wheel on disk for pip).
  if ! "$PY" -c 'import torch' 2>/dev/null; then
    "$PY" -m pip install -q --disable-pip-version-check --timeout 15 --retries 1 torch==2.13.0 \
      --index-url https://download.pytorch.org/whl/cpu >/dev/null 2>&1 \
      || "$PY" -m pip install -q --disable-pip-version-check torch==2.13.0 2>&1 \
      | { grep -v "Running pip as the 'root' user" || true; }
  fi
  "$PY" -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 \
    | { grep -v "Running pip as the 'root' user" || true; }
  (cd / && "$PY" -c "import intercode_agents, pytest, langchain, mcp, ray, inspect_ai, openenv, skyrl_gym, trl")
  done_phase
}

locate_data() {
  # In a workplace with a shared read-only copy beside the checkout, use it; otherwise the loader
  # uses its cache or downloads the pinned InterCode files (verified by sha256).
  if [ -z "${INTERCODE_DATA:-}" ] && [ -d ../shared/intercode-data/data ]; then
    INTERCODE_DATA=$(cd ../shared/intercode-data && pwd)
    export INTERCODE_DATA
  fi
  echo "==> task data: ${INTERCODE_DATA:-cache or pinned download}"
}

host_budgets() {
  # The kernel counts inotify instances, epoll watches and pipe pages per host user (every sandbox's
  # root is the same user), and open files, AIO events and PIDs per host: raised out of reach, each
  # sandbox's own limits bound it (intercode_agents/sandbox/host_limits.py says which and why).
  phase "engine host's kernel budgets"
  as_root "$PY" -m intercode_agents.sandbox.host_limits --raise | sed 's/^/    /'
  done_phase
}

build_images() {
  phase "sandbox images"
  intercode-agents images build
  done_phase
}

fetch_model() {
  phase "local model weights (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)"
  intercode-agents models fetch
  done_phase
}

setup() {
  install_apt; start_engine; python_env; install_package; host_budgets; locate_data; build_images; fetch_model
}

# The demo's tasks: ones the local 1.5B model solves at its first try (a grep count, a file count, a
# one-table SQL query whose columns the question names) and ones it fails honestly (it guesses the
# spelling "Red" in a CSV it has not read; it guesses a column name the question does not give).
# README.md says the same. Try Again scores each action, so a solved task ends after one model call.
DEMO_BASH=bash/mini/0,bash/mini/3,bash/mini/2
DEMO_SQL=sql/mini/0,sql/mini/1

demo() {
  rm -rf runs/demo  # a fresh demo each time (a real run would use --resume instead)
  for env in bash sql; do
    tasks=DEMO_${env^^}
    intercode-agents eval "$env" --tasks "${!tasks}" --strategy try_again --turns 2 --model local \
      --concurrency 2 --out "runs/demo/$env"
  done
  intercode-agents report runs/demo/bash runs/demo/sql -o runs/demo/report.html
  echo "open the report with: intercode-agents view runs/demo"
}

case "${1:-}" in
  setup) setup ;;
  demo)
    setup
    phase "main job: the local model on 3 Bash and 2 SQL tasks (Try Again, 2 turns)"
    demo
    done_phase
    ;;
  tests)
    setup
    phase "tests (the full suite on the local Docker engine)"
    set +e
    "$PY" -m pytest -q -p no:cacheprovider --durations=30 "${@:2}"  # (the slowest tests, for the time budget)
    status=$?
    set -e
    intercode-agents cleanup >/dev/null 2>&1 || true
    done_phase
    if [ $# -le 1 ] && [ "${INTERCODE_CI_OTHER_ENGINES:-1}" = 1 ]; then
      # The conformance suite (shipped in intercode_agents/sandbox/conformance; tests/conformance
      # runs it here) on a second dockerd (own data root, exec root, pidfile and socket; no bridge,
      # no iptables) and on rootful Podman, both started and stopped by tests/conformance's fixture
      # (tests/engines.py); the main engine is never touched. All of it but the timeout escapes'
      # "from the host" variants (without fast paths they repeat the "from inside" ones) and the
      # background-writers soak: 102 of 114 tests on the two engines.
      phase "conformance suite on a second dockerd and on Podman"
      set +e
      INTERCODE_CONFORMANCE_BACKENDS=dockerd,podman "$PY" -m pytest -q -p no:cacheprovider \
        tests/conformance -k "not (ends_everything and host) and not background_writers"
      other=$?
      set -e
      [ $status -ne 0 ] || status=$other
      done_phase
    fi
    # pytest's exit 5 (no tests collected) is a failure too.
    exit $status
    ;;
  venv) python_env; install_package; echo "activate it with: source ${VIRTUAL_ENV}/bin/activate" ;;
  *) echo "usage: scripts/run.sh setup|demo|tests|venv [pytest args]"; exit 2 ;;
esac
