#!/usr/bin/env bash
# One entry point that sets up a fresh machine and then runs a job:
#
#   scripts/run.sh setup   # apt packages, the Docker engine, the Python package, images, model weights
#   scripts/run.sh demo    # setup, then the main job: an eval of the local model on Bash test tasks
#   scripts/run.sh tests   # setup, then the test suite
#
# Every step is idempotent and prints how long it took. Needs root for apt-get and dockerd
# (skipped when the tools are already there and an engine already answers).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
APT_PACKAGES=(docker.io debootstrap chromium podman xfsprogs curl)
T0=$(date +%s)

phase() { PHASE_NAME=$1; PHASE_START=$(date +%s); echo "==> $1"; }
done_phase() { echo "    $PHASE_NAME: $(( $(date +%s) - PHASE_START )) s (total $(( $(date +%s) - T0 )) s)"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_apt() {
  phase "system packages (${APT_PACKAGES[*]})"
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v chromium >/dev/null || missing+=(chromium)
  command -v podman >/dev/null || missing+=(podman)       # the conformance suite's Podman backend
  command -v mkfs.xfs >/dev/null || missing+=(xfsprogs)   # the second dockerd's optional xfs data root
  command -v curl >/dev/null || missing+=(curl)           # tests/engines.py pings the extra engines
  if [ ${#missing[@]} -gt 0 ]; then
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
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

install_package() {
  phase "Python package (editable, with the test and local-model extras)"
  "$PYTHON" -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "Running pip as the 'root' user" || true
  "$PYTHON" -c "import intercode_agents" 
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

setup() { install_apt; start_engine; install_package; locate_data; build_images; fetch_model; }

case "${1:-}" in
  setup) setup ;;
  demo)
    setup
    phase "main job: eval bash test tasks with the local model"
    rm -rf runs/demo  # a fresh demo each time (a real run would use --resume instead)
    intercode-agents eval bash --tasks test --limit 4 --strategy try_again --turns 3 --model local \
      --concurrency 2 --out runs/demo   # prints the summary and writes runs/demo/report.html
    done_phase
    ;;
  tests)
    setup
    phase "tests (the full suite on the local Docker engine)"
    set +e
    "$PYTHON" -m pytest -q -p no:cacheprovider "${@:2}"
    status=$?
    set -e
    intercode-agents cleanup >/dev/null 2>&1 || true
    done_phase
    if [ $# -le 1 ] && [ "${INTERCODE_CI_OTHER_ENGINES:-1}" = 1 ]; then
      # The conformance suite on a second dockerd (own data root, exec root, pidfile and socket; no
      # bridge, no iptables) and on rootful Podman, both started and stopped by the suite's fixture
      # (tests/engines.py); the main engine is never touched. All of it but the timeout escapes'
      # "from the host" variants (without fast paths they repeat the "from inside" ones) and the
      # background-writers soak: 97 of 109 tests on the two engines.
      phase "conformance suite on a second dockerd and on Podman"
      set +e
      INTERCODE_CONFORMANCE_BACKENDS=dockerd,podman "$PYTHON" -m pytest -q -p no:cacheprovider \
        tests/conformance -k "not (ends_everything and host) and not background_writers"
      other=$?
      set -e
      [ $status -ne 0 ] || status=$other
      done_phase
    fi
    # pytest's exit 5 (no tests collected) is a failure too.
    exit $status
    ;;
  *) echo "usage: scripts/run.sh setup|demo|tests [pytest args]"; exit 2 ;;
esac
