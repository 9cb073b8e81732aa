"""The trainer tests share the client tests' helpers and the e2e stack fixture (agentrt emulate + agentrt serve)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

from test_agentrt_e2e import stack  # noqa: E402,F401 - the fixture
