"""The sandbox conformance suite: every behaviour a backend must give the sandbox layer, shipped with
the package so that any backend, a third party's included, proves itself with the installed package
alone::

    pip install 'intercode-agents[conformance]' my-backend-package
    intercode-agents images copy bash --to 'mytype:ADDRESS'     # the image the suite runs
    INTERCODE_CONFORMANCE_BACKENDS='mytype:ADDRESS' pytest --pyargs intercode_agents.sandbox.conformance

The backends under test are ``INTERCODE_CONFORMANCE_BACKENDS``, a comma-separated list of ``local``
(the machine's Docker engine, the default) and engine strings; each test runs once per backend.
Sessions, exit codes, timeouts, output caps and odd bytes, files, change lists, path states,
pristine reuse, pools, the launcher, clean-up and typed errors are all covered. On the local engine,
as root, the suite also checks the fast paths against the slow ones.

Importing this package needs nothing beyond the package; running the suite needs pytest and
pytest-asyncio (the ``conformance`` extra). The fixtures are in :mod:`.fixtures`.
"""
