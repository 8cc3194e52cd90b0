"""The cuzk server: psagent as Curio's proving engine, the ``cuzk.v1.ProvingEngine`` gRPC API.

Operators know it by Curio's word: ``psagent engine serve``, the ``[engine]`` section, the ``engine`` extra,
the ``psagent-engine`` unit and the ``psagent_engine_*`` series keep that name. In the code it is the cuzk
server; "engine" means the Groth16 engine only (``agent.proving.engine``, ``gpu``).

  proving.proto   the wire contract, written from docs/cuzk.md §4 (names, field numbers, enum values)
  proving_pb2*    the stubs grpcio-tools generates from it (committed; ``make proto`` regenerates them)
  request         a SubmitProofRequest as plain values, its payload digest, and the Work it asks for
  scheduler       cuzk's priorities: the queue in priority order, a PoSt borrowing a busy device at the
                  running job's next partition boundary, the per-device turns around each partition's proof
  jobs            job identity (request id + payload digest), admission, cancellation, answers
  metrics         GetMetrics' Prometheus registry
  server          the service, the bound server (Unix socket or TCP) and its life under systemd

The server proves through the agent's own proving wing (``agent.proving``): the same Work, admission,
pipeline and pairing check as the market agent. Import from the submodules; only ``server`` and the
generated stubs need grpcio (the ``engine`` extra).
"""
