"""psagent runtime: configuration, CLI, store, request loop, prove/verify/submit pipeline, service, metrics.

Imports point one way: ``agent`` may import ``market``, ``porep`` and ``gpu``; nothing imports ``agent``.
"""

__version__ = "0.1.0"
