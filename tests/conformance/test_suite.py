"""The shipped conformance suite, run here on the backends of ``INTERCODE_CONFORMANCE_BACKENDS``."""

from intercode_agents.sandbox.conformance.test_launcher import *  # noqa: F403
from intercode_agents.sandbox.conformance.test_lifecycle import *  # noqa: F403
from intercode_agents.sandbox.conformance.test_overlay import *  # noqa: F403
from intercode_agents.sandbox.conformance.test_path_states import *  # noqa: F403
from intercode_agents.sandbox.conformance.test_pool import *  # noqa: F403
from intercode_agents.sandbox.conformance.test_pristine import *  # noqa: F403
from intercode_agents.sandbox.conformance.test_session import *  # noqa: F403
from intercode_agents.sandbox.conformance.test_timeouts import *  # noqa: F403
